#include "runtime/node/handoff_ledger.h"

namespace cumulus {

void HandoffLedger::Begin(const std::vector<ObjectId>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  in_round_.clear();
  freed_in_round_.clear();
  in_round_.insert(ids.begin(), ids.end());
}

std::vector<std::pair<ObjectId, NodeId>> HandoffLedger::Freed(const std::vector<ObjectId>& ids) {
  std::vector<std::pair<ObjectId, NodeId>> elsewhere;
  std::lock_guard<std::mutex> lock(mu_);
  for (const ObjectId& id : ids) {
    auto h = handed_.find(id);
    if (h != handed_.end()) {
      elsewhere.emplace_back(id, h->second);
      handed_.erase(h);  // freed once: a second free has nothing more to free
    } else if (in_round_.count(id)) {
      freed_in_round_.insert(id);
    }
  }
  return elsewhere;
}

std::vector<ObjectId> HandoffLedger::End(const NodeId& to, const std::vector<ObjectId>& taken) {
  std::vector<ObjectId> freed;
  std::lock_guard<std::mutex> lock(mu_);
  std::unordered_set<ObjectId> pending;
  for (const ObjectId& id : taken) {
    if (freed_in_round_.count(id)) {
      freed.push_back(id);
    } else {
      pending.insert(id);
    }
  }
  // Until Commit, frees of what the taker took are kept as during the round.
  in_round_ = std::move(pending);
  freed_in_round_.clear();
  taker_ = to;
  return freed;
}

std::vector<ObjectId> HandoffLedger::Commit(bool recorded) {
  std::vector<ObjectId> free_there;
  std::lock_guard<std::mutex> lock(mu_);
  for (const ObjectId& id : in_round_) {
    if (!recorded || freed_in_round_.count(id)) {
      free_there.push_back(id);
    } else {
      handed_[id] = taker_;
    }
  }
  in_round_.clear();
  freed_in_round_.clear();
  return free_there;
}

}  // namespace cumulus
