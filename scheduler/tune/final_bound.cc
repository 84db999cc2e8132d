#include "scheduler/tune/final_bound.h"

#include <algorithm>
#include <cmath>

namespace cumulus::tune {

double PrefixRise(const CurvePoints& points, int64_t t) {
  if (t < 2) return 0;
  auto it = points.upper_bound(t / 2);
  if (it == points.begin()) return 0;
  --it;
  return points.at(t) - it->second;
}

std::optional<FinalBoundFit> FitFinalBound(const std::vector<const CurvePoints*>& finished,
                                           int64_t t, size_t min_samples) {
  struct Row {
    double level, rise, gain;
  };
  std::vector<Row> rows;
  for (const CurvePoints* c : finished) {
    auto at = c->find(t);
    if (at == c->end()) continue;
    rows.push_back(Row{at->second, PrefixRise(*c, t), c->rbegin()->second - at->second});
  }
  if (rows.size() < std::max<size_t>(min_samples, 3)) return std::nullopt;
  FinalBoundFit f;
  f.iteration = t;
  f.samples = rows.size();
  const double n = static_cast<double>(rows.size());
  for (const Row& r : rows) {
    f.mean_level += r.level / n;
    f.mean_rise += r.rise / n;
    f.intercept += r.gain / n;
  }
  // Centred least squares on (level, rise); a feature with no spread is left out, and a ridge of
  // 1e-6 of each feature's own scale keeps collinear features solvable without biasing the fit.
  double a11 = 0, a12 = 0, a22 = 0, c1 = 0, c2 = 0;
  for (const Row& r : rows) {
    double z1 = r.level - f.mean_level, z2 = r.rise - f.mean_rise, y = r.gain - f.intercept;
    a11 += z1 * z1, a12 += z1 * z2, a22 += z2 * z2, c1 += z1 * y, c2 += z2 * y;
  }
  constexpr double kTiny = 1e-18;
  bool use1 = a11 > kTiny, use2 = a22 > kTiny;
  if (!use1) a11 = 1, a12 = 0, c1 = 0;
  if (!use2) a22 = 1, a12 = 0, c2 = 0;
  a11 *= 1 + 1e-6, a22 *= 1 + 1e-6;
  double det = a11 * a22 - a12 * a12;
  double i11 = a22 / det, i12 = -a12 / det, i22 = a11 / det;  // the inverse of the Gram matrix
  f.b_level = use1 ? i11 * c1 + i12 * c2 : 0;
  f.b_rise = use2 ? i12 * c1 + i22 * c2 : 0;
  if (!use1) i11 = 0, i12 = 0;
  if (!use2) i22 = 0, i12 = 0;
  for (const Row& r : rows) {
    double z1 = r.level - f.mean_level, z2 = r.rise - f.mean_rise;
    double predicted = f.intercept + f.b_level * z1 + f.b_rise * z2;
    double leverage = 1 / n + z1 * z1 * i11 + 2 * z1 * z2 * i12 + z2 * z2 * i22;
    double loo = (r.gain - predicted) / std::max(1 - leverage, 1e-9);
    f.margin = std::max(f.margin, loo);
  }
  return f;
}

double FinalUpperBound(const FinalBoundFit& fit, const CurvePoints& points) {
  double level = points.at(fit.iteration);
  double rise = PrefixRise(points, fit.iteration);
  return level + fit.intercept + fit.b_level * (level - fit.mean_level) +
         fit.b_rise * (rise - fit.mean_rise) + fit.margin;
}

}  // namespace cumulus::tune
