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

void ActorEnds::Add(ActorEnd e) {
  if (capacity_ == 0) return;
  if (kept_.size() >= capacity_) kept_.pop_front();
  kept_.push_back(std::move(e));
}

void ActorEnds::ForEach(const std::function<void(const ActorEnd&)>& fn) const {
  for (const ActorEnd& e : kept_) fn(e);
}

}  // namespace cumulus
