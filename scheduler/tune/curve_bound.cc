#include "scheduler/tune/curve_bound.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace cumulus::tune {
namespace {

class CurveBound final : public TrialScheduler {
 public:
  explicit CurveBound(const SchedulerOptions& o) : o_(o) {}
  std::string_view name() const override { return "bound"; }

  Decision OnReport(const TrialReport& r) override {
    double score = o_.mode == Mode::kMax ? r.metric : -r.metric;
    Curve& c = curves_[r.trial];
    c.points[r.iteration] = score;
    if (static_cast<int64_t>(finished_.size()) < o_.bound_min_finished) return {};
    double gain = 0;
    bool any = false;
    if (!LargestGain(r.iteration, &gain, &any) || !any) return {};
    double reach = score + gain + o_.bound_margin;
    if (reach >= best_final_) return {};
    Decision d;
    d.action = Action::kStop;
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "at iteration %lld: %g, and the largest gain any of %zu finished trials made "
                  "from here (%g) would not reach the best finished result %g",
                  static_cast<long long>(r.iteration), r.metric, finished_.size(), gain,
                  Unscore(best_final_));
    d.reason = buf;
    return d;
  }

  void OnTrialEnd(TrialId id, bool completed) override {
    auto it = curves_.find(id);
    if (!completed || it == curves_.end() || it->second.points.empty()) return;
    double final_score = it->second.points.rbegin()->second;
    finished_.push_back(id);
    best_final_ = finished_.size() == 1 ? final_score : std::max(best_final_, final_score);
  }

  std::vector<Cutoff> Cutoffs() const override {
    std::vector<Cutoff> out;
    if (static_cast<int64_t>(finished_.size()) < o_.bound_min_finished) return out;
    for (int64_t t = 1; t < o_.max_t; ++t) {
      double gain = 0;
      bool any = false;
      if (LargestGain(t, &gain, &any) && any)
        out.push_back(Cutoff{t, Unscore(best_final_ - gain - o_.bound_margin)});
    }
    return out;
  }

 private:
  struct Curve {
    std::map<int64_t, double> points;  // iteration -> score (higher is better)
  };

  double Unscore(double s) const { return o_.mode == Mode::kMax ? s : -s; }

  // The largest (final - value at t) over finished trials that reported at t.
  bool LargestGain(int64_t t, double* gain, bool* any) const {
    *any = false;
    for (TrialId id : finished_) {
      const Curve& c = curves_.at(id);
      auto at = c.points.find(t);
      if (at == c.points.end()) continue;
      double g = c.points.rbegin()->second - at->second;
      *gain = *any ? std::max(*gain, g) : g;
      *any = true;
    }
    return true;
  }

  SchedulerOptions o_;
  std::map<TrialId, Curve> curves_;
  std::vector<TrialId> finished_;
  double best_final_ = 0;
};

}  // namespace

Result<std::unique_ptr<TrialScheduler>> MakeCurveBoundScheduler(const SchedulerOptions& o) {
  return std::unique_ptr<TrialScheduler>(new CurveBound(o));
}

}  // namespace cumulus::tune
