// fifo, asha, hyperband, median and pbt (see trial_scheduler.h); `bound` is in curve_bound.cc.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "scheduler/tune/budget_promotion.h"
#include "scheduler/tune/curve_bound.h"
#include "scheduler/tune/trial_scheduler.h"

namespace cumulus::tune {

Result<Mode> ParseMode(std::string_view text) {
  if (text == "max") return Mode::kMax;
  if (text == "min") return Mode::kMin;
  return Status::InvalidArgument("mode \"" + std::string(text) +
                                 "\" is neither max nor min: say whether a larger metric is "
                                 "better (max) or a smaller one (min)");
}

std::string_view ModeName(Mode mode) { return mode == Mode::kMax ? "max" : "min"; }

std::string_view ActionName(Action a) {
  switch (a) {
    case Action::kContinue:
      return "continue";
    case Action::kStop:
      return "stop";
    case Action::kPause:
      return "pause";
    case Action::kExploit:
      return "exploit";
  }
  return "?";
}

namespace {
constexpr std::pair<SchedulerKind, std::string_view> kKindNames[] = {
    {SchedulerKind::kFifo, "fifo"},
    {SchedulerKind::kAsha, "asha"},
    {SchedulerKind::kHyperBand, "hyperband"},
    {SchedulerKind::kMedian, "median"},
    {SchedulerKind::kPbt, "pbt"},
    {SchedulerKind::kBound, "bound"},
    {SchedulerKind::kBudget, "budget"},
};
}  // namespace

Result<SchedulerKind> ParseSchedulerKind(std::string_view name) {
  for (const auto& [k, n] : kKindNames)
    if (n == name) return k;
  return Status::InvalidArgument("unknown scheduler \"" + std::string(name) +
                                 "\": use fifo, asha, hyperband, median, pbt, bound or budget");
}

std::string_view SchedulerKindName(SchedulerKind kind) {
  for (const auto& [k, n] : kKindNames)
    if (k == kind) return n;
  return "?";
}

Result<BudgetScore> ParseBudgetScore(std::string_view name) {
  for (BudgetScore s :
       {BudgetScore::kLast, BudgetScore::kMean, BudgetScore::kLine, BudgetScore::kFit})
    if (BudgetScoreName(s) == name) return s;
  return Status::InvalidArgument("budget_score \"" + std::string(name) +
                                 "\" is unknown: use last, mean, line or fit");
}

std::string_view BudgetScoreName(BudgetScore score) {
  switch (score) {
    case BudgetScore::kLast:
      return "last";
    case BudgetScore::kMean:
      return "mean";
    case BudgetScore::kLine:
      return "line";
    case BudgetScore::kFit:
      return "fit";
  }
  return "?";
}

double Percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  double pos = q / 100.0 * static_cast<double>(values.size() - 1);
  auto lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, values.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

namespace {

double Score(Mode m, double metric) { return m == Mode::kMax ? metric : -metric; }

class Fifo final : public TrialScheduler {
 public:
  std::string_view name() const override { return "fifo"; }
  Decision OnReport(const TrialReport&) override { return {}; }
};

// ---- asha / hyperband ----------------------------------------------------------------------

class Asha final : public TrialScheduler {
 public:
  Asha(const SchedulerOptions& o, int64_t brackets, std::string_view name)
      : o_(o), name_(name), rng_(o.seed) {
    double levels = std::log(static_cast<double>(o.max_t) / static_cast<double>(o.grace_period)) /
                    std::log(o.reduction_factor);
    for (int64_t s = 0; s < brackets; ++s) {
      // As Ray: int(log(max_t / grace) / log(rf) - s + 1) rungs, the highest first.
      auto n = static_cast<int64_t>(levels - static_cast<double>(s) + 1 + 1e-9);
      Bracket b;
      for (int64_t k = n - 1; k >= 0; --k)
        b.rungs.push_back(
            Rung{static_cast<int64_t>(std::llround(static_cast<double>(o.grace_period) *
                                                   std::pow(o.reduction_factor, k + s))),
                 {}});
      brackets_.push_back(std::move(b));
    }
  }

  std::string_view name() const override { return name_; }

  void OnTrialAdd(TrialId id, const Config&) override {
    size_t b = 0;
    if (brackets_.size() > 1) {
      // As Ray: bracket chosen with probability proportional to e^(rungs - most rungs).
      std::vector<double> w;
      double most = 0, sum = 0;
      for (const Bracket& br : brackets_) most = std::max(most, double(br.rungs.size()));
      for (const Bracket& br : brackets_) sum += std::exp(double(br.rungs.size()) - most);
      double u = rng_.Uniform01() * sum, acc = 0;
      for (b = 0; b + 1 < brackets_.size(); ++b) {
        acc += std::exp(double(brackets_[b].rungs.size()) - most);
        if (u < acc) break;
      }
    }
    bracket_of_[id] = b;
  }

