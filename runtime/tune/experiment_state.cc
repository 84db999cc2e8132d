#include "runtime/tune/experiment_state.h"

#include <cmath>
#include <cstdio>

#include "scheduler/tune/trial_scheduler.h"

namespace cumulus::tune {

std::string TrialName(uint64_t trial) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "t%04llu", static_cast<unsigned long long>(trial));
  return buf;
}

Status ExperimentState::Apply(const JournalEntry& e) {
  using Kind = JournalEntry::Kind;
  auto trial = [&](uint64_t id) -> Result<TrialStatus*> {
    auto it = trials_.find(id);
    if (it == trials_.end()) {
      return Status::InvalidArgument("experiment '" + spec_.name + "': the journal names trial " +
                                     TrialName(id) + " before adding it");
    }
    return &it->second;
  };
  switch (e.kind) {
    case Kind::kRun:
      ++runs_;
      ended_ = false;
      return Status::OK();
    case Kind::kTrialAdded: {
      auto config = Config::Decode(e.config);
      if (!config.ok()) {
        return Status::InvalidArgument("experiment '" + spec_.name + "', trial " +
                                       TrialName(e.trial) + ": " + config.status().message());
      }
      TrialStatus& t = trials_[e.trial];
      t.id = e.trial;
      t.config = std::move(*config);
      return Status::OK();
    }
    case Kind::kSearcherDone:
      searcher_done_ = true;
      return Status::OK();
    case Kind::kTrialStarted: {
      CUMULUS_ASSIGN_OR_RETURN(TrialStatus * t, trial(e.trial));
      t->state = TrialState::kRunning;
      t->reason.clear();
      if (!e.node.empty()) t->node = e.node;
      return Status::OK();
    }
    case Kind::kReport: {
      CUMULUS_ASSIGN_OR_RETURN(TrialStatus * t, trial(e.trial));
      Metrics m = e.metrics;
      m["training_iteration"] = static_cast<double>(e.iteration);
      t->history.push_back(std::move(m));
      t->iteration = e.iteration;
      t->seconds += e.seconds;
      t->report_seconds.push_back(t->seconds);
      if (!e.node.empty()) t->node = e.node;
      if (!e.checkpoint_key.empty()) t->checkpoint = e;
      t->reason = e.reason;
      switch (e.action) {
        case static_cast<uint8_t>(Action::kContinue):
          t->state = TrialState::kRunning;
          break;
        case static_cast<uint8_t>(Action::kStop):
          t->state = TrialState::kStoppedEarly;
          break;
        case static_cast<uint8_t>(Action::kPause):
          t->state = TrialState::kPaused;
          break;
        case static_cast<uint8_t>(Action::kExploit): {
          auto config = Config::Decode(e.config);
          if (config.ok() && !IsSkippedExploit(e))
            t->exploits.push_back({e.iteration, e.exploit_from, t->config, *config});
          if (config.ok()) t->config = std::move(*config);
          t->state = TrialState::kRunning;
          break;
        }
        case kActionFinished:
          t->state = TrialState::kFinished;
          break;
        case kActionBudgetStop:
          t->state = TrialState::kStoppedEarly;
          break;
        default:
          return Status::InvalidArgument("experiment '" + spec_.name + "': a report of " +
                                         TrialName(e.trial) + " has unknown action " +
                                         std::to_string(e.action));
      }
      return Status::OK();
    }
    case Kind::kChoose: {
      if (e.resume >= 0) {
        CUMULUS_ASSIGN_OR_RETURN(TrialStatus * t, trial(static_cast<uint64_t>(e.resume)));
        t->state = TrialState::kPending;
        t->reason = "resuming";
      }
      for (auto& [id, why] : e.stops) {
        CUMULUS_ASSIGN_OR_RETURN(TrialStatus * t, trial(id));
        t->state = TrialState::kStoppedEarly;
        t->reason = why;
      }
      return Status::OK();
    }
    case Kind::kCheckpoint: {
      CUMULUS_ASSIGN_OR_RETURN(TrialStatus * t, trial(e.trial));
      t->checkpoint = e;
      return Status::OK();
    }
    case Kind::kTrialRestarted: {
      CUMULUS_ASSIGN_OR_RETURN(TrialStatus * t, trial(e.trial));
      ++t->restarts;
      t->state = TrialState::kPending;
      t->reason = e.reason;
      return Status::OK();
    }
    case Kind::kTrialEnded: {
      CUMULUS_ASSIGN_OR_RETURN(TrialStatus * t, trial(e.trial));
      t->state = static_cast<TrialState>(e.state);
      t->reason = e.reason;
      return Status::OK();
    }
    case Kind::kExperimentEnded:
      ended_ = true;
      end_reason_ = e.reason;
      return Status::OK();
  }
  return Status::InvalidArgument("journal entry of unknown kind");
}

