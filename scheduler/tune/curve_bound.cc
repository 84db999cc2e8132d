// The `bound` scheduler: promotion through rungs, and a stop only where the curves seen so far
// say a trial cannot reach the best finished result.
//
// Why: a quantile rule (ASHA, median) stops a trial for being behind others at the same iteration,
// so it stops late bloomers, and how often depends on the curves; on crossing curves Ray's ASHA
// loses points. What it does well is order the work: the leaders reach the end first. `bound`
// keeps the order and changes what "stop" means:
//   - Rungs at grace * rf^k, as ASHA. A trial reaching a rung goes on if it is in the rung's top
//     1/rf so far; otherwise it pauses (a checkpoint, no resources held), not stops.
//   - A paused trial is resumed when it has become one of its rung's top 1/rf (the highest rung
//     first), and, once the searcher has no new configs, by its optimistic reach (below), highest
//     first, one rung at a time. So the leaders finish early and set the bar.
//   - A trial is stopped (running or paused) only when its reach is below the best finished
//     result, where reach = its value at iteration t + (1 + slack) x the largest gain from t to
//     the end that any finished trial made + margin. Until bound_min_finished trials have finished,
//     nothing is stopped.
// What it costs: compute close to promotion ASHA's on easy curves; on curves that cross it runs
// the trials that could still win further, which is what being right costs.
#include "scheduler/tune/curve_bound.h"

#include "scheduler/tune/final_bound.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

namespace cumulus::tune {
namespace {

class CurveBound final : public TrialScheduler {
 public:
  explicit CurveBound(const SchedulerOptions& o) : o_(o) {
    for (double m = static_cast<double>(o.grace_period); m < static_cast<double>(o.max_t);
         m *= o.reduction_factor) {
      auto t = static_cast<int64_t>(std::llround(m));
      if (rungs_.empty() || t > rungs_.back().milestone) rungs_.push_back(Rung{t, {}});
    }
  }
  std::string_view name() const override { return "bound"; }

  Decision OnReport(const TrialReport& r) override {
    double score = o_.mode == Mode::kMax ? r.metric : -r.metric;
    Trial& tr = trials_[r.trial];
    if (tr.points.empty() && static_cast<int64_t>(calibration_.size()) < o_.bound_min_finished)
      calibration_.insert(r.trial);
    tr.points[r.iteration] = score;
    tr.paused = false;
    Decision d;
    Rung* rung = RungAt(r.iteration);
    if (calibration_.count(r.trial)) {  // runs to the end: an unbiased sample of curves
      if (rung != nullptr) rung->recorded[r.trial] = score;
      return d;
    }
    if (StopReason(r.iteration, score, tr.points, &d.reason)) {
      d.action = Action::kStop;
      return d;
    }
    if (rung == nullptr) return d;
    rung->recorded[r.trial] = score;
    if (!o_.bound_pause || InTop(*rung, score)) return d;
    d.action = Action::kPause;
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "waits at the rung at iteration %lld (%g, not in its top 1/%g so far)",
                  static_cast<long long>(rung->milestone), r.metric, o_.reduction_factor);
    d.reason = buf;
    tr.paused = true;
    return d;
  }

  void OnTrialEnd(TrialId id, bool completed) override {
    auto it = trials_.find(id);
    if (it == trials_.end()) return;
    it->second.paused = false;
    if (!completed || it->second.points.empty()) return;
    double final_score = it->second.points.rbegin()->second;
    finished_.push_back(id);
    best_final_ = finished_.size() == 1 ? final_score : std::max(best_final_, final_score);
  }

  NextRun ChooseTrialToRun(bool can_start_new) override {
    NextRun next;
    // Paused trials that cannot reach the best finished result end now.
    for (auto& [id, tr] : trials_) {
      if (!tr.paused) continue;
      auto last = tr.points.rbegin();
      std::string why;
      if (StopReason(last->first, last->second, tr.points, &why)) {
        tr.paused = false;
        next.stop.emplace_back(id, why);
      }
    }
    // Promotion: a paused trial now in its rung's top 1/rf, highest rung first.
    for (auto rung = rungs_.rbegin(); rung != rungs_.rend(); ++rung)
      for (const auto& [id, score] : rung->recorded) {
        Trial& tr = trials_[id];
        if (tr.paused && tr.points.rbegin()->first == rung->milestone && InTop(*rung, score)) {
          tr.paused = false;
          next.resume = id;
          return next;
        }
      }
    if (can_start_new) return next;
    // No new configs: the paused trial that could reach furthest.
    std::optional<TrialId> best;
    double best_reach = 0;
    for (const auto& [id, tr] : trials_) {
      if (!tr.paused) continue;
      auto last = tr.points.rbegin();
      double reach = Reach(last->first, last->second, &tr.points);
      if (!best || reach > best_reach) best = id, best_reach = reach;
    }
    if (best) {
      trials_[*best].paused = false;
      next.resume = best;
    }
    return next;
  }

