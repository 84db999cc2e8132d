// The tuner's policies: made from the experiment's spec, and replayed from its journal on restore
// (every decision checked against the journal's); see tuner_impl.h.
#include <algorithm>

#include "runtime/tune/tuner_impl.h"

namespace cumulus::tune {

Status Tuner::Impl::MakePolicies() {
  mode_ = spec_.maximize ? Mode::kMax : Mode::kMin;
  SearcherOptions so;
  CUMULUS_ASSIGN_OR_RETURN(so.kind, ParseSearcherKind(spec_.searcher));
  so.seed = spec_.seed;
  so.num_samples = spec_.num_samples;
  CUMULUS_ASSIGN_OR_RETURN(searcher_, MakeSearcher(space_, so));
  CUMULUS_ASSIGN_OR_RETURN(SchedulerOptions o, SchedulerOptionsFromSpec(spec_));
  for (auto& name : spec_.pbt_mutations) {
    const Param* p = space_.Find(name);
    if (p == nullptr) {
      return Status::InvalidArgument("tuner: PBT mutates '" + name +
                                     "', which the search space does not have");
    }
    o.pbt_mutations.Add(*p);
  }
  auto made = MakeTrialScheduler(o);
  if (!made.ok()) return Status::InvalidArgument("tuner: " + made.status().message());
  scheduler_ = std::move(*made);
  return Status::OK();
}

Status Tuner::Impl::Begin() {
  CUMULUS_RETURN_IF_ERROR(MakePolicies());
  CUMULUS_ASSIGN_OR_RETURN(auto head, ConnectTunerHead(&job_));
  CUMULUS_ASSIGN_OR_RETURN(journal_, Journal::Create(std::move(head), spec_));
  return Status::OK();
}

Status Tuner::Impl::Resume(Journal::Loaded loaded) {
  CUMULUS_RETURN_IF_ERROR(MakePolicies());
  for (auto& e : loaded.entries) {
    CUMULUS_RETURN_IF_ERROR(state_.Apply(e));
    CUMULUS_RETURN_IF_ERROR(Replay(e));
    if ((e.kind == JournalEntry::Kind::kReport && e.action == kActionBudgetStop) ||
        (e.kind == JournalEntry::Kind::kExperimentEnded && e.reason == kTimeBudgetSpentReason)) {
      budget_spent_before_ = true;
    }
  }
  earlier_runs_ = TimeOfRuns(loaded.entries);
  // What ran when the last driver died continues from its checkpoint; what was added and never
  // started waits for a slot like any new trial.
  for (auto& [id, t] : state_.trials()) {
    if (t.state == TrialState::kRunning) {
      restart_.emplace_back(id, Clock::time_point());
    } else if (t.state == TrialState::kPending) {
      bool ran = !t.history.empty() || t.restarts > 0 || t.reason == "resuming";
      if (ran) {
        restart_.emplace_back(id, Clock::time_point());
      } else {
        fresh_.push_back(id);
      }
    }
  }
  CUMULUS_ASSIGN_OR_RETURN(auto head, ConnectTunerHead(&job_));
  journal_ = tune::Journal::Continue(std::move(head), spec_.name, loaded.entries.size() + 1);
  return Status::OK();
}

void Tuner::Impl::EndInPolicies(uint64_t id, bool completed) {
  scheduler_->OnTrialEnd(id, completed);
  auto& t = state_.trials().at(id);
  std::optional<double> score;
  for (auto it = t.history.rbegin(); it != t.history.rend() && !score; ++it) {
    auto m = it->find(spec_.metric);
    if (m != it->end()) score = spec_.maximize ? m->second : -m->second;
  }
  searcher_->OnTrialEnd(id, score, t.iteration);
}

// Replays one journal entry into the policies (the state has applied it already) and checks
// that they decide as the journal says.
Status Tuner::Impl::Replay(const JournalEntry& e) {
  using Kind = JournalEntry::Kind;
  auto differs = [&](const std::string& what) {
    return Status::InvalidArgument(
        "experiment '" + spec_.name + "' cannot be restored: " + what +
        " (restore it with the program, search space and options it was run with)");
  };
  switch (e.kind) {
    case Kind::kTrialAdded: {
      CUMULUS_ASSIGN_OR_RETURN(auto c, searcher_->Suggest(e.trial));
      if (!c || c->Encode() != e.config) {
        return differs("the searcher now gives trial " + TrialName(e.trial) + " " +
                       (c ? c->ToString() : std::string("nothing")) + ", the journal has " +
                       state_.trials().at(e.trial).config.ToString());
      }
      scheduler_->OnTrialAdd(e.trial, *c);
      return Status::OK();
    }
    case Kind::kSearcherDone: {
      CUMULUS_ASSIGN_OR_RETURN(auto c, searcher_->Suggest(state_.next_trial()));
      if (c) return differs("the searcher gives more configs than the journal's");
      return Status::OK();
    }
    case Kind::kReport: {
      auto m = e.metrics.find(spec_.metric);
      if (m == e.metrics.end()) return differs("a report lacks the metric");
      Decision d = scheduler_->OnReport(TrialReport{e.trial, e.iteration, m->second});
      if (e.action == kActionFinished || e.action == kActionBudgetStop) {
        EndInPolicies(e.trial, e.action == kActionFinished);
        return Status::OK();
      }
      if (static_cast<uint8_t>(d.action) != e.action) {
        return differs("the scheduler now decides " + std::string(ActionName(d.action)) + " for " +
                       TrialName(e.trial) + " at iteration " + std::to_string(e.iteration) +
                       ", the journal has " +
                       std::string(ActionName(static_cast<Action>(e.action))));
      }
      if (d.action == Action::kExploit &&
          (d.exploit_from != e.exploit_from ||
           (!IsSkippedExploit(e) && d.new_config.Encode() != e.config))) {
        return differs("PBT now has " + TrialName(e.trial) + " exploit " +
                       TrialName(d.exploit_from) + " with " + d.new_config.ToString() +
                       ", the journal has " + TrialName(e.exploit_from));
      }
      if (d.action == Action::kExploit && IsSkippedExploit(e))
        scheduler_->OnExploitSkipped(e.trial);
      if (d.action == Action::kStop) EndInPolicies(e.trial, false);
      return Status::OK();
    }
    case Kind::kChoose: {
      auto next = scheduler_->ChooseTrialToRun(e.can_start_new);
      int64_t resume = next.resume ? static_cast<int64_t>(*next.resume) : -1;
      if (resume != e.resume || next.stop.size() != e.stops.size()) {
        return differs("the scheduler now chooses differently which trial to run");
      }
      for (auto& [id, why] : next.stop) EndInPolicies(id, false);
      return Status::OK();
    }
    case Kind::kTrialEnded:
      EndInPolicies(e.trial, e.state == static_cast<uint8_t>(TrialState::kFinished));
      return Status::OK();
    default:
      return Status::OK();
  }
}

std::vector<std::pair<int64_t, double>> Tuner::Impl::ReplayableCutoffs() const {
  std::vector<std::pair<int64_t, double>> out;
  for (auto& c : scheduler_->Cutoffs()) out.emplace_back(c.iteration, c.value);
  return out;
}

}  // namespace cumulus::tune