  Decision OnReport(const TrialReport& r) override {
    auto it = bracket_of_.find(r.trial);
    if (it == bracket_of_.end()) {
      OnTrialAdd(r.trial, Config{});
      it = bracket_of_.find(r.trial);
    }
    double score = Score(o_.mode, r.metric);
    for (Rung& rung : brackets_[it->second].rungs) {
      if (r.iteration < rung.milestone || rung.recorded.count(r.trial)) continue;
      Decision d;
      if (!rung.recorded.empty()) {
        std::vector<double> v;
        for (const auto& [_, x] : rung.recorded) v.push_back(x);
        double cutoff = Percentile(v, (1 - 1 / o_.reduction_factor) * 100);
        if (score < cutoff) {
          d.action = Action::kStop;
          char buf[160];
          std::snprintf(buf, sizeof buf,
                        "below the rung at iteration %lld: %g, cut-off %g (%zu trials there)",
                        static_cast<long long>(rung.milestone), r.metric, Score(o_.mode, cutoff),
                        rung.recorded.size());
          d.reason = buf;
        }
      }
      rung.recorded[r.trial] = score;
      return d;
    }
    return {};
  }

  std::vector<Cutoff> Cutoffs() const override {
    std::vector<Cutoff> out;
    for (const Bracket& b : brackets_)
      for (const Rung& rung : b.rungs) {
        if (rung.recorded.empty()) continue;
        std::vector<double> v;
        for (const auto& [_, x] : rung.recorded) v.push_back(x);
        out.push_back(Cutoff{rung.milestone,
                             Score(o_.mode, Percentile(v, (1 - 1 / o_.reduction_factor) * 100))});
      }
    return out;
  }

 private:
  struct Rung {
    int64_t milestone;
    std::map<TrialId, double> recorded;
  };
  struct Bracket {
    std::vector<Rung> rungs;  // highest milestone first
  };
  SchedulerOptions o_;
  std::string_view name_;
  Rng rng_;
  std::vector<Bracket> brackets_;
  std::map<TrialId, size_t> bracket_of_;
};

// ---- median stopping ------------------------------------------------------------------------

class MedianStopping final : public TrialScheduler {
 public:
  explicit MedianStopping(const SchedulerOptions& o) : o_(o) {}
  std::string_view name() const override { return "median"; }

  Decision OnReport(const TrialReport& r) override {
    History& h = trials_[r.trial];
    double score = Score(o_.mode, r.metric);
    h.points.emplace_back(r.iteration, score);
    h.best = h.points.size() == 1 ? score : std::max(h.best, score);
    if (r.iteration < o_.median_grace_period) return {};
    std::vector<double> means;
    for (const auto& [id, other] : trials_) {
      if (id == r.trial || other.points.empty() || other.points.back().first < r.iteration)
        continue;
      double sum = 0;
      size_t n = 0;
      for (const auto& [t, x] : other.points) {
        if (t > r.iteration) break;
        sum += x, ++n;
      }
      means.push_back(sum / static_cast<double>(n));
    }
    if (static_cast<int64_t>(means.size()) < o_.median_min_samples) return {};
    double median = Percentile(means, 50);
    if (h.best >= median) return {};
    Decision d;
    d.action = Action::kStop;
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "best so far %g is below the median %g of %zu other trials' running means at "
                  "iteration %lld",
                  Score(o_.mode, h.best), Score(o_.mode, median), means.size(),
                  static_cast<long long>(r.iteration));
    d.reason = buf;
    return d;
  }

 private:
  struct History {
    std::vector<std::pair<int64_t, double>> points;
    double best = 0;
  };
  SchedulerOptions o_;
  std::map<TrialId, History> trials_;
};

// ---- population-based training --------------------------------------------------------------

class Pbt final : public TrialScheduler {
 public:
  explicit Pbt(const SchedulerOptions& o) : o_(o), rng_(o.seed) {}
  std::string_view name() const override { return "pbt"; }

  void OnTrialAdd(TrialId id, const Config& config) override { trials_[id].config = config; }

  // An ended trial (finished, stopped or failed) leaves the population, as in Ray's PBT: it is
  // neither ranked nor copied from (its weights may be those that failed, and it counts in no
  // quantile of the trials still training).
  void OnTrialEnd(TrialId id, bool) override {
    auto it = trials_.find(id);
    if (it != trials_.end()) it->second.ended = true;
  }

