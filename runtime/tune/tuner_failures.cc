// The tuner's side of a trial's failure: a trial that threw fails with its error, one whose
// actor or node died resumes from its checkpoint (at most max_failures times), one never placed
// is tried again; a gang's failing rank is told apart from the echo of another rank's death
// (Live::failing) without holding up the controller. See tuner_impl.h.
#include <algorithm>
#include <chrono>
#include <string>

#include "runtime/tune/tuner_impl.h"

namespace cumulus::tune {

Status Tuner::Impl::HandleFailure(uint64_t id, const Status& why) {
  const TrialStatus& t = state_.trials().at(id);
  std::string name = TrialName(id);
  switch (why.code()) {
    case StatusCode::kTaskFailed:
    case StatusCode::kInvalidArgument:
      return EndTrial(id, TrialState::kFailed, why.message());
    case StatusCode::kInfeasible: {
      // The runtime's message names the actor's factory, an internal name, twice ("actor
      // cumulus::tune::MakeTrialHost (...) could not be created: Infeasible: actor ... can
      // never run: WHY"): the user needs WHY.
      std::string reason = why.message();
      for (const char* mark : {"can never run: ", "can never be placed: "}) {
        if (size_t at = reason.rfind(mark); at != std::string::npos) {
          reason = reason.substr(at + std::string(mark).size());
          break;
        }
      }
      return EndTrial(id, TrialState::kFailed,
                      "its resources can never be had on this cluster: " + reason);
    }
    default:
      break;
  }
  bool placed = live_.count(id) && live_.at(id).placed;
  if (!placed && why.code() == StatusCode::kTimedOut) {
    return EndTrial(id, TrialState::kFailed,
                    "its resources were not free in time: " + why.message());
  }
  if (!placed) {
    // It never got its actors (the node chosen for it died before the head knew, say): try
    // again later, without counting it against the trial.
    int tries = ++placement_failures_[id];
    if (tries > 20) {
      return EndTrial(id, TrialState::kFailed,
                      "its actors could not be placed after 20 tries; last: " + why.message());
    }
    Kill(id);
    auto delay = std::chrono::seconds(std::min(10, 1 << std::min(tries - 1, 4)));
    restart_.emplace_back(id, Clock::now() + delay);
    return Status::OK();
  }
  if (t.restarts >= spec_.max_failures) {
    return EndTrial(id, TrialState::kFailed,
                    "its actor died " + std::to_string(t.restarts + 1) + " times (max_failures " +
                        std::to_string(spec_.max_failures) + "); last: " + why.message());
  }
  Kill(id);
  JournalEntry e;
  e.kind = JournalEntry::Kind::kTrialRestarted;
  e.trial = id;
  e.reason =
      "restarting from " +
      (t.checkpoint ? "its checkpoint at iteration " + std::to_string(t.checkpoint->iteration)
                    : std::string("the start")) +
      " after: " + why.message();
  CUMULUS_RETURN_IF_ERROR(Journal(e));
  restart_.emplace_back(id, Clock::time_point());
  return Status::OK();
}

Status Tuner::Impl::HandleStepFailure(uint64_t id, Live& live, size_t rank, const Status& error) {
  if (live.steps.size() == 1) return HandleFailure(id, error);
  // The first rank whose step failed is the one the trial's failure names: the others may only
  // be blocked in (or failing with) a collective operation with it. But a rank's error may also
  // be the echo of another rank's actor dying, which makes the trial restart, not fail: the
  // other ranks' steps are looked at, as they return and for a while (10 s), for such a death,
  // without holding up the controller (the other trials' reports, stop requests) meanwhile.
  live.step_done[rank] = true;  // (not waited on again)
  Status why(error.code(), "rank " + std::to_string(rank) + ": " + error.message());
  if (live.failing) {
    // Another rank's failure after the first: a death is what it says; an error is an echo.
    if (error.code() != StatusCode::kTaskFailed && error.code() != StatusCode::kTimedOut &&
        live.failing->why.code() == StatusCode::kTaskFailed) {
      live.failing->why =
          Status(error.code(), why.message() + " (" + live.failing->why.message() + ")");
    }
  } else {
    live.failing = Live::Failing{why, Clock::now() + std::chrono::seconds(10)};
  }
  return FinishFailure(id, live);
}

Status Tuner::Impl::FinishFailure(uint64_t id, Live& live) {
  bool waiting = false;
  for (size_t r = 0; r < live.steps.size(); ++r) waiting |= !live.step_done[r];
  // Only the trial's own error waits for the others: a death restarts it at once.
  if (live.failing->why.code() == StatusCode::kTaskFailed && waiting &&
      Clock::now() < live.failing->deadline)
    return Status::OK();
  Status why = live.failing->why;
  return HandleFailure(id, why);
}

}  // namespace cumulus::tune
