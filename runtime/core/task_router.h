// TaskRouter: the node's half of running tasks and actors, and the composition root of the units
// that do it (runtime/node/: WorkerPool, JobProgramCache, RemoteNodes, GroupCoordinator;
// scheduler/: ResourcePool, BundleTable, NodePolicy). One event-loop thread (runtime/net/) that
//   - accepts drivers and workers on a Unix socket (core.sock, 0600) and other nodes on TCP
//     (cluster token first);
//   - places each submitted task with scheduler/placement.h over a snapshot: this node's exact
//     free resources plus the head's view of the others. Local first; otherwise it forwards the
//     task once to a node that can run it (spillback); work that fits the cluster but not now
//     waits here and is reported as pending demand; work no node could run fails at once;
//   - keeps a pool of worker processes per job (the job's program, fetched once per node from
//     the driver's node over the object channel), leases them to tasks, pipelines small tasks of
//     one shape onto a leased worker, and starts a dedicated worker per actor with
//     CUDA_VISIBLE_DEVICES set to the GPUs it was given;
//   - routes each result back the way its task came;
//   - retries a task whose worker died (up to its max_retries), frees objects, cancels tasks,
//     and ends a job's workers when its driver disconnects.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/core/messages.h"
#include "runtime/core/timeline.h"
#include "runtime/head/membership.h"
#include "runtime/net/tcp.h"
#include "runtime/node/finished_tasks.h"
#include "runtime/object_store/object_store.h"
#include "scheduler/resources.h"

namespace cumulus {

struct TaskRouterOptions {
  NodeId node_id;
  std::string socket_path;  // core.sock
  std::string bind_host = "127.0.0.1";
  std::string token;
  HostPort head;
  ObjectStore* store = nullptr;  // the node's store; must outlive the router
  std::string store_socket;
  std::string transfer_address;
  std::string work_dir;                       // job programs are cached here
  uint64_t program_cache_bytes = 2ull << 30;  // bound of work_dir/jobs (see JobProgramCache)
  ResourceSet total;
  Labels labels;
  std::vector<uint32_t> gpu_ids;
  size_t max_task_workers = 0;  // 0: max(4, 2 x CPUs)
  size_t pipeline_depth = 16;   // tasks queued on one leased worker
  bool wait_for_nodes = false;  // work no node can run waits (LocalSchedulerOptions)
  // The memory monitor: when the machine's memory use reaches this fraction, the newest task
  // that may be retried is killed (1 turns it off); checked this often. With a worker memory
  // limit (bytes), the workers' private memory against it is watched instead (MemoryMonitor).
  double memory_threshold = 0.95;
  Duration memory_check_every = std::chrono::milliseconds(250);
  uint64_t memory_worker_limit = 0;  // 0: the machine's memory
  // The task timeline's ring, in events (runtime/core/timeline.h); 0 turns the timeline off
  // here and in the workers started here (CUMULUS_TIMELINE=0 in their environment).
  size_t timeline_events = kDefaultTimelineEvents;
  // Ended tasks kept for `cumulus list tasks` / `describe task` (runtime/node/finished_tasks.h);
  // 0 keeps none.
  size_t finished_tasks = kDefaultFinishedTasks;
  // A driver attached to this node went away (called on the router's thread; must not block).
  std::function<void(const JobId&)> on_job_end;
  // A worker died under work (for `cumulus status`'s recent failures; same thread rules).
  std::function<void(const std::string&)> on_failure;
  // Owners freed `ids`, whose copies here were deleted (same thread rules): returns those whose
  // copies were handed on to other nodes (a drain: HandoffLedger), each with the node to free it
  // on too.
  std::function<std::vector<std::pair<ObjectId, NodeId>>(const std::vector<ObjectId>& ids)>
      on_freed_here;
  // The node's time, for its units (tests move a FakeClock by hand); must outlive the router.
  // The event loop's own deadlines (connects, unauthenticated peers) keep the system clock.
  Clock* clock = &SystemClock::Get();
};

// What the node's metrics endpoint shows of the router (runtime/metrics/node_metrics.h): counts
// the loop publishes once a second, and counters since the router started.
struct RouterMetrics {
  // Tasks held now by state, as `cumulus list tasks` names them: QUEUED, RUNNING, FORWARDED
  // (sent to another node), RETRY_WAIT.
  std::map<std::string, uint64_t> tasks;
  uint64_t tasks_finished = 0;   // results of this node's workers without an error
  uint64_t tasks_failed = 0;     // results of its workers with one, and tasks failed here
  uint64_t actors_pending = 0;   // actor creations held here (waiting, or the constructor runs)
  uint64_t actors_alive = 0;     // actors whose worker runs here
  uint64_t actors_dead = 0;      // actors whose worker here ended
  uint64_t workers = 0;          // worker processes now
  uint64_t worker_failures = 0;  // workers that died under work (what `cumulus status` lists)
  uint64_t tasks_returned = 0;   // tasks forwarded here, returned to their sender unstarted
  uint64_t oom_kills = 0;        // tasks the memory monitor killed
};

// What a node still runs or serves, for a drain: it may leave only when idle() and its store
// holds nothing others may read (the node daemon checks that part).
struct NodeWork {
  bool draining = false;    // the head's view marks this node DRAINING
  size_t tasks = 0;         // held: queued, running here, or forwarded and not answered yet
  size_t actors = 0;        // workers hosting an actor
  size_t busy_workers = 0;  // workers with tasks assigned
  size_t bundles = 0;       // placement-group bundles held here
  size_t drivers = 0;       // drivers connected to this node
  bool idle() const { return !tasks && !actors && !busy_workers && !bundles && !drivers; }
  // The counts summed (the heartbeat's `work`): 0 exactly when idle().
  size_t held() const { return tasks + actors + busy_workers + bundles + drivers; }
  // "2 tasks, 1 actor" (what is not zero), "" when idle.
  std::string ToString() const;
};

class TaskRouter {
 public:
  static Result<std::unique_ptr<TaskRouter>> Start(const TaskRouterOptions& options);
  ~TaskRouter();  // kills the workers it started

  // host:port where other nodes connect.
  std::string core_address() const;
  const std::string& socket_path() const;

  // From the node daemon's heartbeat thread.
  void UpdateView(const std::vector<NodeRecord>& nodes);
  void SetNodeId(const NodeId& id);
  ResourceSet Available() const;
  DemandList PendingDemand() const;
  // How long each worker took from being spawned to saying hello, in microseconds (cold start).
  std::vector<int64_t> WorkerStartupMicros() const;
  // The tasks on this node (at most `limit`, refreshed every second) and how many in all.
  std::vector<TaskStateRow> Tasks(size_t limit, size_t* total) const;
  // The counts above as last published (at most a second old); thread-safe.
  RouterMetrics Metrics() const;
  // What the node runs or serves (refreshed on the router's loop every 50 ms).
  NodeWork Work() const;
  // A draining node handed `ids` to node `to` (object channel `transfer`): the owners among the
  // drivers and workers of every alive node are told (objectsMoved), so that they read and free
  // them there. Thread-safe; the messages go out from the router's loop, in order before any
  // message sent later on the same connections.
  void AnnounceMoves(const NodeId& to, const std::string& transfer,
                     const std::vector<ObjectId>& ids);
  // Frees the copies of `ids` on node `node` (a draining node's round found that their owners
  // freed them while the taker took them). Thread-safe; returns at once.
  void FreeOn(const NodeId& node, const std::vector<ObjectId>& ids);

  class Impl;

 private:
  explicit TaskRouter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cumulus
