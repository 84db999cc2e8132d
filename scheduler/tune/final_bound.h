// An upper bound on a trial's final score from the prefix of its learning curve, learnt from the
// curves of finished trials: the `bound` scheduler's reach (see curve_bound.cc).
//
// Model (after Baker et al. 2018, "Accelerating neural architecture search using performance
// prediction": the final value regressed on the prefix's level and its differences): for the
// iteration t at which a trial is judged, the gain from t to the end is regressed, over the
// finished trials that reported at t, on the value at t and the rise over the second half of the
// prefix (value at t minus value at t/2). The margin is the largest leave-one-out residual of
// that fit (actual gain above the predicted one): the split-conformal bound at level 1/(n+1)
// for n finished trials, so it needs no tuned constant and tightens as trials finish. A trial
// whose curve has the shape of the finished ones gets a bound close to its own future; one that
// no finished trial resembles still gets the largest surprise any of them held.
//
// Scores are "higher is better" (the caller negates a min metric). Pure arithmetic, no state.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace cumulus::tune {

// iteration -> score, as a trial reported them.
using CurvePoints = std::map<int64_t, double>;

struct FinalBoundFit {
  int64_t iteration = 0;  // t: the prefix ends here
  size_t samples = 0;     // finished trials the fit used
  double mean_level = 0;  // centring of the features
  double mean_rise = 0;
  double intercept = 0;  // predicted gain = intercept + b_level (level - mean) + b_rise (...)
  double b_level = 0;
  double b_rise = 0;
  double margin = 0;  // the largest leave-one-out residual (>= 0)
};

// The rise feature of a prefix ending at t: value at t minus the value at the last iteration
// <= t / 2 (0 when t < 2 or no such point). REQUIRES: points has a value at t.
double PrefixRise(const CurvePoints& points, int64_t t);

// Fits the model at iteration t over `finished` (complete curves; those without a value at t are
// left out). nullopt when fewer than `min_samples` (at least 3) have one.
std::optional<FinalBoundFit> FitFinalBound(const std::vector<const CurvePoints*>& finished,
                                           int64_t t, size_t min_samples);

// The upper bound on the final score of a trial whose prefix `points` ends at fit.iteration:
// value + predicted gain + margin. REQUIRES: points has a value at fit.iteration.
double FinalUpperBound(const FinalBoundFit& fit, const CurvePoints& points);

}  // namespace cumulus::tune
