#include "runtime/node/actor_ends.h"

namespace cumulus {

std::string ActorEndCause(const std::string& why, bool* by_user) {
  *by_user = why == "exited with status " + std::to_string(kKilledByCallerExitStatus);
  if (*by_user) return "killed by user (cumulus kill)";
  // (A worker killed by a handle, or by its owner ending, exits with status 0.)
  if (why == "exited with status 0") return "killed by its owner (a handle's Kill, or it ended)";
  if (why.rfind("killed by signal", 0) == 0 || why.rfind("exited with status", 0) == 0) {
    return "its worker crashed: " + why;
  }
  return why;
}

std::string ActorEndState(const ActorEnd& e, std::string* death) {
  death->clear();
  if (e.with_job) {
    *death = "owner died (its job ended)";
    return "DEAD";
  }
  if (e.cause.rfind("killed by its owner", 0) == 0) {
    *death = e.cause;
    return "DEAD";
  }
  bool restarts_left = e.max_restarts < 0 || e.life < e.max_restarts;
  if (restarts_left && e.job_ended) {
    *death = "owner died (its job ended)";  // before its owner restarted it
    return "DEAD";
  }
  if (restarts_left) return "RESTARTING";
  *death = e.by_user ? e.cause
                     : "out of restarts (max_restarts " + std::to_string(e.max_restarts) +
                           "): " + e.cause;
  return "DEAD";
}

void ActorEnds::Add(ActorEnd e) {
  if (capacity_ == 0) return;
  if (kept_.size() >= capacity_) kept_.pop_front();
  kept_.push_back(std::move(e));
}

void ActorEnds::AddPending(ActorEnd e) {
  if (capacity_ == 0) return;
  if (pending_.size() >= capacity_) pending_.pop_front();
  pending_.push_back(std::move(e));
}

void ActorEnds::NodeDead(const std::string& node, int64_t now_micros) {
  std::deque<ActorEnd> left;
  for (ActorEnd& e : pending_) {
    if (now_micros - e.ended_micros > kPendingMicros) continue;  // its node outlived it
    if (e.node != node) {
      left.push_back(std::move(e));
      continue;
    }
    std::string dead = "its node " + node + " was declared dead by the head";
    e.cause = e.cause == dead ? dead : dead + " (its owner had seen: " + e.cause + ")";
    Add(std::move(e));
  }
  pending_.swap(left);
}

void ActorEnds::EndJob(const JobId& job) {
  for (std::deque<ActorEnd>* ends : {&kept_, &pending_}) {
    for (ActorEnd& e : *ends) {
      if (e.job == job) e.job_ended = true;  // detached too: only its owner restarts an actor
    }
  }
}

void ActorEnds::ForEach(const std::function<void(const ActorEnd&)>& fn) const {
  for (const ActorEnd& e : kept_) fn(e);
}

void ActorEnds::ForEachNewestFirst(const std::function<void(const ActorEnd&)>& fn) const {
  for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) fn(*it);
}

}  // namespace cumulus
