// RunProgram: runs a short-lived program (a provider's script, sbatch, squeue, scancel) to its end
// or a deadline, and returns its exit status, stdout and stderr. Thread-safe (no shared state;
// posix_spawn, so safe in a multi-threaded process).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cumulus/status.h"
#include "runtime/base/clock.h"

namespace cumulus {

struct ProgramResult {
  bool timed_out = false;  // killed at the deadline (with its whole process group)
  int exit_code = -1;      // when it exited; -1 if a signal ended it
  int signal = 0;          // the signal that ended it, 0 if it exited
  std::string out;         // stdout, at most `max_output` bytes kept
  std::string err;         // stderr, the same

  bool ok() const { return !timed_out && exit_code == 0; }
};

struct RunProgramOptions {
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) ours
  size_t max_output = 1 << 20;                           // bytes kept of stdout and of stderr
};

// Runs argv (argv[0] is looked up on PATH when it has no '/') with stdin from /dev/null, in a
// process group of its own, until it exits or `deadline` passes (then the group is SIGKILLed).
// Output written after the program exits (by children it left behind) is not waited for.
// NotFound if argv[0] cannot be found or run; a program that ran is a ProgramResult whatever
// its exit status.
Result<ProgramResult> RunProgram(const std::vector<std::string>& argv, TimePoint deadline,
                                 const RunProgramOptions& options = {});

// One line for a failed run: "WHAT failed (exit 2): LAST LINE OF STDERR", "WHAT did not finish
// within 3.0 s (killed)", "WHAT was killed by signal 9". Stderr is trimmed to its last 400
// characters, newlines shown as " | ".
Status ProgramFailure(const std::string& what, const ProgramResult& result, double timeout_s);

// argv as a shell would show it (for messages): items with spaces or quotes are quoted.
std::string ShowArgv(const std::vector<std::string>& argv);

}  // namespace cumulus
