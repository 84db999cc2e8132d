// Clock: the one seam for time. Components take a Clock& so tests can move time by hand.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace cumulus {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::time_point<std::chrono::steady_clock, Duration>;

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time, for deadlines and intervals. Thread-safe.
  virtual TimePoint Now() const = 0;
  // Wall-clock time in microseconds since the Unix epoch, for records people read. Thread-safe.
  virtual int64_t WallMicros() const = 0;
};

// The real clock (steady_clock and system_clock).
class SystemClock final : public Clock {
 public:
  static SystemClock& Get();
  TimePoint Now() const override;
  int64_t WallMicros() const override;
};

// A clock that moves only when told to. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t wall_micros_at_zero = 1'700'000'000'000'000)
      : wall0_(wall_micros_at_zero) {}
  TimePoint Now() const override;
  int64_t WallMicros() const override;
  void AdvanceTime(Duration d);

 private:
  mutable std::mutex mu_;
  Duration elapsed_{0};
  int64_t wall0_;
};

}  // namespace cumulus
