// A live view: a command's output redrawn in place every few seconds on the terminal's alternate
// screen until a key is pressed or Ctrl-C, then the screen is given back as it was.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace cumulus::cli::shell {

struct LiveViewOptions {
  std::string title;                         // the first line, e.g. "status"
  std::chrono::milliseconds interval{2000};  // between redraws (the shell's --interval)
};

// What `fn` writes to stdout and stderr, as one string; fn's exit status in *rc.
std::string CaptureOutput(const std::function<int()>& fn, int* rc);

// REQUIRES: stdin and stdout are a terminal. Returns the exit status of the last run of `draw`.
int RunLiveView(const std::function<int()>& draw, const LiveViewOptions& options);

}  // namespace cumulus::cli::shell
