#include "runtime/tune/plot_axis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace cumulus::tune {
namespace {

// The nice number (1, 2, 5 or 10 times a power of ten) nearest `x` (round) or not below it.
double NiceNumber(double x, bool round) {
  double e = std::floor(std::log10(x));
  double f = x / std::pow(10, e);
  double nf;
  if (round) {
    nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
  } else {
    nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  }
  return nf * std::pow(10, e);
}

std::string Label(double v, double step) {
  char buf[48];
  double mag = std::max(std::fabs(v), std::fabs(step));
  if (mag >= 1e6 || step < 1e-4) {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  } else {
    int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  }
  std::string s = buf;
  if (s == "-0") s = "0";
  return s;
}

}  // namespace

AxisTicks LinearTicks(double lo, double hi, int target, bool integer) {
  AxisTicks t;
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (lo > hi) std::swap(lo, hi);
  if (hi - lo <= std::max(std::fabs(lo), std::fabs(hi)) * 1e-12) {
    double pad = lo == 0 ? 0.5 : std::fabs(lo) * 0.1;
    if (integer) pad = std::max(pad, 1.0);
    lo -= pad;
    hi += pad;
  }
  target = std::max(target, 2);
  double step = NiceNumber(NiceNumber(hi - lo, false) / (target - 1), true);
  if (integer) step = std::max(step, 1.0);
  t.lo = std::floor(lo / step) * step;
  t.hi = std::ceil(hi / step) * step;
  if (t.hi <= t.lo) t.hi = t.lo + step;
  for (double v = t.lo; v <= t.hi + step * 0.5; v += step) {
    double snapped = std::round(v / step) * step;
    if (snapped > t.hi + step * 1e-9) break;
    t.values.push_back(snapped);
    t.labels.push_back(Label(snapped, step));
  }
  return t;
}

AxisTicks LogTicks(double lo, double hi) {
  AxisTicks t;
  if (!(lo > 0) || !std::isfinite(lo)) lo = 1;
  if (!std::isfinite(hi) || hi < lo) hi = lo;
  double llo = std::log10(lo) - 0.03, lhi = std::log10(hi) + 0.03;
  if (lhi - llo < 0.3) {  // one point or nearly: a decade around it, so ticks exist
    double mid = (llo + lhi) / 2;
    llo = mid - 0.5, lhi = mid + 0.5;
  }
  t.lo = std::pow(10, llo);
  t.hi = std::pow(10, lhi);
  // Within about a decade every whole step is marked (1 2 3 4), within three 1-2-5, past that
  // the decades alone.
  const bool fine = lhi - llo <= 3.0, finest = lhi - llo <= 1.1;
  for (int e = static_cast<int>(std::floor(llo)); e <= static_cast<int>(std::ceil(lhi)); ++e) {
    for (double m : {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0}) {
      if (!finest && m != 1.0 && m != 2.0 && m != 5.0) continue;
      if (!fine && m != 1.0) continue;
      double v = m * std::pow(10, e);
      if (v < t.lo || v > t.hi) continue;
      t.values.push_back(v);
      t.labels.push_back(Label(v, std::pow(10, e)));
    }
  }
  return t;
}

}  // namespace cumulus::tune
