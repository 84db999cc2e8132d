// Ctrl-C as a request, not a death: a command that waits (logs --follow, submit --wait, cancel)
// polls Interrupted() and returns kInterruptedExit, so that the interactive shell, which runs
// commands in its own process, gets its prompt back. A plain `cumulus` command that never calls
// CatchInterrupts() keeps the default: Ctrl-C ends the process.
#pragma once

#include <signal.h>

#include <chrono>

namespace cumulus::cli {

// The exit status of a command stopped by Ctrl-C (128 + SIGINT, as a shell reports it).
constexpr int kInterruptedExit = 130;

// From now on SIGINT (and SIGTERM when `terminate_too`) only sets the flag Interrupted() reads.
// System calls are not restarted: a blocking read or poll returns EINTR at once.
void CatchInterrupts(bool terminate_too);
// CatchInterrupts for a scope: the signals' previous dispositions come back when it ends (a
// command run inside the shell leaves the shell's own handling as it was).
class InterruptScope {
 public:
  explicit InterruptScope(bool terminate_too);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  struct sigaction saved_int_ {
  }, saved_term_{};
  bool terminate_too_;
};

// Whether Ctrl-C came since the last ClearInterrupt(). Async-signal-safe.
bool Interrupted();
void ClearInterrupt();
// A descriptor that turns readable when Ctrl-C comes (after CatchInterrupts; -1 before): a thread
// that waits in poll includes it, so it wakes even when the signal was delivered to another
// thread. ClearInterrupt() drains it.
int InterruptWakeFd();
// Sleeps `d`, in short steps; false if interrupted before it passed.
bool SleepUnlessInterrupted(std::chrono::milliseconds d);

}  // namespace cumulus::cli
