#include "runtime/node/local_scheduler.h"

#include <cstring>

#include "runtime/base/logging.h"
#include "runtime/core/timeline.h"
#include "runtime/head/node_codec.h"
#include "runtime/net/first_segment.h"
#include "runtime/net/frame.h"
#include "scheduler/node_policy.h"

namespace cumulus {

std::string ErrorResultFrame(const TaskId& task, const NodeId& node, const Status& st) {
  capnp::MallocMessageBuilder message(FrameFirstSegmentWords(st.message().size()));
  auto r = message.initRoot<proto::CoreMessage>().initTaskResult();
  r.setTaskId(DataOf(task));
  r.setCode(static_cast<uint16_t>(st.code()));
  r.setMessage(st.message());
  r.setNodeId(DataOf(node));
  return EncodeFrame(message);
}

std::string TaskReturnedFrame(const TaskId& task, const std::string& reason,
                              const ResourceSet& free) {
  capnp::MallocMessageBuilder message(FrameFirstSegmentWords(reason.size()));
  auto r = message.initRoot<proto::CoreMessage>().initTaskReturned();
  r.setTaskId(DataOf(task));
  r.setReason(reason);
  EncodeResources(free, r.initFree(static_cast<unsigned>(free.units().size())));
  return EncodeFrame(message);
}

DemandList LocalScheduler::Schedule(TimePoint now) {
  DemandList pending;
  groups_.Schedule(now, pending);
  ClusterSnapshot snap = node_.Snapshot(now, false);
  auto& queues = tasks_.queues();
  for (auto q = queues.begin(); q != queues.end();) {
    std::deque<TaskId>& queue = q->second;
    while (!queue.empty()) {
      RoutedTask* t = tasks_.Find(queue.front());
      if (!t || t->state != RoutedTask::kQueued) {
        queue.pop_front();
        continue;
      }
      if (!t->req.placement_group.empty()) {
        // Its resources were reserved with the group: no pending demand for it.
        if (!PlaceInGroup(*t, now)) break;
        queue.pop_front();
        continue;
      }
      snap.nodes[0].available = leases_.available();
      if (!PlaceOne(*t, snap, now)) {
        // Pinned: by the caller, or here (forwarded work that stays: a retry, or one that
        // waits for its program).
        PlacementRequest here = RequestAtNode(t->req.placement, t->hops, node_.node_id());
        pending.emplace_back(here.demand, static_cast<uint32_t>(queue.size()),
                             here.labels.ToString(), t->req.purpose, t->wait_reason,
                             IsPinned(here) ? here.affinity_node.Hex() : "");
        break;
      }
      queue.pop_front();
    }
    q = queue.empty() ? queues.erase(q) : std::next(q);
  }
  return pending;
}

// Places one queued task: here, on another node, behind a busy worker of its class, or fails it
// as infeasible. False if it must wait. `snap` is booked with what goes elsewhere.
bool LocalScheduler::PlaceOne(RoutedTask& t, ClusterSnapshot& snap, TimePoint now) {
  PlacementRequest req = RequestAtNode(t.req.placement, t.hops, node_.node_id());
  req.spread_after = last_spread_;
  PlacementDecision d = PlaceTask(snap, req);
  if (d.kind == PlacementDecision::kPlace && req.strategy == PlacementStrategy::kSpread) {
    last_spread_ = d.node;
  }
  if (d.kind == PlacementDecision::kInfeasible && node_.RefreshView(now, false)) {
    // The view may predate a node that joined: ask the head before saying "never". The task
    // waits for the answer, which schedules again. A reason it already had stays (the pending
    // demand, and with it the view's version, does not flip for one round trip).
    if (t.wait_reason.empty()) t.wait_reason = "asking the head for a fresh view of the nodes";
    return false;
  }
  if (d.kind == PlacementDecision::kInfeasible) {  // unless a node out of reach would fit
    d = PlaceOrWait(snap, node_.Snapshot(now, true), req);
  }
  t.wait_reason = d.kind == PlacementDecision::kPlace ? "" : d.reason;
  // Work that must run on one node that is gone (or can never hold it) fails, autoscaler or
  // not: a node an autoscaler launches is another node. (The result of a task pinned to a node
  // that died, run again to rebuild the lost copy, is such work.)
  if (d.kind == PlacementDecision::kInfeasible && options_.wait_for_nodes &&
      !IsPinned(t.req.placement)) {
    // Not "can never run": a node an autoscaler launches may.
    std::string why = d.reason;
    if (const std::string never = "no node can ever run it: "; why.rfind(never, 0) == 0)
      why = why.substr(never.size());
    t.wait_reason =
        "no node that has joined can run it, so it waits for one that can (" + why + ")";
    return ReturnToSender(t, /*anyway=*/true);
  }
  if (d.kind == PlacementDecision::kInfeasible) {
    FailTask(t.id, Status::Infeasible(t.What() + " can never run: " + d.reason));
    return true;
  }
  bool here = d.node == node_.node_id();
  if (d.kind == PlacementDecision::kPlace && here && StartOnNewLease(t, now)) return true;
  if (d.kind == PlacementDecision::kPlace && !here && Forward(t, d.node, now)) {
    for (auto& n : snap.nodes) {
      if (n.id == d.node && n.available.Contains(t.req.placement.demand)) {
        n.available.Subtract(t.req.placement.demand);
      }
    }
    node_.BookView(d.node, t.req.placement.demand, /*take=*/true);
    return true;
  }
  // Small tasks of one shape queue behind a busy worker of theirs rather than wait here; not
  // where an autoscaler may launch nodes: they wait here, seen as pending demand, and go to
  // the new node (a task behind a worker would stay on this node).
  // A draining node queues nothing new behind its workers: it waits to go elsewhere.
  bool draining = !snap.nodes.empty() && snap.nodes[0].draining;
  if (!options_.wait_for_nodes && !draining && !t.actor_creation &&
      t.req.placement.strategy != PlacementStrategy::kSpread && Pipeline(t)) {
    return true;
  }
  return ReturnToSender(t, /*anyway=*/draining);
}

// A task another node forwarded here (hops > 0) is placed only here; when it cannot start for
// want of room (the sender's view of this node predated work that took it), or no node that has
// joined could run it where an autoscaler may launch one, or it cannot start on this draining
// node, it goes back to the sender with what is free here. The sender still holds it and places
// it again on its own view, which then shows this node no freer than that until the head
// reports it anew. Waiting here instead stranded it: pending demand an autoscaler launched nodes
// for, that it could never move to. Not a task that must run here (hard affinity to this node),
// one that ran here already (its retries are counted here), nor one that waits for a worker slot
// or its job's program (room is there). `anyway`: whatever this node has free.
bool LocalScheduler::ReturnToSender(RoutedTask& t, bool anyway) {
  const PlacementRequest& asked = t.req.placement;
  if (t.hops == 0 || t.attempt > 0 || t.waiting_for_program) return false;
  if (IsPinned(asked) && asked.affinity_node == node_.node_id()) return false;
  if (!anyway && leases_.available().Contains(asked.demand)) return false;
  std::string reason =
      t.wait_reason.empty() ? "no room for " + asked.demand.ToString() + " now" : t.wait_reason;
  node_.SendToConn(t.origin, TaskReturnedFrame(t.id, reason, leases_.available()));
  tasks_.Erase(t.id);
  returned_++;
  return true;
}

// Starts `t` on a worker of its own lease from this node's free resources, or from `bundle`'s.
// True when it left the queue: started, waiting to try its program's fetch again, or failed.
// False while it must wait (no room, or its job's program is being fetched: the fetch's end
// schedules again).
bool LocalScheduler::StartOnNewLease(RoutedTask& t, TimePoint now, HeldBundle* bundle) {
  LeaseRequest req{t.job, t.req.placement.demand, t.class_key, t.actor_creation, t.detached};
  std::string wait;
  auto w = leases_.Start(req, bundle, now, &wait);
  if (!w.ok()) {
    NoWorker(t, w.status(), now);
    return true;
  }
  if (!*w) {
    t.wait_reason = std::move(wait);
    return false;
  }
  Assign(**w, t);
  return true;
}

// No worker could be started for `t`. A program that cannot be fetched yet (the head is
// restarting, or the driver's node cannot be reached now) is tried again in a second, for
// `program_wait`; anything else fails the task.
void LocalScheduler::NoWorker(RoutedTask& t, const Status& why, TimePoint now) {
  if (why.code() == StatusCode::kUnavailable &&
      !(t.waiting_for_program && now - t.waiting_since > options_.program_wait)) {
    if (!t.waiting_for_program) {
      CUMULUS_LOG(WARN) << "node: cannot start a worker for " << t.function << " yet ("
                        << why.message() << "); it waits";
      t.waiting_since = now;
    }
    t.waiting_for_program = true;
    tasks_.RequeueAt(t, now + std::chrono::seconds(1));
    return;
  }
  std::string message = why.message();
  if (why.code() == StatusCode::kUnavailable) {
    message = "the job's program could not be fetched for " +
              std::to_string(
                  std::chrono::duration_cast<std::chrono::seconds>(options_.program_wait).count()) +
              " s (" + message + ")";
  }
  t.waiting_for_program = false;
  FailTask(t.id, Status(why.code(), "cannot start a worker for " + t.function + ": " + message));
}

bool LocalScheduler::Pipeline(RoutedTask& t) {
  Worker* best = leases_.workers().FindPipelined(t.job, t.class_key, options_.pipeline_depth);
  if (!best) return false;
  Assign(*best, t);
  return true;
}

void LocalScheduler::Assign(Worker& w, RoutedTask& t) {
  t.state = RoutedTask::kOnWorker;
  t.worker = w.id;
  t.assigned_at = clock_.Now();
  if (t.actor_creation) {
    w.actor = t.actor;
    w.actor_class = t.function;
    w.actor_life = t.actor_life;
    w.actor_max_restarts = t.max_restarts;
    w.actor_restart_cause = t.restart_cause;
    w.actor_type = t.actor_type;
  }
  t.dispatched_us = TimelineNowMicros();
  w.assigned.push_back(t.id);
  if (w.conn) node_.SendToConn(w.conn, t.frame);  // else sent when the worker says hello
}

bool LocalScheduler::Forward(RoutedTask& t, const NodeId& node, TimePoint now) {
  // The first of a job's tasks to go there takes where the job's program is.
  const std::string* record = leases_.programs().Record(t.job);
  if (record && !told_.count({node, t.job})) {
    capnp::MallocMessageBuilder info(FrameFirstSegmentWords(record->size()));
    auto j = info.initRoot<proto::CoreMessage>().initJobInfo();
    j.setJobId(DataOf(t.job));
    j.setRecord(
        capnp::Data::Reader(reinterpret_cast<const uint8_t*>(record->data()), record->size()));
    if (!node_.SendToNode(node, EncodeFrame(info), now, true)) return false;
    told_.insert({node, t.job});
  }
  // Mark the spec as forwarded once (hops = 1) so the other node does not pass it on again.
  kj::Array<capnp::word> words =
      kj::heapArray<capnp::word>((t.frame.size() - kFrameHeaderBytes) / 8);
  std::memcpy(words.begin(), t.frame.data() + kFrameHeaderBytes, words.size() * 8);
  capnp::FlatArrayMessageReader reader(words);
  capnp::MallocMessageBuilder message(FrameFirstSegmentWords(words.size() * sizeof(capnp::word)));
  message.setRoot(reader.getRoot<proto::CoreMessage>());
  message.getRoot<proto::CoreMessage>().getSubmitTask().setHops(t.hops + 1);
  if (!node_.SendToNode(node, EncodeFrame(message), now, true)) return false;
  t.state = RoutedTask::kForwarded;
  t.forwarded_to = node;
  return true;
}

void LocalScheduler::FailTask(const TaskId& id, const Status& st) {
  RoutedTask* t = tasks_.Find(id);
  if (!t) return;
  node_.SendToConn(t->origin, ErrorResultFrame(id, node_.node_id(), st));
  if (options_.on_failed) options_.on_failed(*t, st);
  tasks_.Erase(id);
  failed_++;
}

// A task in a placement group runs on the node holding its bundle, from the bundle's resources.
// True when it left the queue: started, forwarded or failed.
bool LocalScheduler::PlaceInGroup(RoutedTask& t, TimePoint now) {
  auto fail = [&](const Status& st) {
    FailTask(t.id, st);
    return true;
  };
  std::string what = t.What();
  if (t.req.placement_group.size() != PlacementGroupId::kSize) {
    return fail(Status::InvalidArgument(what + " names a malformed placement group id"));
  }
  PlacementGroupId gid = PlacementGroupId::FromBinary(t.req.placement_group);
  if (t.req.bundle_index < 0) {
    return fail(Status::InvalidArgument(what + " asks for bundle " +
                                        std::to_string(t.req.bundle_index) +
                                        " of a placement group: give an index from 0"));
  }
  uint32_t index = static_cast<uint32_t>(t.req.bundle_index);
  std::string bundle_name = "bundle " + std::to_string(index) + " of placement group " + gid.Hex();
  const std::string here = node_.node_id().Hex();
  if (HeldBundle* b = leases_.bundles().Find({gid, index})) {
    if (!b->pool.total().Contains(t.req.placement.demand)) {
      return fail(Status::Infeasible(what + " asks for " + t.req.placement.demand.ToString() +
                                     " but " + bundle_name + " holds only " +
                                     b->pool.total().ToString()));
    }
    if (!t.req.placement.labels.Matches(options_.labels)) {
      return fail(Status::Infeasible(what + ": " + bundle_name + " is on node " + here +
                                     ", whose labels do not match " +
                                     t.req.placement.labels.ToString()));
    }
    if (StartOnNewLease(t, now, b)) return true;
    return !t.actor_creation && Pipeline(t);
  }
  if (t.hops > 0) {
    return fail(Status::NotFound(what + ": " + bundle_name + " is no longer held on node " + here +
                                 " (the group was removed, or its job ended)"));
  }
  auto located = groups_.Locate(gid);
  if (!located.ok()) {
    if (located.status().code() == StatusCode::kUnavailable) return false;  // wait
    return fail(Status(located.status().code(), what + ": " + located.status().message()));
  }
  const std::vector<NodeId>& nodes = located->second;
  if (index >= nodes.size()) {
    return fail(Status::InvalidArgument(what + " asks for bundle " + std::to_string(index) +
                                        " but placement group " + gid.Hex() + " has " +
                                        std::to_string(nodes.size()) + " bundles"));
  }
  if (nodes[index] == node_.node_id()) {
    groups_.ForgetLocation(gid);
    return fail(Status::NotFound(what + ": " + bundle_name +
                                 " is no longer held (the group was removed, or its job ended)"));
  }
  return Forward(t, nodes[index], now);
}

void LocalScheduler::WorkerDied(const Worker& w, const std::string& why, TimePoint now) {
  const std::string here = node_.node_id().Hex();
  bool first = true;
  for (const TaskId& id : w.assigned) {
    RoutedTask* t = tasks_.Find(id);
    if (!t) continue;
    LostTask lost{t->cancelled, t->actor_creation, first, t->max_retries, t->attempt};
    first = false;
    switch (AfterWorkerDied(lost)) {
      case LossOutcome::kFailCancelled:
        FailTask(id, Status::Cancelled("task " + t->function + " was cancelled while running"));
        break;
      case LossOutcome::kFailActorDied:
        FailTask(id, Status::ActorDied("the worker of actor " + t->function + " died (" + why +
                                       ") on node " + here));
        break;
      case LossOutcome::kRequeue:
        tasks_.Requeue(*t, /*front=*/true);
        break;
      case LossOutcome::kRetryLater:
        t->AddAttempt({here, w.spawned_pid, why, clock_.WallMicros()});
        t->attempt++;
        CUMULUS_LOG(WARN) << "node: the worker running " << t->function << " " << why
                          << "; retrying (attempt " << t->attempt + 1 << ")";
        tasks_.RequeueAt(*t, now + RetryBackoff(t->attempt));
        break;
      case LossOutcome::kFailNoRetries:
        FailTask(id, Status::Unavailable("the worker running task " + t->function + " " + why +
                                         " on node " + here + "; no retries left"));
        break;
    }
  }
}

void LocalScheduler::NodeLost(const NodeId& node, const std::string& why, TimePoint now,
                              bool delivered) {
  std::string where = "node " + node.Hex() + " (" + why + ")";
  // The job records sent on that connection may not have arrived: send them again next time.
  for (auto it = told_.begin(); it != told_.end();) {
    it = it->first == node ? told_.erase(it) : std::next(it);
  }
  for (const TaskId& id : tasks_.ForwardedTo(node)) {
    RoutedTask& t = *tasks_.Find(id);
    switch (AfterNodeLost({t.cancelled, t.actor_creation, delivered, t.max_retries, t.attempt})) {
      case LossOutcome::kRequeue:
        tasks_.Requeue(t, /*front=*/true);
        break;
      case LossOutcome::kFailCancelled:
        FailTask(id, Status::Cancelled("task " + t.function + " was cancelled"));
        break;
      case LossOutcome::kRetryLater:
        t.AddAttempt({node.Hex(), -1,
                      "lost the connection to node " + node.Hex() + " (" + why + ")",
                      clock_.WallMicros()});
        t.attempt++;
        CUMULUS_LOG(WARN) << "node: lost the connection to " << where << " while it ran "
                          << t.function << "; retrying (attempt " << t.attempt + 1 << ")";
        tasks_.RequeueAt(t, now + RetryBackoff(t.attempt));
        break;
      case LossOutcome::kFailActorDied:
      case LossOutcome::kFailNoRetries:
        FailTask(id, Status::Unavailable("lost the connection to " + where + " while it ran " +
                                         t.function + "; no retries left"));
        break;
    }
  }
}

void LocalScheduler::ForgetJob(const JobId& job) {
  for (auto it = told_.begin(); it != told_.end();) {
    it = it->second == job ? told_.erase(it) : std::next(it);
  }
}

}  // namespace cumulus