  std::vector<Cutoff> Cutoffs() const override {
    std::vector<Cutoff> out;
    if (static_cast<int64_t>(finished_.size()) < o_.bound_min_finished) return out;
    for (int64_t t = 1; t < o_.max_t; ++t) {
      double gain = 0;
      if (LargestGain(t, &gain))
        out.push_back(
            Cutoff{t, Unscore(best_final_ - (1 + o_.bound_slack) * gain - o_.bound_margin)});
    }
    return out;
  }

 private:
  struct Trial {
    std::map<int64_t, double> points;  // iteration -> score (higher is better)
    bool paused = false;
  };
  struct Rung {
    int64_t milestone;
    std::map<TrialId, double> recorded;
  };

  double Unscore(double s) const { return o_.mode == Mode::kMax ? s : -s; }

  Rung* RungAt(int64_t t) {
    for (Rung& r : rungs_)
      if (r.milestone == t) return &r;
    return nullptr;
  }

  bool InTop(const Rung& rung, double score) const {
    std::vector<double> v;
    for (const auto& [_, x] : rung.recorded) v.push_back(x);
    return score >= Percentile(v, (1 - 1 / o_.reduction_factor) * 100);
  }

  // The optimistic final score of a trial at `score` after iteration t (+inf if nothing is known).
  // bound_predict: the prefix model's upper bound (final_bound.h), else the largest gain seen.
  double Reach(int64_t t, double score, const CurvePoints* points = nullptr) const {
    if (static_cast<int64_t>(finished_.size()) < o_.bound_min_finished) return INFINITY;
    double gain = 0;
    if (o_.bound_predict && points != nullptr && points->count(t)) {
      const FinalBoundFit* fit = FitAt(t);
      if (fit == nullptr) return INFINITY;
      gain = FinalUpperBound(*fit, *points) - points->at(t);
    } else if (!LargestGain(t, &gain)) {
      return INFINITY;
    }
    return score + (1 + o_.bound_slack) * gain + o_.bound_margin;
  }

  // The fit at iteration t over the finished trials, refitted when more have finished.
  const FinalBoundFit* FitAt(int64_t t) const {
    auto& [count, fit] = fits_[t];
    if (count != finished_.size() || count == 0) {
      std::vector<const CurvePoints*> curves;
      for (TrialId id : finished_) curves.push_back(&trials_.at(id).points);
      fit = FitFinalBound(curves, t,
                          static_cast<size_t>(std::max<int64_t>(o_.bound_min_finished, 3)));
      count = finished_.size();
    }
    return fit ? &*fit : nullptr;
  }

  bool StopReason(int64_t t, double score, const CurvePoints& points, std::string* why) const {
    double reach = Reach(t, score, &points);
    if (!(reach < best_final_)) return false;
    char buf[240];
    std::snprintf(buf, sizeof buf,
                  "at iteration %lld: %g, and %s of %zu finished trials would take it to %g at "
                  "most, short of the best finished result %g",
                  static_cast<long long>(t), Unscore(score),
                  o_.bound_predict ? "the curves" : "the largest gain any", finished_.size(),
                  Unscore(reach), Unscore(best_final_));
    *why = buf;
    return true;
  }

  // The largest (final - value at t) over the finished trials that reported at t. False if none
  // reported at t.
  bool LargestGain(int64_t t, double* gain) const {
    bool any = false;
    for (TrialId id : finished_) {
      const Trial& c = trials_.at(id);
      auto at = c.points.find(t);
      if (at == c.points.end()) continue;
      double g = c.points.rbegin()->second - at->second;
      *gain = any ? std::max(*gain, g) : g;
      any = true;
    }
    return any;
  }

  SchedulerOptions o_;
  std::vector<Rung> rungs_;
  std::map<TrialId, Trial> trials_;
  std::vector<TrialId> finished_;
  mutable std::map<int64_t, std::pair<size_t, std::optional<FinalBoundFit>>> fits_;  // by t
  std::set<TrialId> calibration_;  // the first bound_min_finished trials: never paused or stopped
  double best_final_ = 0;
};

}  // namespace

Result<std::unique_ptr<TrialScheduler>> MakeCurveBoundScheduler(const SchedulerOptions& o) {
  return std::unique_ptr<TrialScheduler>(new CurveBound(o));
}

}  // namespace cumulus::tune
