// What Tab offers in the shell: command names (and the shell's own: watch, top, help, exit),
// subcommands (list nodes|jobs|...), each command's flags, and live ids from the cluster (nodes,
// jobs, named actors, tasks, objects, placement groups, experiments) where a command takes one.
#pragma once

#include <string>
#include <vector>

#include "runtime/cli/shell/live_names.h"

namespace cumulus::cli::shell {

// The shell's own commands (not rows of the command table).
const std::vector<std::string>& BuiltinNames();

class Completer {
 public:
  explicit Completer(LiveNames* live) : live_(live) {}

  // The words that can replace `partial`, the word being typed after `before` (the words before
  // it on the line, a leading "cumulus" included or not). Sorted, each starting with `partial`.
  std::vector<std::string> Complete(std::vector<std::string> before, const std::string& partial);

 private:
  std::vector<std::string> Ids(const std::string& kind, const std::string& partial);
  LiveNames* live_;
};

// The longest prefix the strings share.
std::string CommonPrefix(const std::vector<std::string>& words);

}  // namespace cumulus::cli::shell
