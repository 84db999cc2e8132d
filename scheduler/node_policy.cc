#include "scheduler/node_policy.h"

#include <algorithm>

namespace cumulus {

PlacementRequest RequestAtNode(PlacementRequest req, uint32_t hops, const NodeId& here) {
  if (hops > 0) {
    req.strategy = PlacementStrategy::kNodeAffinity;
    req.affinity_node = here;
    req.affinity_soft = false;
  }
  return req;
}

PlacementDecision PlaceOrWait(const ClusterSnapshot& reachable, const ClusterSnapshot& everyone,
                              const PlacementRequest& req) {
  PlacementDecision d = PlaceTask(reachable, req);
  if (d.kind == PlacementDecision::kInfeasible &&
      PlaceTask(everyone, req).kind != PlacementDecision::kInfeasible) {
    d.kind = PlacementDecision::kWait;
  }
  return d;
}

PlacementDecision PlaceGroupOrWait(const ClusterSnapshot& reachable,
                                   const ClusterSnapshot& everyone,
                                   const std::vector<ResourceSet>& bundles,
                                   GroupStrategy strategy) {
  PlacementDecision d = PlaceGroup(reachable, bundles, strategy);
  if (d.kind == PlacementDecision::kInfeasible &&
      PlaceGroup(everyone, bundles, strategy).kind != PlacementDecision::kInfeasible) {
    d.kind = PlacementDecision::kWait;
  }
  return d;
}

Duration RetryBackoff(uint32_t attempt) {
  uint32_t doublings = std::min<uint32_t>(attempt == 0 ? 0 : attempt - 1, 6);
  Duration backoff = std::chrono::milliseconds(100 << doublings);
  return std::min<Duration>(backoff, std::chrono::seconds(5));
}

bool MayRetry(int max_retries, uint32_t attempt) {
  return max_retries < 0 || static_cast<int64_t>(attempt) < max_retries;
}

LossOutcome AfterWorkerDied(const LostTask& t) {
  if (t.cancelled) return LossOutcome::kFailCancelled;
  if (t.actor_creation) return LossOutcome::kFailActorDied;
  if (!t.started) return LossOutcome::kRequeue;
  return MayRetry(t.max_retries, t.attempt) ? LossOutcome::kRetryLater
                                            : LossOutcome::kFailNoRetries;
}

LossOutcome AfterNodeLost(const LostTask& t) {
  // An actor built there died with the node: it is placed again (its owner's restart count is
  // for actors that died after they were built).
  if (t.actor_creation) return LossOutcome::kRequeue;
  if (t.cancelled) return LossOutcome::kFailCancelled;
  if (!t.started) return LossOutcome::kRequeue;  // it never reached the node
  return MayRetry(t.max_retries, t.attempt) ? LossOutcome::kRetryLater
                                            : LossOutcome::kFailNoRetries;
}

std::optional<size_t> ChooseMemoryVictim(const std::vector<RunningTask>& tasks) {
  std::optional<size_t> victim;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!victim) {
      victim = i;
      continue;
    }
    const RunningTask& v = tasks[*victim];
    const RunningTask& t = tasks[i];
    if ((t.retriable && !v.retriable) || (t.retriable == v.retriable && t.started > v.started)) {
      victim = i;
    }
  }
  return victim;
}

}  // namespace cumulus
