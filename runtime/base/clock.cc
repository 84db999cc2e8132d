#include "runtime/base/clock.h"

namespace cumulus {

SystemClock& SystemClock::Get() {
  static SystemClock clock;
  return clock;
}

TimePoint SystemClock::Now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::steady_clock::now());
}

int64_t SystemClock::WallMicros() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TimePoint FakeClock::Now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return TimePoint(elapsed_);
}

int64_t FakeClock::WallMicros() const {
  std::lock_guard<std::mutex> lock(mu_);
  return wall0_ + std::chrono::duration_cast<std::chrono::microseconds>(elapsed_).count();
}

void FakeClock::AdvanceTime(Duration d) {
  std::lock_guard<std::mutex> lock(mu_);
  elapsed_ += d;
}

}  // namespace cumulus
