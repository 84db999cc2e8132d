// Ctrl-C as a request: see interrupt.h.
#include "runtime/cli/interrupt.h"

#include <signal.h>

#include <algorithm>
#include <thread>

namespace cumulus::cli {
namespace {

volatile sig_atomic_t interrupted = 0;

void OnSignal(int) { interrupted = 1; }

}  // namespace

void CatchInterrupts(bool terminate_too) {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking calls return EINTR
  sigaction(SIGINT, &sa, nullptr);
  if (terminate_too) sigaction(SIGTERM, &sa, nullptr);
}

InterruptScope::InterruptScope(bool terminate_too) : terminate_too_(terminate_too) {
  sigaction(SIGINT, nullptr, &saved_int_);
  sigaction(SIGTERM, nullptr, &saved_term_);
  CatchInterrupts(terminate_too);
}

InterruptScope::~InterruptScope() {
  sigaction(SIGINT, &saved_int_, nullptr);
  if (terminate_too_) sigaction(SIGTERM, &saved_term_, nullptr);
}

bool Interrupted() { return interrupted != 0; }

void ClearInterrupt() { interrupted = 0; }

bool SleepUnlessInterrupted(std::chrono::milliseconds d) {
  constexpr std::chrono::milliseconds kStep(50);
  while (d.count() > 0) {
    if (Interrupted()) return false;
    auto step = std::min(d, kStep);
    std::this_thread::sleep_for(step);
    d -= step;
  }
  return !Interrupted();
}

}  // namespace cumulus::cli
