// The median of paired ratios with a distribution-free confidence interval (the sign test's),
// for A/B benchmarks such as bench_core --timeline-overhead.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace cumulus::bench {

struct MedianInterval {
  double median = 0;
  double low = 0, high = 0;  // the interval's ends (both 0 when there are too few samples)
  double coverage = 0;       // its exact coverage (>= 0.95 when there is one), 0 if none
  bool ok() const { return coverage > 0; }
};

// The median of `v` and the narrowest order-statistic interval [v(k), v(n+1-k)] (sorted, 1-based)
// whose coverage of the true median, 1 - 2 P(Binomial(n, 1/2) < k), is at least 95 %. It
// assumes only that the samples are independent; n < 6 is too few for any such interval.
inline MedianInterval MedianWithInterval(std::vector<double> v) {
  MedianInterval out;
  if (v.empty()) return out;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  out.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  // P(Binomial(n, 1/2) <= j) for growing j, until the tail would exceed 2.5 %.
  double tail = 0;  // P(X < k)
  size_t k = 0;
  for (size_t j = 0; j < n; ++j) {
    double p = std::exp(std::lgamma(n + 1.0) - std::lgamma(j + 1.0) - std::lgamma(n - j + 1.0) -
                        static_cast<double>(n) * std::log(2.0));
    if (tail + p > 0.025) break;
    tail += p;
    k = j + 1;
  }
  if (k == 0) return out;
  out.low = v[k - 1];
  out.high = v[n - k];
  out.coverage = 1 - 2 * tail;
  return out;
}

}  // namespace cumulus::bench
