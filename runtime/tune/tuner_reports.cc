// The tuner's side of a trial's report: the step's result read and journaled, the trial
// scheduler's decision applied (continue, pause, stop, PBT's exploit with the donor's checkpoint
// copied first); see tuner_impl.h.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "runtime/tune/tuner_impl.h"
#include "workers/core_worker.h"

namespace cumulus::tune {

Status Tuner::Impl::HandleStep(uint64_t id, Live& live, size_t rank) {
  auto got = TryGet(live.steps[rank], std::chrono::milliseconds(0));
  if (!got.ok()) return HandleStepFailure(id, live, rank, got.status());
  live.step_done[rank] = true;
  if (live.failing) return FinishFailure(id, live);
  if (std::find(live.step_done.begin(), live.step_done.end(), false) != live.step_done.end())
    return Status::OK();  // the others' next
  auto first = rank == 0 ? std::move(got) : TryGet(live.steps[0], std::chrono::milliseconds(0));
  if (!first.ok()) return HandleStepFailure(id, live, 0, first.status());
  StepResult r = std::move(*first);
  const TrialStatus& t = state_.trials().at(id);
  if (r.done) {  // a train function returned
    JournalEntry e;
    e.kind = JournalEntry::Kind::kTrialEnded;
    e.trial = id;
    e.state = static_cast<uint8_t>(TrialState::kFinished);
    e.reason = "the train function returned";
    Kill(id);
    CUMULUS_RETURN_IF_ERROR(Journal(e));
    EndInPolicies(id, true);
    return Status::OK();
  }
  int64_t iteration = ++live.host_iteration;
  if (iteration <= t.iteration) {  // catching up to where it was before its checkpoint
    SubmitStep(id, live);
    return Status::OK();
  }
  auto m = r.metrics.find(spec_.metric);
  if (m == r.metrics.end()) {
    std::string got;
    for (auto& [k, v] : r.metrics) got += (got.empty() ? "" : ", ") + k;
    return EndTrial(
        id, TrialState::kFailed,
        "it reported {" + got + "} without the experiment's metric '" + spec_.metric + "'");
  }
  for (auto& [k, v] : r.metrics) {
    if (!std::isfinite(v)) {
      return EndTrial(id, TrialState::kFailed,
                      "it reported " + k + " = " + std::to_string(v) + " at iteration " +
                          std::to_string(iteration));
    }
  }
  Decision d = scheduler_->OnReport(TrialReport{id, iteration, m->second});
  JournalEntry e;
  e.kind = JournalEntry::Kind::kReport;
  e.trial = id;
  e.iteration = iteration;
  e.metrics = r.metrics;
  e.seconds = r.seconds;
  e.node = r.node;
  e.action = static_cast<uint8_t>(d.action);
  e.reason = d.reason;
  bool finished = iteration >= spec_.max_iterations;
  for (auto& [k, limit] : spec_.stop) {
    auto v = r.metrics.find(k);
    if (v == r.metrics.end()) continue;
    bool down = k == spec_.metric && !spec_.maximize;
    if (down ? v->second <= limit : v->second >= limit) {
      finished = true;
      e.reason = "stop condition " + k + (down ? " <= " : " >= ") + std::to_string(limit);
    }
  }
  if (finished) {
    e.action = kActionFinished;
    if (iteration >= spec_.max_iterations) e.reason = "reached max_iterations";
  } else if (budget_spent_) {
    e.action = kActionBudgetStop;
    e.reason = "the time budget is spent";
  }
  if (d.action == Action::kExploit && e.action == static_cast<uint8_t>(Action::kExploit)) {
    // The donor's checkpoint is copied first and the report names the copy: one append says
    // both, so a restore never sees the new config without the checkpoint it goes with.
    e.exploit_from = d.exploit_from;
    CUMULUS_ASSIGN_OR_RETURN(std::string skipped,
                             CopyDonorCheckpoint(id, iteration, d.exploit_from, &e));
    if (skipped.empty()) {
      e.config = d.new_config.Encode();
    } else {
      e.config = t.config.Encode();
      e.reason = kExploitSkippedReason + skipped;
      scheduler_->OnExploitSkipped(id);  // (replayed the same way: Replay)
    }
  }
  std::optional<JournalEntry> old_checkpoint = t.checkpoint;
  if (r.has_checkpoint && e.checkpoint_key.empty()) {
    CUMULUS_RETURN_IF_ERROR(journal_->PutCheckpoint(id, iteration, r.checkpoint, &e));
  }
  CUMULUS_RETURN_IF_ERROR(Journal(e));
  if (!e.checkpoint_key.empty() && old_checkpoint &&
      old_checkpoint->checkpoint_key != e.checkpoint_key)
    (void)journal_->DeleteCheckpoint(*old_checkpoint);
  return ApplyDecision(id, e);
}

Result<std::string> Tuner::Impl::CopyDonorCheckpoint(uint64_t id, int64_t iteration,
                                                     uint64_t donor_id, JournalEntry* report) {
  const TrialStatus& donor = state_.trials().at(donor_id);
  std::string donor_name = TrialName(donor_id);
  std::string bytes;
  // The donor's checkpoint of its last perturbation boundary or later (each trial checkpoints
  // at its boundaries: SubmitStep) is its weights as PBT ranks them, as in Ray's PBT. A running
  // class donor whose stored checkpoint is older (before its first boundary under
  // checkpoint_every 0; a journal written before boundary checkpoints) saves one now, as a paused
  // trial does, waiting behind its step in flight: the exploit copies the weights that earned
  // the donor's score, not stale ones labelled with its current iteration.
  // A donor whose gang is failing (its other ranks being looked at) is no donor: its weights may
  // be those that failed, and a save would queue behind a rank stuck in its collective.
  if (live_.count(donor_id) && live_.at(donor_id).failing) {
    return donor_name + " is failing (" + live_.at(donor_id).failing->why.message() + ")";
  }
  bool can_save = !spec_.is_function && live_.count(donor_id) && live_.at(donor_id).placed;
  int64_t boundary = donor.iteration - donor.iteration % std::max<int64_t>(spec_.pbt_interval, 1);
  bool current = donor.checkpoint && donor.checkpoint->iteration >= boundary;
  if (donor.checkpoint && (current || !can_save)) {
    auto got = tune::Journal::GetCheckpoint(journal_->head(), *donor.checkpoint);
    if (!got.ok()) return donor_name + "'s checkpoint could not be read: " + got.status().message();
    bytes = std::move(*got);
  } else if (can_save) {
    auto saved = TryGet(live_.at(donor_id).actors[0].Task(&TrialHost::Save).Remote(),
                        std::chrono::minutes(5));
    if (!saved.ok())
      return donor_name + " could not save a checkpoint: " + saved.status().message();
    bytes = std::move(*saved);
  }
  if (bytes.empty()) {
    return donor_name + " has no checkpoint to copy (" +
           (spec_.is_function ? std::string("its train function reported none")
            : can_save        ? std::string("its Save() returned no bytes")
                              : "checkpoint_every " + std::to_string(spec_.checkpoint_every) +
                             ", and its actors are gone") +
           ")";
  }
  CUMULUS_RETURN_IF_ERROR(
      journal_->PutCheckpoint(id, iteration, bytes, report, "from" + std::to_string(donor_id)));
  return std::string();
}

Status Tuner::Impl::ApplyDecision(uint64_t id, const JournalEntry& report) {
  Live& live = live_.at(id);
  switch (report.action) {
    case static_cast<uint8_t>(Action::kContinue):
      SubmitStep(id, live);
      return Status::OK();
    case kActionFinished:
      Kill(id);
      EndInPolicies(id, true);
      return Status::OK();
    case kActionBudgetStop:
    case static_cast<uint8_t>(Action::kStop):
      Kill(id);
      EndInPolicies(id, false);
      return Status::OK();
    case static_cast<uint8_t>(Action::kPause): {
      const TrialStatus& t = state_.trials().at(id);
      if (!spec_.is_function && (!t.checkpoint || t.checkpoint->iteration != report.iteration)) {
        auto bytes =
            TryGet(live.actors[0].Task(&TrialHost::Save).Remote(), std::chrono::minutes(5));
        if (bytes.ok() && !bytes->empty()) {
          JournalEntry c;
          c.kind = JournalEntry::Kind::kCheckpoint;
          c.trial = id;
          c.iteration = report.iteration;
          CUMULUS_RETURN_IF_ERROR(journal_->PutCheckpoint(id, report.iteration, *bytes, &c));
          std::optional<JournalEntry> old = t.checkpoint;
          CUMULUS_RETURN_IF_ERROR(Journal(c));
          if (old) (void)journal_->DeleteCheckpoint(*old);
        }
      }
      Kill(id);
      return Status::OK();
    }
    case static_cast<uint8_t>(Action::kExploit): {
      // Skipped (no donor checkpoint to copy; the report says why): it goes on as it was.
      if (IsSkippedExploit(report)) {
        SubmitStep(id, live);
        return Status::OK();
      }
      // Continue from the copy of the donor's checkpoint and the new config, both in the state
      // from the report.
      Kill(id);
      restart_.emplace_front(id, Clock::time_point());
      return Status::OK();
    }
  }
  return Status::Internal("unknown action in a report");
}

}  // namespace cumulus::tune
