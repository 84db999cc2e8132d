// The tuner's controller loop; see tuner_impl.h.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include "runtime/net/tcp.h"
#include "runtime/tune/tuner_impl.h"
#include "workers/core_worker.h"

namespace cumulus::tune {

Tuner::Impl::Impl(ExperimentSpec spec, SearchSpace space, TunerOptions progress)
    : spec_(std::move(spec)),
      space_(std::move(space)),
      progress_options_(std::move(progress)),
      state_(spec_) {}

Status Tuner::Impl::Journal(JournalEntry e) {
  CUMULUS_RETURN_IF_ERROR(journal_->Append(e));
  ++appended_;
  return state_.Apply(e);
}

size_t Tuner::Impl::Capacity() {
  if (spec_.max_concurrent_trials > 0) return static_cast<size_t>(spec_.max_concurrent_trials);
  auto now = Clock::now();
  if (capacity_checked_ != Clock::time_point() && now - capacity_checked_ < std::chrono::seconds(5))
    return capacity_;
  capacity_checked_ = now;
  auto view = journal_->head().GetClusterStatus();
  if (!view.ok()) return capacity_;
  size_t bundles = 0;
  for (auto& n : view->nodes) {
    if (n.state != NodeState::kAlive) continue;
    double fit = 1e18;
    for (auto& [r, amount] : spec_.resources) {
      if (amount <= 0) continue;
      fit = std::min(fit, std::floor(n.total.Get(r) / amount + 1e-9));
    }
    if (fit >= 1e17) fit = 64;  // asks for nothing: bound by something sane
    bundles += static_cast<size_t>(fit);
  }
  capacity_ = std::max<size_t>(1, bundles / static_cast<size_t>(spec_.gang_size));
  return capacity_;
}

size_t Tuner::Impl::Slots() {
  size_t slots = Capacity();
  if (spec_.max_concurrent_trials == 0 && spec_.max_pending_trials > 0)
    slots += static_cast<size_t>(spec_.max_pending_trials);
  return slots;
}

Status Tuner::Impl::FillSlots() {
  while (true) {
    auto due = std::find_if(restart_.begin(), restart_.end(),
                            [&](auto& r) { return r.second <= Clock::now(); });
    if (budget_spent_ && !restart_.empty()) {
      std::vector<uint64_t> waiting;
      for (auto& r : restart_) waiting.push_back(r.first);
      restart_.clear();
      for (uint64_t id : waiting) {
        CUMULUS_RETURN_IF_ERROR(EndTrial(id, TrialState::kStoppedEarly,
                                         "the time budget was spent while it waited to restart"));
      }
      continue;
    }
    if (due != restart_.end() && live_.size() < Slots()) {
      uint64_t id = due->first;
      restart_.erase(due);
      CUMULUS_RETURN_IF_ERROR(StartTrial(id));
      continue;
    }
    if (live_.size() + restart_.size() >= Slots()) return Status::OK();  // slots kept for them
    if (budget_spent_) return Status::OK();
    if (fresh_.empty() && !state_.searcher_done()) {
      uint64_t id = state_.next_trial();
      auto c = searcher_->Suggest(id);
      if (!c.ok()) return Status::InvalidArgument("tuner: " + c.status().message());
      JournalEntry e;
      if (*c) {
        e.kind = JournalEntry::Kind::kTrialAdded;
        e.trial = id;
        e.config = (*c)->Encode();
        CUMULUS_RETURN_IF_ERROR(Journal(e));
        scheduler_->OnTrialAdd(id, **c);
        fresh_.push_back(id);
      } else {
        e.kind = JournalEntry::Kind::kSearcherDone;
        CUMULUS_RETURN_IF_ERROR(Journal(e));
      }
    }
    // Nothing to resume and nothing new: no call, and no journal entry that says nothing.
    bool paused = std::any_of(state_.trials().begin(), state_.trials().end(),
                              [](auto& t) { return t.second.state == TrialState::kPaused; });
    if (!paused && fresh_.empty()) return Status::OK();
    // Asked already, with nothing journaled since: the answer would be the same.
    if (fresh_.empty() && appended_ == idle_choose_at_) return Status::OK();
    auto next = scheduler_->ChooseTrialToRun(!fresh_.empty());
    JournalEntry e;
    e.kind = JournalEntry::Kind::kChoose;
    e.can_start_new = !fresh_.empty();
    e.resume = next.resume ? static_cast<int64_t>(*next.resume) : -1;
    e.stops = next.stop;
    CUMULUS_RETURN_IF_ERROR(Journal(e));
    for (auto& [id, why] : next.stop) EndInPolicies(id, false);
    if (next.resume) {
      CUMULUS_RETURN_IF_ERROR(StartTrial(*next.resume));
    } else if (!fresh_.empty()) {
      uint64_t id = fresh_.front();
      fresh_.pop_front();
      CUMULUS_RETURN_IF_ERROR(StartTrial(id));
    } else {
      idle_choose_at_ = appended_;
      return Status::OK();
    }
  }
  return Status::OK();
}

Status Tuner::Impl::StartTrial(uint64_t id) {
  Live& live = live_[id];
  live.since = Clock::now();
  if (spec_.gang_size > 1) {
    std::vector<std::map<std::string, double>> bundles(spec_.gang_size, spec_.resources);
    auto strategy = static_cast<PlacementGroupStrategy>(spec_.gang_strategy);
    // No limit of its own: a pending_timeout is CheckPendingTimeouts', which cancels the
    // reservation (as Kill does when the trial ends while it is reserved).
    int64_t no_limit = -1;
    std::string purpose = TrialPurpose(id);
    PlacementGroupId group_id = PlacementGroupId::FromRandom();
    live.reserving_id = group_id;
    cumulus::internal::Runtime* rt = &cumulus::internal::RuntimeOrThrow();
    live.reserving = std::async(std::launch::async, [=]() -> Result<PlacementGroup> {
      CUMULUS_ASSIGN_OR_RETURN(
          auto made, rt->CreatePlacementGroup(bundles, strategy, no_limit, purpose, group_id));
      return PlacementGroup(made.first, std::move(made.second));
    });
    return Status::OK();
  }
  return CreateActors(id, live, nullptr);
}

Status Tuner::Impl::CreateActors(uint64_t id, Live& live, const PlacementGroup* group) {
  const TrialStatus& t = state_.trials().at(id);
  TrialSpec ts;
  ts.experiment = spec_.name;
  ts.trainable = spec_.trainable;
  ts.is_function = spec_.is_function;
  ts.trial_id = TrialName(id);
  ts.config = t.config.Encode();
  ts.world_size = spec_.gang_size;
  // A new name for every start of the trial's actors (a pause and resume, an exploit, a retry
  // of an unplaced gang restart it with the same restarts and runs): a collective group's name
  // must not be reused, or its ranks meet the earlier start's rendezvous entries.
  ts.group = "tune." + spec_.name + "." + ts.trial_id + ".r" + std::to_string(state_.runs()) +
             ".s" + std::to_string(++actor_starts_);
  ts.log_key = job_ + "/" + spec_.name + "/" + ts.trial_id;
  if (t.checkpoint) {
    auto bytes = tune::Journal::GetCheckpoint(journal_->head(), *t.checkpoint);
    if (!bytes.ok()) return bytes.status();
    ts.has_checkpoint = true;
    ts.checkpoint = std::move(*bytes);
    ts.start_iteration = t.checkpoint->iteration;
  }
  live.host_iteration = ts.start_iteration;
  for (int rank = 0; rank < spec_.gang_size; ++rank) {
    ts.rank = rank;
    auto creator = Actor(MakeTrialHost);
    creator.SetPurpose(TrialPurpose(id));
    if (group) {
      creator.SetPlacementGroup(*group, rank);
    } else {
      creator.SetResources(spec_.resources);
    }
    if (!spec_.label_selector.empty()) creator.SetLabelSelector(spec_.label_selector);
    live.actors.push_back(creator.Remote(ts));
  }
  live.where = live.actors[0].Task(&TrialHost::Where).Remote();
  SubmitStep(id, live);
  return Status::OK();
}

void Tuner::Impl::SubmitStep(uint64_t id, Live& live) {
  int64_t next = live.host_iteration + 1;
  bool checkpoint =
      !spec_.is_function && spec_.checkpoint_every > 0 && next % spec_.checkpoint_every == 0;
  // PBT copies donors' checkpoints at perturbation boundaries: every trial checkpoints at its
  // own (in the step's answer, so no save ever waits behind a step in flight), as Ray's PBT
  // saves a top trial when it reaches its interval.
  if (!spec_.is_function && IsPbt() && next % spec_.pbt_interval == 0) checkpoint = true;
  live.steps.clear();
  live.step_done.assign(live.actors.size(), false);
  for (size_t rank = 0; rank < live.actors.size(); ++rank) {
    live.steps.push_back(live.actors[rank].Task(&TrialHost::Step).Remote(checkpoint && rank == 0));
  }
}

void Tuner::Impl::Kill(uint64_t id) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  if (it->second.reserving) {
    // A gang still being reserved: its reservation is withdrawn, which ends the reserving
    // thread's wait at once (no round trip); a group it got just before is removed.
    if (it->second.reserving->wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      cumulus::internal::RuntimeOrThrow().CancelPlacementGroup(it->second.reserving_id);
    auto got = it->second.reserving->get();
    it->second.reserving.reset();
    if (got.ok()) (void)RemovePlacementGroup(*got);
  }
  for (auto& a : it->second.actors) (void)a.Kill();
  if (it->second.group) (void)RemovePlacementGroup(*it->second.group);
  live_.erase(it);
}

Status Tuner::Impl::EndTrial(uint64_t id, TrialState state, const std::string& reason) {
  Kill(id);
  JournalEntry e;
  e.kind = JournalEntry::Kind::kTrialEnded;
  e.trial = id;
  e.state = static_cast<uint8_t>(state);
  e.reason = reason;
  CUMULUS_RETURN_IF_ERROR(Journal(e));
  EndInPolicies(id, false);
  return Status::OK();
}

Status Tuner::Impl::HandleWhere(uint64_t id, Live& live) {
  auto node = TryGet(*live.where, std::chrono::milliseconds(0));
  live.where.reset();
  if (!node.ok()) return HandleFailure(id, node.status());
  live.placed = true;
  // The limit on placement tries is per episode of waiting: a trial placed after a few failed
  // tries starts its next wait (a resume, a restart) from none.
  placement_failures_.erase(id);
  JournalEntry e;
  e.kind = JournalEntry::Kind::kTrialStarted;
  e.trial = id;
  e.node = *node;
  return Journal(e);
}

Status Tuner::Impl::CheckPendingTimeouts() {
  if (spec_.pending_timeout_seconds <= 0) return Status::OK();
  auto limit = std::chrono::seconds(spec_.pending_timeout_seconds);
  std::vector<uint64_t> late;
  size_t placed = 0;
  for (auto& [id, live] : live_) placed += live.placed;
  // While the experiment's own trials fill what the current nodes hold, the others wait for
  // them (max_pending_trials), not for resources that may never come: that wait is not counted.
  bool own_trials_fill = placed >= Capacity();
  for (auto& [id, live] : live_) {
    if (live.placed) continue;
    if (own_trials_fill) {
      live.since = Clock::now();
    } else if (Clock::now() - live.since > limit) {
      late.push_back(id);
    }
  }
  for (uint64_t id : late) {
    std::string want;
    for (auto& [r, a] : spec_.resources)
      want += (want.empty() ? "" : ",") + r + "=" + std::to_string(a);
    CUMULUS_RETURN_IF_ERROR(EndTrial(id, TrialState::kFailed,
                                     "waited " + std::to_string(spec_.pending_timeout_seconds) +
                                         " s for its resources (" + want + " x" +
                                         std::to_string(spec_.gang_size) + ") and got none"));
  }
  return Status::OK();
}

Result<ExperimentResult> Tuner::Impl::Run() {
  auto result = RunLoop();
  if (!result.ok()) {
    // The experiment cannot go on from here (its journal cannot be written, or another driver
    // runs it): its trials stop with it rather than train on unseen. Restore continues them.
    std::vector<uint64_t> ids;
    for (auto& [id, live] : live_) ids.push_back(id);
    for (uint64_t id : ids) Kill(id);
  }
  return result;
}

Result<ExperimentResult> Tuner::Impl::RunLoop() {
  // The budget's clock started with the experiment's first run (Resume counts earlier runs).
  started_ = Clock::now() - earlier_runs_;
  {
    JournalEntry e;
    e.kind = JournalEntry::Kind::kRun;
    e.job = job_;
    CUMULUS_RETURN_IF_ERROR(Journal(e));
  }
  cumulus::internal::Runtime& rt = cumulus::internal::RuntimeOrThrow();
  while (true) {
    if (!budget_spent_ && spec_.time_budget_seconds > 0 &&
        (budget_spent_before_ ||
         Clock::now() - started_ >= std::chrono::seconds(spec_.time_budget_seconds))) {
      budget_spent_ = true;
      for (uint64_t id : fresh_) {
        JournalEntry e;
        e.kind = JournalEntry::Kind::kTrialEnded;
        e.trial = id;
        e.state = static_cast<uint8_t>(TrialState::kStoppedEarly);
        e.reason = "the time budget was spent before it started";
        CUMULUS_RETURN_IF_ERROR(Journal(e));
        EndInPolicies(id, false);
      }
      fresh_.clear();
    }
    CUMULUS_RETURN_IF_ERROR(ApplyStopRequests());
    CUMULUS_RETURN_IF_ERROR(FillSlots());
    CUMULUS_RETURN_IF_ERROR(CheckPendingTimeouts());
    CUMULUS_RETURN_IF_ERROR(RefuseTrialsNoNodeCanHold());
    if (live_.empty() && restart_.empty()) break;

    // Gangs whose placement groups were being reserved.
    bool reserving = false;
    for (auto& [id, live] : live_) {
      if (!live.reserving) continue;
      if (live.reserving->wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
        reserving = true;
        continue;
      }
      auto group = live.reserving->get();
      live.reserving.reset();
      if (!group.ok()) {
        uint64_t failed = id;
        CUMULUS_RETURN_IF_ERROR(HandleFailure(failed, group.status()));
        break;  // live_ changed
      }
      live.group = *group;
      CUMULUS_RETURN_IF_ERROR(CreateActors(id, live, &*live.group));
    }

    // Failing gangs whose look at their other ranks is over (FinishFailure; the loop turns at
    // least every kStopPollInterval, well within the look's 10 s).
    std::vector<uint64_t> failing;
    for (auto& [id, live] : live_)
      if (live.failing) failing.push_back(id);
    for (uint64_t id : failing) {
      auto it = live_.find(id);
      if (it != live_.end() && it->second.failing)
        CUMULUS_RETURN_IF_ERROR(FinishFailure(id, it->second));
    }

    std::vector<ObjectId> ids;
    struct Owner {
      uint64_t trial;
      bool is_where;
      size_t rank;  // of a step
    };
    std::vector<Owner> owners;
    for (auto& [id, live] : live_) {
      if (live.where) {
        ids.push_back(live.where->id());
        owners.push_back(Owner{id, true, 0});
      } else {
        // Every rank's step that has not returned: a gang's rank that fails is seen at once.
        for (size_t rank = 0; rank < live.steps.size(); ++rank) {
          if (live.step_done[rank]) continue;
          ids.push_back(live.steps[rank].id());
          owners.push_back(Owner{id, false, rank});
        }
      }
    }
    int64_t wait_ms =
        reserving || !restart_.empty() ? 100 : progress_options_.progress_interval.count();
    if (spec_.pending_timeout_seconds > 0) wait_ms = std::min<int64_t>(wait_ms, 1000);
    // Stop requests are looked for at least this often, however long the trials' steps take.
    wait_ms = std::min<int64_t>(wait_ms, kStopPollInterval.count());
    std::vector<bool> ready;
    if (!ids.empty()) {
      ready = rt.Wait(ids, 1, std::max<int64_t>(wait_ms, 10));
    } else if (!restart_.empty() || reserving) {
      // Only trials waiting out a placement back-off or a reservation: wake when one is due.
      auto next = Clock::now() + std::chrono::milliseconds(wait_ms);
      for (auto& r : restart_) next = std::min(next, std::max(r.second, Clock::now()));
      std::this_thread::sleep_until(next);
    }
    for (size_t i = 0; i < ready.size(); ++i) {
      if (!ready[i]) continue;
      const Owner& o = owners[i];
      auto it = live_.find(o.trial);
      if (it == live_.end()) continue;
      Live& live = it->second;
      if (o.is_where) {
        if (live.where && live.where->id() == ids[i])
          CUMULUS_RETURN_IF_ERROR(HandleWhere(o.trial, live));
        continue;
      }
      // (Handled already: an earlier rank's failure restarted the trial, or its next step runs.)
      if (o.rank >= live.steps.size() || live.steps[o.rank].id() != ids[i] ||
          live.step_done[o.rank])
        continue;
      CUMULUS_RETURN_IF_ERROR(HandleStep(o.trial, live, o.rank));
    }
    Progress(false);
  }
  // A last look: requests that came since (none is left behind in the control store).
  stops_checked_ = Clock::time_point();
  CUMULUS_RETURN_IF_ERROR(ApplyStopRequests());
  // Paused trials the scheduler never resumed, once nothing else can run.
  std::vector<uint64_t> paused;
  for (auto& [id, t] : state_.trials()) {
    if (t.state == TrialState::kPaused) paused.push_back(id);
  }
  for (uint64_t id : paused) {
    CUMULUS_RETURN_IF_ERROR(EndTrial(id, TrialState::kStoppedEarly,
                                     budget_spent_
                                         ? "paused when the time budget was spent"
                                         : "paused, and not resumed before the experiment ended"));
  }
  JournalEntry end;
  end.kind = JournalEntry::Kind::kExperimentEnded;
  end.reason = budget_spent_ ? kTimeBudgetSpentReason : "every trial ended";
  CUMULUS_RETURN_IF_ERROR(Journal(end));
  Progress(true);
  return state_.ToResult();
}

}  // namespace cumulus::tune
