// The shell's prompt on a terminal, on libedit (BSD licence; not GNU readline): emacs-style line
// editing, a history kept across sessions in a file, and Tab completion through a Completer.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "cumulus/status.h"
#include "runtime/cli/shell/completion.h"

namespace cumulus::cli::shell {

struct LineEditorOptions {
  std::string prompt = "cumulus> ";
  // The history file ("" = none): loaded at start, written after every line entered.
  std::string history_file;
  // The most lines the history (and its file) keeps; older ones are dropped.
  int history_size = 1000;
};

// $CUMULUS_HISTORY, else ~/.cumulus_history; "" if neither can be named.
std::string DefaultHistoryFile();

class LineEditor {
 public:
  // REQUIRES: stdin and stdout are a terminal. `completer` outlives the editor.
  static Result<std::unique_ptr<LineEditor>> Create(const LineEditorOptions& options,
                                                    Completer* completer);
  ~LineEditor();

  enum class Outcome { kLine, kInterrupted, kEnd };
  // Reads one line: kLine (in *line), kInterrupted (Ctrl-C: the line was dropped) or kEnd
  // (Ctrl-D on an empty line, or stdin closed).
  Outcome ReadLine(std::string* line);
  // Adds a line entered to the history and writes the history file (best effort).
  void Remember(const std::string& line);

 private:
  struct Impl;
  explicit LineEditor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cumulus::cli::shell
