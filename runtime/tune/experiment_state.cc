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

}  // namespace cumulus::tune