  void OnExploitSkipped(TrialId id) override {
    auto it = trials_.find(id);
    if (it == trials_.end() || !it->second.before_exploit) return;
    it->second.config = it->second.before_exploit->first;
    it->second.score = it->second.before_exploit->second;
    it->second.before_exploit.reset();
  }

  Decision OnReport(const TrialReport& r) override {
    Member& me = trials_[r.trial];
    me.before_exploit.reset();
    me.score = Score(o_.mode, r.metric);
    me.scored = true;
    if (r.iteration - me.last_perturbation < o_.pbt_interval) return {};
    me.last_perturbation = r.iteration;
    std::vector<std::pair<double, TrialId>> ranked;
    for (const auto& [id, m] : trials_)
      if (m.scored && !m.ended) ranked.emplace_back(m.score, id);
    if (ranked.size() <= 1) return {};
    std::sort(ranked.begin(), ranked.end());
    auto n = static_cast<size_t>(std::ceil(static_cast<double>(ranked.size()) * o_.pbt_quantile));
    n = std::min(n, ranked.size() / 2);
    if (n == 0) return {};
    bool bottom = false;
    for (size_t k = 0; k < n; ++k) bottom |= ranked[k].second == r.trial;
    if (!bottom) return {};
    TrialId from = ranked[ranked.size() - n + rng_.Below(n)].second;
    Decision d;
    d.action = Action::kExploit;
    d.exploit_from = from;
    d.new_config = Explore(trials_[from].config);
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "in the bottom %g of the population at iteration %lld (%g): continues from "
                  "trial %llu (%g)",
                  o_.pbt_quantile, static_cast<long long>(r.iteration), r.metric,
                  static_cast<unsigned long long>(from), Score(o_.mode, trials_[from].score));
    d.reason = buf;
    me.before_exploit.emplace(me.config, me.score);  // until the next report: OnExploitSkipped
    me.config = d.new_config;
    me.score = trials_[from].score;  // it now carries the top trial's weights
    return d;
  }

 private:
  struct Member {
    Config config;
    double score = 0;
    bool scored = false;
    bool ended = false;
    int64_t last_perturbation = 0;
    std::optional<std::pair<Config, double>> before_exploit;  // the last exploit's undo
  };

  Config Explore(const Config& base) {
    Config c = base;
    for (const Param& p : o_.pbt_mutations.params()) {
      auto cur = base.values().find(p.name);
      bool resample = rng_.Uniform01() < o_.pbt_resample_probability || cur == base.values().end();
      if (p.kind == Param::Kind::kConditional) continue;
      if (p.kind == Param::Kind::kChoice || p.kind == Param::Kind::kGrid) {
        if (resample) {
          c.Set(p.name, SampleParam(p, rng_));
          continue;
        }
        size_t k = 0;
        while (k < p.values.size() && p.values[k] != cur->second) ++k;
        if (k == p.values.size()) {
          c.Set(p.name, SampleParam(p, rng_));
          continue;
        }
        bool up = rng_.Uniform01() < 0.5;
        size_t next = up ? std::min(k + 1, p.values.size() - 1) : (k == 0 ? 0 : k - 1);
        c.Set(p.name, p.values[next]);
        continue;
      }
      if (resample) {
        c.Set(p.name, SampleParam(p, rng_));
        continue;
      }
      double factor = rng_.Uniform01() < 0.5 ? 0.8 : 1.2;
      double x = 0;
      if (auto* d = std::get_if<double>(&cur->second)) x = *d;
      if (auto* i = std::get_if<int64_t>(&cur->second)) x = static_cast<double>(*i);
      x *= factor;
      if (p.kind == Param::Kind::kRandInt) {
        auto v = static_cast<int64_t>(std::llround(x));
        c.Set(p.name, std::clamp(v, static_cast<int64_t>(p.lo), static_cast<int64_t>(p.hi) - 1));
      } else if (p.kind == Param::Kind::kQUniform) {
        double first = std::ceil(p.lo / p.q), last = std::floor(p.hi / p.q);
        c.Set(p.name, std::clamp(std::round(x / p.q), first, last) * p.q);
      } else {
        c.Set(p.name, std::clamp(x, p.lo, p.hi));
      }
    }
    return c;
  }

  SchedulerOptions o_;
  Rng rng_;
  std::map<TrialId, Member> trials_;
};

