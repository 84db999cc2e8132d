// The `budget` trial scheduler (see trial_scheduler.h). Internal: make it with MakeTrialScheduler.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "scheduler/tune/trial_scheduler.h"

namespace cumulus::tune {

Result<std::unique_ptr<TrialScheduler>> MakeBudgetPromotionScheduler(
    const SchedulerOptions& options);

// How many trials are ahead of one whose score is `score` at its own rung: of `rung_scores` (the
// scores recorded at that rung), those that beat it. A trial that is not at a rung (null) counts
// as behind every one that is: SIZE_MAX. Counted as the scheduler counts when it ranks paused
// trials nearest the leaders (the same function, over the rung's sorted scores).
size_t TrialsAhead(const std::map<TrialId, double>* rung_scores, double score);

// The same as a share of the trials recorded at the rung, in [0, 1]: what the re-check ranks
// paused trials by, so that one 20th of 200 at the first rung is nearer the leaders than one 5th
// of 10 at a deep rung. A trial not at a rung (null, or nothing recorded there) counts as behind
// every one that is: infinity.
double SharesAhead(const std::map<TrialId, double>* rung_scores, double score);

// A trial's reports for the fit, evenly thinned: the first, every stride-th one after it (at most
// kMax; the stride doubles when they would be more) and the latest. Memory and the fit's cost stay
// bounded on long runs and the points stay evenly spread over the whole curve.
class CurveHistory {
 public:
  static constexpr size_t kMax = 256;
  // A report; an iteration at or below the latest (a trial resumed from an earlier checkpoint)
  // replaces the reports from there on.
  void Add(int64_t iteration, double score);
  // (iteration, score), iterations increasing: at most kMax + 2.
  std::vector<std::pair<int64_t, double>> Reports() const;

 private:
  std::vector<std::pair<int64_t, double>> kept_;
  std::pair<int64_t, double> first_{0, 0}, latest_{0, 0};
  int64_t stride_ = 1, count_ = 0;  // count_: reports since the first
  bool reported_ = false;
};

// A curve's value at max_t extrapolated from its reports (iteration, score; higher is better,
// iterations increasing): the least-squares fit of c + d exp(-t / tau) (tau on a log grid from
// 0.3 to 3 x max_t, then refined) evaluated at max_t, kept between the last score and the last
// plus the gain since the first report (a curve is not expected to gain more from here than it
// has so far; unclamped, a fit of a few noisy points throws the asymptote far). Fewer than 3
// reports: the last score (so a rung at iteration 1 or 2 ranks by the value); none: 0.
double Extrapolate(const std::vector<std::pair<int64_t, double>>& reports, int64_t max_t);

}  // namespace cumulus::tune
