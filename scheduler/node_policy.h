// NodePolicy: the decisions a node's task router makes about its own queue, as pure functions of
// values (no I/O, no clock of their own), so that they are unit-tested and shared with simulators.
//   - the hop rule: a task forwarded here once is placed only here (it goes on no further; the
//     task router returns it to its sender if it cannot start here, LocalScheduler);
//   - infeasible or wait: "never" only if no node fits, including nodes not reachable lately;
//   - retry backoff: 100 ms, 200 ms, ... up to 5 s, so a task that kills its worker does not spin;
//   - the memory monitor's victim: the newest task that may be retried, else the newest task.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/base/clock.h"
#include "scheduler/placement.h"

namespace cumulus {

// The request as the node holding the task must place it: pinned here once it has hopped.
PlacementRequest RequestAtNode(PlacementRequest req, uint32_t hops, const NodeId& here);

// Places `req` on `reachable` (the nodes this one can use now). An infeasible decision turns into
// kWait if the request fits `everyone` (reachable nodes and those that could not be reached
// lately): such a node may be back soon.
PlacementDecision PlaceOrWait(const ClusterSnapshot& reachable, const ClusterSnapshot& everyone,
                              const PlacementRequest& req);
PlacementDecision PlaceGroupOrWait(const ClusterSnapshot& reachable,
                                   const ClusterSnapshot& everyone,
                                   const std::vector<ResourceSet>& bundles, GroupStrategy strategy);

// How long a task waits before attempt number `attempt` (1 for the first retry).
Duration RetryBackoff(uint32_t attempt);

// True if a task that has run `attempt` retries so far may run again (`max_retries` < 0: always).
bool MayRetry(int max_retries, uint32_t attempt);

// What becomes of a task whose worker died, or whose node was lost while the task was there.
enum class LossOutcome {
  kFailCancelled,  // it was cancelled: fail it as such
  kFailActorDied,  // an actor's constructor whose worker died: the actor died
  kRequeue,        // it had not started (or is an actor to build elsewhere): not an attempt
  kRetryLater,     // an attempt: queue it again after RetryBackoff
  kFailNoRetries,  // an attempt, and none is left
};
struct LostTask {
  bool cancelled = false;
  bool actor_creation = false;
  // Worker died: the worker was running it (not only holding it in its queue). Node lost: the
  // connection had delivered it (it connected).
  bool started = true;
  int max_retries = 3;
  uint32_t attempt = 0;  // retries so far
};
LossOutcome AfterWorkerDied(const LostTask& t);
LossOutcome AfterNodeLost(const LostTask& t);

// A task running on a worker, as the memory monitor sees it.
struct RunningTask {
  bool retriable = false;  // MayRetry
  TimePoint started{};     // when it was handed to its worker
};
// The task to kill when memory runs out: the newest retriable one, else the newest. nullopt if
// `tasks` is empty.
std::optional<size_t> ChooseMemoryVictim(const std::vector<RunningTask>& tasks);

}  // namespace cumulus