Status CheckOptions(const SchedulerOptions& o) {
  auto bad = [](const std::string& what) { return Status::InvalidArgument("scheduler: " + what); };
  if (o.max_t < 1) return bad("max_t must be at least 1 iteration");
  if (o.kind == SchedulerKind::kAsha || o.kind == SchedulerKind::kHyperBand ||
      o.kind == SchedulerKind::kBound || o.kind == SchedulerKind::kBudget) {
    if (o.grace_period < 1 || o.grace_period > o.max_t)
      return bad("grace_period must be between 1 and max_t (" + std::to_string(o.max_t) + ")");
    if (!std::isfinite(o.reduction_factor) || !(o.reduction_factor > 1))
      return bad("reduction_factor must be a number above 1");
    if (o.brackets < 1 || o.brackets > 64) return bad("brackets must be between 1 and 64");
  }
  if (o.kind == SchedulerKind::kMedian) {
    if (o.median_grace_period < 1) return bad("the median rule's grace period must be >= 1");
    if (o.median_min_samples < 1) return bad("the median rule's min_samples must be >= 1");
  }
  if (o.kind == SchedulerKind::kPbt) {
    if (o.pbt_interval < 1) return bad("pbt's perturbation interval must be >= 1 iteration");
    if (!(o.pbt_quantile > 0 && o.pbt_quantile <= 0.5))
      return bad("pbt's quantile must be in (0, 0.5]");
    if (!(o.pbt_resample_probability >= 0 && o.pbt_resample_probability <= 1))
      return bad("pbt's resample probability must be in [0, 1]");
    if (!o.pbt_mutations.params().empty()) {
      Status s = o.pbt_mutations.Validate();
      if (!s.ok()) return s.WithContext("pbt mutations");
    }
  }
  if (o.kind == SchedulerKind::kBound) {
    if (o.bound_min_finished < 1) return bad("bound: min_finished must be at least 1");
    if (!std::isfinite(o.bound_margin) || o.bound_margin < 0)
      return bad("bound: the margin must be a finite number >= 0");
    if (!std::isfinite(o.bound_slack) || o.bound_slack < 0)
      return bad("bound: the slack must be a finite number >= 0");
  }
  if (o.kind == SchedulerKind::kBudget) {
    // Named as SchedulerSettings names them, with the value given.
    auto got = [](double v) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%g", v);
      return std::string(", not ") + buf;
    };
    if (!(o.budget_fraction > 0 && o.budget_fraction <= 1))
      return bad("budget_fraction (of full compute) must be in (0, 1]" + got(o.budget_fraction));
    if (!(o.budget_min_prefix >= 0 && o.budget_min_prefix <= 1))
      return bad("budget_min_prefix (a fraction of max_t) must be in [0, 1]" +
                 got(o.budget_min_prefix));
    if (!std::isfinite(o.budget_reduction_factor) || !(o.budget_reduction_factor > 1))
      return bad("budget_reduction_factor must be a number above 1" +
                 got(o.budget_reduction_factor));
    if (!(o.budget_promotion_share >= 0 && o.budget_promotion_share <= 1))
      return bad("budget_promotion_share must be in [0, 1]" + got(o.budget_promotion_share));
    if (!(o.budget_score_window >= 0 && o.budget_score_window <= 1))
      return bad(
          "budget_score_window (a fraction of the iterations between rungs) must be in "
          "[0, 1]" +
          got(o.budget_score_window));
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<TrialScheduler>> MakeTrialScheduler(const SchedulerOptions& o) {
  CUMULUS_RETURN_IF_ERROR(CheckOptions(o));
  switch (o.kind) {
    case SchedulerKind::kFifo:
      return std::unique_ptr<TrialScheduler>(new Fifo());
    case SchedulerKind::kAsha:
      return std::unique_ptr<TrialScheduler>(new Asha(o, o.brackets, "asha"));
    case SchedulerKind::kHyperBand: {
      auto s_max = static_cast<int64_t>(
          std::log(static_cast<double>(o.max_t) / static_cast<double>(o.grace_period)) /
              std::log(o.reduction_factor) +
          1e-9);
      return std::unique_ptr<TrialScheduler>(new Asha(o, s_max + 1, "hyperband"));
    }
    case SchedulerKind::kMedian:
      return std::unique_ptr<TrialScheduler>(new MedianStopping(o));
    case SchedulerKind::kPbt:
      return std::unique_ptr<TrialScheduler>(new Pbt(o));
    case SchedulerKind::kBound:
      return MakeCurveBoundScheduler(o);
    case SchedulerKind::kBudget:
      return MakeBudgetPromotionScheduler(o);
  }
  return Status::InvalidArgument("unknown scheduler kind");
}

}  // namespace cumulus::tune
