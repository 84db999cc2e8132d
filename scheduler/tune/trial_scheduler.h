// Trial schedulers: which running trials of a tuning experiment go on, stop early, or take over a
// better trial's checkpoint. Pure policy: reports in, decisions out; no I/O, and time is the
// trial's iteration count (Ray Tune's `training_iteration`), passed in with each report.
//
// A scheduler is deterministic given its options (seed included) and the sequence of calls, so
// the live tuner restores one by replaying its journal (trial added, report, trial ended) into a
// new scheduler, and the replay benchmark drives the same code with a simulated clock.
//
//   fifo         every trial runs to the end.
//   asha         asynchronous successive halving (Li et al. 2018) exactly as Ray Tune's
//                AsyncHyperBandScheduler: rungs at grace * rf^k below max_t; a trial reaching a
//                rung stops if it is below the rung's (1 - 1/rf) quantile (linear interpolation)
//                of the trials recorded there before it. Defaults: grace 1, rf 4, 1 bracket.
//   hyperband    the same with every bracket (asynchronous HyperBand), trials spread over them.
//   median       median stopping (Golovin et al. 2017, Ray's MedianStoppingRule): after the grace
//                period, stop a trial whose best result is below the median of the other trials'
//                running means up to the same iteration (at least min_samples others).
//   pbt          population-based training (Jaderberg et al. 2017): every `interval` iterations a
//                trial in the bottom quantile exploits a random top-quantile trial (loads its
//                checkpoint) and explores (perturbs by 0.8/1.2, shifts a choice, or resamples).
//   bound        ASHA's rungs, but a trial below a rung's top 1/rf pauses
//                instead of stopping; it stops only when the largest improvement that any
//                finished trial made from the same iteration on would not lift it to the best
//                finished result; see curve_bound.cc for why.
//   budget       ours, the default: a compute budget (budget_fraction of every trial run to the
//                end): every trial runs a minimum prefix, promotion-based successive halving
//                while new trials arrive, then the budget left continues the paused trials
//                nearest the leaders (the smallest share of their rung ahead of them), rung by
//                rung; see budget_promotion.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cumulus/status.h"
#include "cumulus/tune_space.h"
#include "scheduler/tune/searcher.h"

namespace cumulus::tune {

enum class Mode { kMax, kMin };
Result<Mode> ParseMode(std::string_view text);  // "max" or "min"
std::string_view ModeName(Mode mode);

// See SchedulerOptions::budget_score.
enum class BudgetScore { kLast, kMean, kLine, kFit };
Result<BudgetScore> ParseBudgetScore(std::string_view name);  // "last", "mean", "line" or "fit"
std::string_view BudgetScoreName(BudgetScore score);

struct TrialReport {
  TrialId trial = 0;
  int64_t iteration = 0;  // 1 for the first report, then 2, 3, ...
  double metric = 0;      // as the trial reported it (finite)
};

// kPause: the trial saves a checkpoint and gives up its resources; it runs again only when
// ChooseTrialToRun names it (from that checkpoint), or ends when that says to stop it.
enum class Action { kContinue, kStop, kPause, kExploit };
std::string_view ActionName(Action a);

struct Decision {
  Action action = Action::kContinue;
  std::string reason;  // for kStop, kPause and kExploit: why, in words, for the table and journal
  TrialId exploit_from = 0;  // kExploit: the trial whose latest checkpoint to continue from
  Config new_config;         // kExploit: the config to continue with
};

// A cut-off as it stands, for plots: trials below `value` at `iteration` are stopped (or paused)
// there. The budget scheduler ranking by a score other than the value (budget_score fit, the
// default) gives the quantile of the values reported there: some trials below it go on.
struct Cutoff {
  int64_t iteration = 0;
  double value = 0;  // in the metric's own units and direction
};

class TrialScheduler {
 public:
  virtual ~TrialScheduler() = default;
  virtual std::string_view name() const = 0;
  virtual void OnTrialAdd(TrialId id, const Config& config) {}
  // REQUIRES: r.metric is finite; iterations of one trial increase.
  virtual Decision OnReport(const TrialReport& r) = 0;
  // The trial no longer runs: it reached the end (`completed`), was stopped, or failed.
  virtual void OnTrialEnd(TrialId id, bool completed) {}
  // The exploit just decided for `id` was not carried out (the donor had no checkpoint to copy):
  // the trial goes on with its own config and weights, and the scheduler's view of it must too.
  virtual void OnExploitSkipped(TrialId id) {}
  virtual std::vector<Cutoff> Cutoffs() const { return {}; }