ExperimentResult ExperimentState::ToResult() const {
  ExperimentResult r;
  r.name = spec_.name;
  r.metric = spec_.metric;
  r.maximize = spec_.maximize;
  for (auto& [id, t] : trials_) {
    TrialResult tr;
    tr.id = TrialName(id);
    tr.config = t.config;
    tr.state = t.state;
    tr.reason = t.reason;
    tr.history = t.history;
    tr.node = t.node;
    tr.restarts = t.restarts;
    tr.seconds = t.seconds;
    r.compute_seconds += t.seconds;
    if (t.iteration > 0) {
      double per = t.seconds / static_cast<double>(t.iteration);
      int64_t full = t.state == TrialState::kFinished ? t.iteration
                                                      : std::max(t.iteration, spec_.max_iterations);
      r.compute_seconds_full += per * static_cast<double>(full);
    }
    if (t.checkpoint) {
      tr.checkpoint.key = t.checkpoint->checkpoint_key;
      tr.checkpoint.chunks = t.checkpoint->checkpoint_chunks;
      tr.checkpoint.bytes = t.checkpoint->checkpoint_bytes;
      tr.checkpoint.iteration = t.checkpoint->iteration;
    }
    r.trials.push_back(std::move(tr));
  }
  return r;
}

ExperimentTable ExperimentState::ToTable(std::vector<std::pair<int64_t, double>> cutoffs) const {
  ExperimentTable table;
  table.name = spec_.name;
  table.metric = spec_.metric;
  table.maximize = spec_.maximize;
  table.cutoffs = std::move(cutoffs);
  for (auto& [id, t] : trials_) {
    TrialRow row;
    row.id = TrialName(id);
    row.config = t.config;
    row.state = t.state;
    row.reason = t.reason;
    row.node = t.node;
    row.restarts = t.restarts;
    for (const auto& x : t.exploits)
      row.exploits.push_back({x.iteration, TrialName(x.from), x.before, x.after});
    for (size_t i = 0; i < t.history.size(); ++i) {
      TrialPoint p;
      p.metrics = t.history[i];
      p.iteration = static_cast<int64_t>(p.metrics["training_iteration"]);
      p.metrics.erase("training_iteration");
      p.seconds = i < t.report_seconds.size() ? t.report_seconds[i] : 0;
      row.history.push_back(std::move(p));
    }
    table.compute_seconds += t.seconds;
    table.trials.push_back(std::move(row));
  }
  return table;
}

Result<SchedulerOptions> SchedulerOptionsFromSpec(const ExperimentSpec& spec) {
  SchedulerOptions o;
  CUMULUS_ASSIGN_OR_RETURN(o.kind, ParseSchedulerKind(spec.scheduler));
  o.mode = spec.maximize ? Mode::kMax : Mode::kMin;
  o.max_t = spec.max_iterations;
  o.seed = spec.seed;
  o.grace_period = spec.grace_period;
  o.reduction_factor = spec.reduction_factor;
  o.brackets = spec.brackets;
  o.median_grace_period = spec.median_grace_period;
  o.median_min_samples = spec.median_min_samples;
  o.pbt_interval = spec.pbt_interval;
  o.pbt_quantile = spec.pbt_quantile;
  o.pbt_resample_probability = spec.pbt_resample_probability;
  o.bound_min_finished = spec.bound_min_finished;
  o.budget_fraction = spec.budget_fraction;
  o.budget_min_prefix = spec.budget_min_prefix;
  o.budget_reduction_factor = spec.budget_reduction_factor;
  o.budget_promotion_share = spec.budget_promotion_share;
  CUMULUS_ASSIGN_OR_RETURN(o.budget_score, ParseBudgetScore(spec.budget_score));
  o.budget_score_window = spec.budget_score_window;
  o.budget_eager = spec.budget_eager;
  return o;
}

Result<std::vector<std::pair<int64_t, double>>> ReplayCutoffs(
    const ExperimentSpec& spec, const std::vector<JournalEntry>& entries) {
  std::vector<std::pair<int64_t, double>> out;
  auto kind = ParseSchedulerKind(spec.scheduler);
  if (!kind.ok() || *kind == SchedulerKind::kPbt || *kind == SchedulerKind::kFifo ||
      *kind == SchedulerKind::kMedian) {
    return out;
  }
  CUMULUS_ASSIGN_OR_RETURN(SchedulerOptions o, SchedulerOptionsFromSpec(spec));
  CUMULUS_ASSIGN_OR_RETURN(auto scheduler, MakeTrialScheduler(o));
  for (auto& e : entries) {
    switch (e.kind) {
      case JournalEntry::Kind::kTrialAdded: {
        auto c = Config::Decode(e.config);
        scheduler->OnTrialAdd(e.trial, c.ok() ? *c : Config());
        break;
      }
      case JournalEntry::Kind::kReport: {
        auto m = e.metrics.find(spec.metric);
        if (m == e.metrics.end()) break;
        (void)scheduler->OnReport(TrialReport{e.trial, e.iteration, m->second});
        if (e.action == kActionFinished || e.action == kActionBudgetStop ||
            e.action == static_cast<uint8_t>(Action::kStop)) {
          scheduler->OnTrialEnd(e.trial, e.action == kActionFinished);
        }
        break;
      }
      case JournalEntry::Kind::kChoose: {
        (void)scheduler->ChooseTrialToRun(e.can_start_new);
        for (auto& [id, why] : e.stops) scheduler->OnTrialEnd(id, false);
        break;
      }
      case JournalEntry::Kind::kTrialEnded:
        scheduler->OnTrialEnd(e.trial, e.state == static_cast<uint8_t>(TrialState::kFinished));
        break;
      default:
        break;
    }
  }
  // A "rung" at max_iterations stops nothing: every trial that reaches it has finished.
  for (auto& c : scheduler->Cutoffs()) {
    if (spec.max_iterations <= 0 || c.iteration < spec.max_iterations)
      out.emplace_back(c.iteration, c.value);
  }
  return out;
}

}  // namespace cumulus::tune
