// Ctrl-C as a request: see interrupt.h.
#include "runtime/cli/interrupt.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

namespace cumulus::cli {
namespace {

volatile sig_atomic_t interrupted = 0;
// The wake pipe: the handler writes a byte, whichever thread the signal was delivered to, so a
// thread waiting in poll on the read end wakes even when another thread took the signal.
int wake[2] = {-1, -1};

void OnSignal(int) {
  int saved = errno;
  interrupted = 1;
  if (wake[1] >= 0) {
    char b = 1;
    [[maybe_unused]] ssize_t n = write(wake[1], &b, 1);  // a full pipe already wakes the reader
  }
  errno = saved;
}

void OpenWakePipe() {
  if (wake[0] >= 0) return;
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) wake[0] = wake[1] = -1;
}

}  // namespace

void CatchInterrupts(bool terminate_too) {
  OpenWakePipe();
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

void ClearInterrupt() {
  interrupted = 0;
  if (wake[0] < 0) return;
  char buf[64];
  while (read(wake[0], buf, sizeof(buf)) > 0) {
  }
}

int InterruptWakeFd() { return wake[0]; }

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
