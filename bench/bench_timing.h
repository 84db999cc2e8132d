// Small timing helpers shared by bench_core and its --timeline-overhead mode.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace cumulus::bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The upper median (0 for none).
inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace cumulus::bench
