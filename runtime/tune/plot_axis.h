// Axis ranges and tick values for the learning-curve plot (curve_plot.h): "nice" numbers
// (1, 2, 5 times a power of ten) that cover the data, and their labels.
#pragma once

#include <string>
#include <vector>

namespace cumulus::tune {

struct AxisTicks {
  double lo = 0, hi = 1;            // the axis range; lo < hi always
  std::vector<double> values;       // tick positions inside [lo, hi], increasing
  std::vector<std::string> labels;  // one per value, with as many decimals as the step needs
};

// A linear axis covering [lo, hi] with about `target` ticks (Heckbert's nice numbers: the range
// is widened to whole multiples of the step). `integer`: the step is at least 1 (iterations).
// A zero-width range (a constant metric) is widened around the value first; non-finite input
// gives the range [0, 1].
AxisTicks LinearTicks(double lo, double hi, int target, bool integer);

// A log10 axis covering [lo, hi] (REQUIRES: 0 < lo), padded by 3% of a decade on each side
// (a range under 0.3 decades becomes the decade around its middle), with
// ticks at 1, 2, 5 times powers of ten when it spans at most three decades, else at powers of ten.
AxisTicks LogTicks(double lo, double hi);

}  // namespace cumulus::tune