  // Resources for one trial are free. `can_start_new`: the searcher has another config. The
  // answer: a paused trial to resume (nullopt: start a new trial if there is one, else nothing),
  // and paused trials to stop now, each with its reason. Schedulers that never pause say nothing.
  struct NextRun {
    std::optional<TrialId> resume;
    std::vector<std::pair<TrialId, std::string>> stop;
  };
  virtual NextRun ChooseTrialToRun(bool can_start_new) { return {}; }
};

enum class SchedulerKind { kFifo, kAsha, kHyperBand, kMedian, kPbt, kBound, kBudget };
Result<SchedulerKind> ParseSchedulerKind(std::string_view name);
std::string_view SchedulerKindName(SchedulerKind kind);

struct SchedulerOptions {
  SchedulerKind kind = SchedulerKind::kBudget;
  Mode mode = Mode::kMax;
  int64_t max_t = 100;  // the iteration at which every trial ends (the stop condition)
  uint64_t seed = 0;

  // asha / hyperband
  int64_t grace_period = 1;
  double reduction_factor = 4;
  int64_t brackets = 1;  // asha only; hyperband uses every bracket

  // median
  int64_t median_grace_period = 1;
  int64_t median_min_samples = 3;

  // pbt
  int64_t pbt_interval = 4;
  double pbt_quantile = 0.25;
  double pbt_resample_probability = 0.25;
  SearchSpace pbt_mutations;  // the parameters PBT may change; empty: none (exploit only)

  // bound (also uses grace_period and reduction_factor for its rungs)
  // The first bound_min_finished trials run to the end (an unbiased sample of curves); nothing is
  // stopped before they have finished.
  int64_t bound_min_finished = 10;
  double bound_margin = 0;  // added to the largest improvement, in metric units
  double bound_slack = 0;   // the largest improvement is multiplied by 1 + slack
  bool bound_pause = true;  // pause below a rung's top 1/rf instead of running on
  // false: a trial's reach is its value plus the largest gain any finished trial made from the
  // same iteration. true: the prefix model's upper bound (final_bound.h): cheaper, but on curves
  // that cross or drop late it stops more eventual winners (docs/tune_replay.md has the figures).
  bool bound_predict = false;

  // budget (see budget_promotion.cc; also uses grace_period as the shortest first rung). The
  // defaults were chosen on the curve sets of docs/tune_replay.md: the prefix on every set seen by
  // 2026-12-07, the others on the development sets.
  // Iterations to spend in all, as a fraction of every trial added running to max_t.
  double budget_fraction = 0.24;
  // Every trial runs at least this fraction of max_t (rounded up) before it can be paused. 0.10
  // since 2026-12-07 (0.05 before: slow starters were paused at the first rung for good).
  double budget_min_prefix = 0.10;
  double budget_reduction_factor = 2;  // rungs at first x rf^k; a rung's top 1/rf is promoted
  // While the searcher has new configs, promotions spend at most this share of the budget so
  // far; the rest waits for the re-check, when every trial's prefix is known.
  double budget_promotion_share = 0.7;
  // What a trial is ranked by at a rung (its score there): kFit (the default), its curve
  // extrapolated to max_t (an exponential approach to an asymptote fitted to its reports, evenly
  // thinned past 256, kept between its last value and that plus its gain so far; with fewer than
  // 3 reports, its value; see Extrapolate); kLast, the value
  // it reported at the rung; kMean, the mean of its last w reports; kLine, a least-squares line
  // through its last w reports evaluated at the rung's iteration. w = max(2,
  // round(budget_score_window x the iterations since the previous rung)), fewer where the trial
  // has reported fewer. Measured in docs/tune_replay.md.
  BudgetScore budget_score = BudgetScore::kFit;
  double budget_score_window = 1;
  // false (since 2026-12-07): a trial at a rung is judged against the trials still on their way
  // there too (it goes on only if it is in the top 1/rf even when each of them beats it; else it
  // waits for them), the re-check starts once every trial has run its prefix, and the budget left
  // keeps what takes the leading trial to max_t. true: the rule before, which decided on what had
  // reported so far; with many trials running at once it went on with those that arrived first
  // and spread the budget over middle rungs (docs/tune_replay.md has both).
  bool budget_eager = false;
};

// InvalidArgument naming the option: max_t < 1, grace outside [1, max_t], rf <= 1, brackets < 1,
// pbt quantile outside (0, 0.5], an invalid non-empty mutation space, and so on.
Result<std::unique_ptr<TrialScheduler>> MakeTrialScheduler(const SchedulerOptions& options);

// numpy.percentile's default (linear interpolation); q in [0, 100]. REQUIRES: !values.empty().
double Percentile(std::vector<double> values, double q);

}  // namespace cumulus::tune
