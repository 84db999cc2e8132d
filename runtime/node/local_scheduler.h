// LocalScheduler: where each task a node holds goes next, and what becomes of it when its worker
// or the node it was sent to is lost.
//
// A scheduling pass goes through the TaskTable's queues in order. Each task is placed with
// scheduler/placement.h on a snapshot (this node's exact free resources and the view of the
// others): here on a new lease (WorkerLeases), on another node (forwarded once: hops = 1, so it
// is placed only there; if it cannot start there for want of room, it comes back), behind a busy
// worker of its class (pipelining), in its placement group's bundle, or failed at once if no node
// could ever run it. What cannot be placed now waits and is reported as pending demand; so does a
// task that waits for the head (a view refresh before it is called infeasible, its group's record)
// or for its job's program to be fetched, until the answer schedules again. The decisions are
// NodePolicy's; this class applies them.
//
// Not thread-safe: the node's event loop owns it.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/base/clock.h"
#include "runtime/node/group_coordinator.h"
#include "runtime/node/node_context.h"
#include "runtime/node/task_table.h"
#include "runtime/node/worker_leases.h"

namespace cumulus {

struct LocalSchedulerOptions {
  Labels labels;                                      // this node's
  size_t pipeline_depth = 16;                         // tasks queued on one leased worker
  Duration program_wait = std::chrono::seconds(120);  // for a job's program, then fail
  // A task no node could run waits (reported as pending demand, for an autoscaler to launch a
  // node for) instead of failing as infeasible at once, unless it is pinned (hard node affinity)
  // to a node that is gone or cannot hold it: a launched node is another node; and a task that
  // must wait is not queued behind a busy worker (it would not move to a launched node).
  bool wait_for_nodes = false;
  // Called with each task it fails (FailTask), before the task is forgotten (on the caller's
  // thread; must not touch the TaskTable).
  std::function<void(const RoutedTask&, const Status&)> on_failed;
};

class LocalScheduler {
 public:
  LocalScheduler(NodeContext& node, TaskTable& tasks, WorkerLeases& leases,
                 GroupCoordinator& groups, Clock& clock, LocalSchedulerOptions options)
      : node_(node),
        tasks_(tasks),
        leases_(leases),
        groups_(groups),
        clock_(clock),
        options_(options) {}

  // One pass over the queues. Returns the demand that waits: (shape, how many).
  DemandList Schedule(TimePoint now);

  // Answers the task's origin with `st` and forgets the task.
  void FailTask(const TaskId& id, const Status& st);
  // The tasks `w` held when it ended (`why`): failed, retried, or queued again.
  void WorkerDied(const Worker& w, const std::string& why, TimePoint now);
  // The tasks forwarded to `node`, whose connection was lost (`why`); `delivered`: false if it
  // never connected (nothing reached the node).
  void NodeLost(const NodeId& node, const std::string& why, TimePoint now, bool delivered);
  void ForgetJob(const JobId& job);
  // Tasks failed here (FailTask) since start, for the node's metrics.
  uint64_t failed() const { return failed_; }
  // Tasks forwarded here that went back to their sender (no room here for them) since start.
  uint64_t returned() const { return returned_; }

 private:
  bool PlaceOne(RoutedTask& t, ClusterSnapshot& snap, TimePoint now);
  bool PlaceInGroup(RoutedTask& t, TimePoint now);
  bool StartOnNewLease(RoutedTask& t, TimePoint now, HeldBundle* bundle = nullptr);
  void NoWorker(RoutedTask& t, const Status& why, TimePoint now);
  bool Pipeline(RoutedTask& t);
  void Assign(Worker& w, RoutedTask& t);
  bool Forward(RoutedTask& t, const NodeId& node, TimePoint now);
  bool ReturnToSender(RoutedTask& t, bool anyway);

  NodeContext& node_;
  TaskTable& tasks_;
  WorkerLeases& leases_;
  GroupCoordinator& groups_;
  Clock& clock_;
  LocalSchedulerOptions options_;
  std::set<std::pair<NodeId, JobId>> told_;  // nodes sent a job's record already
  NodeId last_spread_;  // where the last SPREAD task was placed: ties go round from there
  uint64_t failed_ = 0;
  uint64_t returned_ = 0;
};

// A task's failure, as the frame of its result.
std::string ErrorResultFrame(const TaskId& task, const NodeId& node, const Status& st);
// A forwarded task handed back to the node that forwarded it (`reason`: why it could not start).
// `free`: what this node has free as it returns it.
std::string TaskReturnedFrame(const TaskId& task, const std::string& reason,
                              const ResourceSet& free);

}  // namespace cumulus
