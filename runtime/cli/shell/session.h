// One shell session: runs the lines typed (or piped) into `cumulus shell`. A line is the words of
// a `cumulus` command (the leading "cumulus" optional) or one of the shell's own: watch, top,
// help, exit, quit. Commands run in this process through the command table, except those that
// start servers of their own (run as a child process); Ctrl-C stops the one running and never
// ends the session.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "runtime/cli/command_table.h"

namespace cumulus::cli::shell {

struct SessionOptions {
  std::string address;     // --address: added to every command that takes one ("" = none)
  std::string token_file;  // --token-file: likewise
  bool read_only = false;  // --read-only: destructive commands are refused
  // On a terminal: destructive commands ask first, watch and top are live views, output may
  // hold escape codes. Off (a pipe or a file): none of that.
  bool interactive = false;
  // Someone types the lines (stdin is a terminal, even with stdout redirected to a file):
  // destructive commands ask first, on stderr when stdout is not the terminal.
  bool confirm = false;
  // How often watch and top redraw unless --interval says.
  std::chrono::milliseconds default_interval{2000};
};

class Session {
 public:
  explicit Session(SessionOptions options) : options_(std::move(options)) {}

  // Runs one line; returns its exit status (0 for an empty line or a comment).
  int Execute(const std::string& line);
  // Whether `exit` or `quit` was run.
  bool done() const { return done_; }

 private:
  int Run(const std::vector<std::string>& words, bool confirm);
  int RunCommand(const Command& command, std::vector<std::string> args);
  int Watch(std::vector<std::string> words, const std::string& builtin);
  bool Confirm(const std::vector<std::string>& words);
  void CheckHeadBefore();
  void CheckHeadAfter(int rc);
  int Help();

  SessionOptions options_;
  bool done_ = false;
  bool head_lost_ = false;  // a command failed and the head did not answer afterwards
};

// One line on stderr: "cumulus: <message>".
void Complain(const std::string& message);

}  // namespace cumulus::cli::shell
