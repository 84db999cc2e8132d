// The tuner's side of `cumulus stop trial`: requests in the head's control store end trials as
// STOPPED "stopped by user"; see stop_requests.h and tuner_impl.h.
#include <algorithm>
#include <cstdio>

#include "runtime/tune/tuner_impl.h"

namespace cumulus::tune {

Status Tuner::Impl::ApplyStopRequests() {
  auto now = Clock::now();
  if (stops_checked_ != Clock::time_point() && now - stops_checked_ < kStopPollInterval)
    return Status::OK();
  stops_checked_ = now;
  auto requests = PendingStops(journal_->head(), spec_.name);
  // The head not answering now fails the next journal append, which says so; a look that
  // failed is only tried again.
  if (!requests.ok()) return Status::OK();
  for (const StopRequest& r : *requests) {
    auto it = state_.trials().find(r.trial);
    bool open = it != state_.trials().end() && (it->second.state == TrialState::kPending ||
                                                it->second.state == TrialState::kRunning ||
                                                it->second.state == TrialState::kPaused);
    if (open) {
      // (A gang whose placement group is still being reserved has its reservation withdrawn
      // by Kill: the stop does not wait for the reservation.)
      fresh_.erase(std::remove(fresh_.begin(), fresh_.end(), r.trial), fresh_.end());
      restart_.erase(std::remove_if(restart_.begin(), restart_.end(),
                                    [&](auto& x) { return x.first == r.trial; }),
                     restart_.end());
      placement_failures_.erase(r.trial);
      std::string reason = kStoppedByUserReason;
      if (!r.who.empty()) reason += " (" + r.who + ")";
      // Killed, journaled, and ended in the policies as a trial stopped early: a scheduler
      // sees it like any trial that ended before its next rung.
      CUMULUS_RETURN_IF_ERROR(EndTrial(r.trial, TrialState::kStoppedEarly, reason));
      if (progress_options_.progress != "off") {
        std::printf("[%s] %s %s\n", spec_.name.c_str(), TrialName(r.trial).c_str(), reason.c_str());
        std::fflush(stdout);
      }
    }
    // Done, or nothing to do (it ended already, or this experiment never had it).
    (void)ForgetStop(journal_->head(), spec_.name, r.trial);
  }
  return Status::OK();
}

}  // namespace cumulus::tune
