// TaskRouter: the core protocol as the node answers it (runtime/proto/core.capnp): a
// connection's hello by role (driver, worker, peer), task submissions and results, frees,
// cancels, blocked workers, job records, placement-group messages; and what a connection's
// closing means for each role.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>

#include "runtime/base/logging.h"
#include "runtime/core/messages.h"
#include "runtime/core/task_router_impl.h"
#include "runtime/head/control_client.h"
#include "runtime/head/head_server.h"
#include "runtime/head/node_codec.h"
#include "runtime/net/first_segment.h"

namespace cumulus {

void TaskRouter::Impl::OnFrame(uint64_t id, FrameWords words) {
  try {
    // A handler may read a field more than once: 8 times the frame's words, never the 64M
    // words a frame of zero-sized list elements could make it walk.
    capnp::FlatArrayMessageReader reader(words, CoreReaderOptions(words.size() * 8));
    Handle(id, conns_[id], reader.getRoot<proto::CoreMessage>(), words);
  } catch (const kj::Exception& e) {
    Close(id, std::string("sent a malformed message: ") + e.getDescription().cStr());
  }
}

void TaskRouter::Impl::Handle(uint64_t id, Conn& c, proto::CoreMessage::Reader msg,
                              const FrameWords& words) {
  if (c.role == Role::kUnknown) {
    if (!msg.isHello()) return Close(id, "did not start with hello");
    return HandleHello(id, c, msg.getHello());
  }
  if (c.role == Role::kCaller) {
    switch (msg.which()) {
      case proto::CoreMessage::SUBMIT_TASK: {
        auto spec = msg.getSubmitTask();
        if (spec.getActorCreation() || spec.getActorId().size() > 0 ||
            IdFrom<JobId>(spec.getJobId()).IsNil()) {
          return Close(id, "a caller may submit only normal tasks of a job");
        }
        c.tasks.insert(IdFrom<TaskId>(spec.getTaskId()));
        return HandleSubmit(id, c, spec, words);
      }
      case proto::CoreMessage::CANCEL_TASK: {
        TaskId task = IdFrom<TaskId>(msg.getCancelTask());
        RoutedTask* t = tasks_.Find(task);
        if (t && t->origin == id) HandleCancel(task);
        return;
      }
      case proto::CoreMessage::FREE_OBJECTS:
        return HandleCallerFree(id, c, msg.getFreeObjects());
      case proto::CoreMessage::STATE_QUERY:
        return HandleStateQuery(id, msg.getStateQuery());
      case proto::CoreMessage::TIMELINE_REQUEST:
        return HandleTimelineRequest(id, msg.getTimelineRequest());
      default:
        return Close(id,
                     "a caller may only ask about state or the timeline, submit and cancel tasks, "
                     "and free their results");
    }
  }
  switch (msg.which()) {
    case proto::CoreMessage::SUBMIT_TASK:
      return HandleSubmit(id, c, msg.getSubmitTask(), words);
    case proto::CoreMessage::TASK_RESULT:
      return HandleResult(c, msg.getTaskResult(), words);
    case proto::CoreMessage::FREE_OBJECTS:
      return HandleFree(c, msg.getFreeObjects());
    case proto::CoreMessage::CANCEL_TASK:
      return HandleCancel(IdFrom<TaskId>(msg.getCancelTask()));
    case proto::CoreMessage::JOB_FINISHED:
      return EndJob(IdFrom<JobId>(msg.getJobFinished()), /*tell_peers=*/false);
    case proto::CoreMessage::JOB_INFO: {
      if (c.role != Role::kPeer && c.role != Role::kDriver) return;
      JobId job = IdFrom<JobId>(msg.getJobInfo().getJobId());
      if (c.role == Role::kDriver && job != c.job) {
        return Close(id, "a driver spoke for another job");
      }
      auto r = msg.getJobInfo().getRecord();
      if (!leases_.programs().Remember(
              job, std::string(reinterpret_cast<const char*>(r.begin()), r.size()))) {
        CUMULUS_LOG(WARN) << "node: ignoring a malformed job record for job " << job.Hex();
      }
      return;
    }
    case proto::CoreMessage::WORKER_BLOCKED:
      return HandleBlocked(c, msg.getWorkerBlocked());
    case proto::CoreMessage::OBJECTS_MOVED:
      // Another node handed objects on: the owners among this node's processes follow them.
      if (c.role != Role::kPeer) return Close(id, "only a node may say where objects moved");
      return TellLocalProcesses(FrameOfWords(words));
    case proto::CoreMessage::TIMELINE_EVENTS:
      return HandleTimelineEvents(c, msg.getTimelineEvents());
    case proto::CoreMessage::ACTOR_LOST:
      return HandleActorLost(id, c, msg.getActorLost());
    case proto::CoreMessage::TASK_RETURNED:
      return HandleReturned(id, c, msg.getTaskReturned());
    case proto::CoreMessage::CREATE_GROUP:
      if (c.role == Role::kPeer) return Close(id, "a node may not create a group on another");
      groups_.Create(id, JobOf(c), msg.getCreateGroup());
      schedule_dirty_ = true;
      return;
    case proto::CoreMessage::RESERVE_BUNDLES: {
      if (c.role != Role::kPeer) return Close(id, "only a node may reserve bundles");
      Reservation r = DecodeReservation(msg.getReserveBundles());
      Status st = r.error.ok() ? ReserveHere(r.id, r.job, r.round, r.indices, r.bundles) : r.error;
      return Send(id, GroupReplyFrame(r.id, st, {}, r.round));
    }
    case proto::CoreMessage::GROUP_REPLY:
      if (c.role != Role::kPeer) return Close(id, "only a node may answer a reservation");
      return groups_.OnReply(id, c.peer, msg.getGroupReply());
    case proto::CoreMessage::REMOVE_GROUP: {
      auto g = IdFrom<PlacementGroupId>(msg.getRemoveGroup().getGroupId());
      if (g.IsNil()) return;
      if (c.role == Role::kPeer) {
        uint32_t round = msg.getRemoveGroup().getRound();
        ReleaseHere(g, round);
        return groups_.OnPeerRelease(g, round);
      }
      return groups_.Remove(id, JobOf(c), g);  // only its own job's groups, for good
    }
    default:
      CUMULUS_LOG(WARN) << "node: ignoring an unexpected message on a core connection";
  }
}

void TaskRouter::Impl::HandleHello(uint64_t id, Conn& c, proto::CoreHello::Reader h) {
  if (c.tcp) {
    // Over TCP only other nodes and callers (`cumulus list|describe|top|call|timeline`), and only
    // with the cluster token.
    if (h.isCaller()) {
      if (!TokensEqual(h.getCaller().getToken(), options_.token)) {
        // Said, then closed: the caller prints why (not how close the token was).
        std::string who = node_id_.IsNil() ? "the node at " + core_address()
                                           : "node " + node_id_.Hex().substr(0, 8);
        Send(id, HelloRefusalFrame(who + " refused the cluster token"));
        loop_->CloseAfterFlush(id, "refused a caller: wrong cluster token");
        return;
      }
      c.role = Role::kCaller;
      loop_->Authenticated(id, kMaxCoreFrameBytes);
      return SendHelloAck(id);
    }
    if (!h.isPeer() || !TokensEqual(h.getPeer().getToken(), options_.token)) {
      return Close(id,
                   "refused: a TCP core connection must be a node or a caller with the cluster "
                   "token");
    }
    c.role = Role::kPeer;
    loop_->Authenticated(id, kMaxCoreFrameBytes);
    c.peer = IdFrom<NodeId>(h.getPeer().getNodeId());
    if (!c.peer.IsNil() && !peers_.count(c.peer)) peers_[c.peer] = id;
    return;
  }
  switch (h.which()) {
    case proto::CoreHello::WORKER: {
      WorkerId wid = IdFrom<WorkerId>(h.getWorker().getWorkerId());
      Worker* w = leases_.workers().Find(wid);
      if (!w || w->closing()) return Close(id, "unknown worker id");
      c.role = Role::kWorker;
      loop_->Authenticated(id, kMaxCoreFrameBytes);
      c.worker = wid;
      w->conn = id;
      auto startup =
          std::chrono::duration_cast<std::chrono::microseconds>(clock_.Now() - w->started).count();
      {
        std::lock_guard<std::mutex> lock(shared_mu_);
        if (startup_micros_.size() < 4096) startup_micros_.push_back(startup);
      }
      CUMULUS_LOG(DEBUG) << "node: worker " << w->pid << " ready after " << startup << " us";
      SendHelloAck(id);
      for (const TaskId& t : w->assigned) {
        if (RoutedTask* task = tasks_.Find(t)) Send(id, task->frame);
      }
      return;
    }
    case proto::CoreHello::DRIVER:
      if (IdFrom<JobId>(h.getDriver().getJobId()).IsNil()) {
        return Close(id,
                     "refused: a driver's hello names no job (a program built against "
                     "another version of Cumulus?)");
      }
      c.role = Role::kDriver;  // a local process the socket's permissions let in
      loop_->Authenticated(id, kMaxCoreFrameBytes);
      c.job = IdFrom<JobId>(h.getDriver().getJobId());
      return SendHelloAck(id);
    default:
      return Close(id, "refused: only drivers and workers use the node's Unix socket");
  }
}

void TaskRouter::Impl::SendHelloAck(uint64_t id) {
  capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
  auto ack = message.initRoot<proto::CoreMessage>().initHelloAck();
  ack.setNodeId(DataOf(node_id_));
  ack.setTransferAddress(options_.transfer_address);
  ack.setStoreSocket(options_.store_socket);
  Send(id, EncodeFrame(message));
}

void TaskRouter::Impl::HandleSubmit(uint64_t id, Conn& c, proto::TaskSpec::Reader spec,
                                    const FrameWords& words) {
  RoutedTask t = TaskFromSpec(spec, words, id);
  if (t.id.IsNil()) return Close(id, "submitted a task without a valid id");
  if (timeline_.enabled()) t.arrived_us = TimelineNowMicros();
  if (tasks_.Contains(t.id)) return;  // a duplicate: the first copy's result answers it
  if (Status numbers = CheckTaskSpecNumbers(spec); !numbers.ok()) {
    return Send(id, ErrorResultFrame(t.id, node_id_, numbers.WithContext(t.What())));
  }
  if (c.role == Role::kWorker && !c.job.IsNil()) t.job = c.job;
  // Only a node forwards (hops > 0: placed here only, returned to it if it cannot start). What
  // was forwarded queues apart from this node's own work of its shape: behind a task of this
  // node's that waits, it would never reach the pass that returns it.
  if (c.role != Role::kPeer) t.hops = 0;
  if (t.hops > 0) t.class_key += "|forwarded";
  tasks_.Add(std::move(t));
  schedule_dirty_ = true;
}

void TaskRouter::Impl::HandleResult(Conn& c, proto::TaskResult::Reader result,
                                    const FrameWords& words) {
  TaskId id = IdFrom<TaskId>(result.getTaskId());
  if (c.role == Role::kWorker) {
    // The worker is done with it whatever became of the task meanwhile.
    Worker* w = leases_.workers().Find(c.worker);
    if (!w) return;
    auto& a = w->assigned;
    if (!a.empty() && a.front() == id) {
      a.pop_front();
    } else {
      a.erase(std::remove(a.begin(), a.end(), id), a.end());
    }
    // (A failed constructor's worker exits by itself.)
    leases_.ReleaseIfIdle(*w, clock_.Now());
    schedule_dirty_ = true;
  }
  RoutedTask* t = tasks_.Find(id);
  if (!t) return;  // cancelled or already answered
  if (c.role == Role::kWorker) {
    if (t->state != RoutedTask::kOnWorker || t->worker != c.worker) return;  // not this run
    (result.getCode() == 0 ? counters_.tasks_finished : counters_.tasks_failed)++;
    Worker* w = leases_.workers().Find(c.worker);
    if (timeline_.enabled() && w) RecordScheduled(*t, *w);
    if (w && t->actor_creation && result.getCode() == 0) {
      w->actor_address = result.getActorAddress();
    }
    Status st = result.getCode() == 0 ? Status()
                                      : Status(static_cast<StatusCode>(result.getCode()),
                                               std::string(result.getMessage()));
    finished_.Add(FinishedFrom(*t, node_id_.Hex(), w ? w->spawned_pid : -1,
                               w ? w->id.Hex() : std::string(), st, clock_.WallMicros()));
  } else if (c.role == Role::kPeer) {
    // Only from the node it was forwarded to, while it is there: a node declared dead that
    // wakes up must not answer for a task that was placed again.
    if (t->state != RoutedTask::kForwarded || t->forwarded_to != c.peer) return;
    // A result for a task this node forwarded: credit the peer's view optimistically.
    if (!t->actor_creation && t->req.placement_group.empty()) {
      remote_.Book(t->forwarded_to, t->req.placement.demand, /*take=*/false, clock_.Now());
    }
  } else {
    return;
  }
  if (t->free_results) {
    FreeEntries(StoredReturnEntries(result), /*here_only=*/false);
  } else {
    auto origin = conns_.find(t->origin);
    if (origin != conns_.end() && origin->second.role == Role::kCaller) {
      origin->second.tasks.erase(id);
      for (auto& e : StoredReturnEntries(result)) origin->second.freeable.insert(std::move(e));
    }
    Send(t->origin, FrameOfWords(words));
  }
  tasks_.Erase(id);
  schedule_dirty_ = true;
}

void TaskRouter::Impl::HandleFree(Conn& c, capnp::List<capnp::Data>::Reader entries) {
  std::vector<std::string> list;
  list.reserve(entries.size());
  for (auto e : entries) list.emplace_back(reinterpret_cast<const char*>(e.begin()), e.size());
  FreeEntries(list, /*here_only=*/c.role == Role::kPeer);
}

void TaskRouter::Impl::HandleCallerFree(uint64_t id, Conn& c,
                                        capnp::List<capnp::Data>::Reader entries) {
  std::vector<std::string> allowed;
  size_t refused = 0;
  std::string first;
  for (auto e : entries) {
    std::string entry(reinterpret_cast<const char*>(e.begin()), e.size());
    if (c.freeable.erase(entry) > 0) {
      allowed.push_back(std::move(entry));
    } else if (refused++ == 0 && entry.size() >= ObjectId::kSize) {
      first = ObjectId::FromBinary(std::string_view(entry.data(), ObjectId::kSize)).Hex();
    }
  }
  FreeEntries(allowed, /*here_only=*/false);
  if (refused == 0) return;
  Send(id, RefusalFrame(Status::InvalidArgument(
               "node " + node_id_.Hex().substr(0, 8) + " refused to free " +
               std::to_string(refused) + " object(s)" + (first.empty() ? "" : " (" + first + ")") +
               ": a caller may free only the stored results of the tasks it submitted")));
}

void TaskRouter::Impl::TaskAnswered(const RoutedTask& t, const Status& st) {
  auto origin = conns_.find(t.origin);
  if (origin != conns_.end() && origin->second.role == Role::kCaller) {
    origin->second.tasks.erase(t.id);
  }
  // A task forwarded and failed here (its node lost) is recorded here; one the other node
  // answered for is recorded there.
  const Worker* w = t.state == RoutedTask::kOnWorker ? leases_.workers().Find(t.worker) : nullptr;
  finished_.Add(FinishedFrom(t, node_id_.Hex(), w ? w->spawned_pid : -1,
                             w ? w->id.Hex() : std::string(), st, clock_.WallMicros()));
}

void TaskRouter::Impl::CallerLeft(uint64_t id, Conn& c) {
  for (const TaskId& task : c.tasks) {
    RoutedTask* t = tasks_.Find(task);
    if (!t || t->origin != id) continue;  // answered or ended otherwise, or not its own
    t->free_results = true;
    HandleCancel(task);
  }
  c.tasks.clear();
  FreeEntries(std::vector<std::string>(c.freeable.begin(), c.freeable.end()), false);
  c.freeable.clear();
}

void TaskRouter::Impl::FreeEntries(const std::vector<std::string>& entries, bool here_only) {
  // Each entry: 28-byte object id + 16-byte node id of the store holding it.
  std::map<NodeId, std::vector<std::string>> remote;
  std::vector<ObjectId> here;
  for (const std::string& e : entries) {
    if (e.size() != ObjectId::kSize + NodeId::kSize) continue;
    const char* p = e.data();
    ObjectId obj = ObjectId::FromBinary(std::string_view(p, ObjectId::kSize));
    NodeId node = NodeId::FromBinary(std::string_view(p + ObjectId::kSize, NodeId::kSize));
    if (node == node_id_ || here_only) {
      (void)options_.store->Delete(obj);
      here.push_back(obj);
    } else {
      remote[node].push_back(e);
    }
  }
  // This node drained and handed some of them on before their owners heard of it.
  if (options_.on_freed_here && !here.empty()) {
    for (auto& [obj, node] : options_.on_freed_here(here)) {
      if (node != node_id_) remote[node].push_back(obj.Binary() + node.Binary());
    }
  }
  for (auto& [node, list] : remote) {
    // Also where the head says a drainer handed them on: a free sent to a drainer that has just
    // exited is lost (a duplicate free of a copy is harmless).
    if (remote_.Drained(node)) FreeWhereMoved(node, list);
    capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
    auto out =
        message.initRoot<proto::CoreMessage>().initFreeObjects(static_cast<unsigned>(list.size()));
    for (unsigned i = 0; i < list.size(); ++i) {
      out.set(
          i, capnp::Data::Reader(reinterpret_cast<const uint8_t*>(list[i].data()), list[i].size()));
    }
    if (uint64_t peer = PeerConn(node)) Send(peer, EncodeFrame(message));
  }
}

void TaskRouter::Impl::FreeWhereMoved(const NodeId& node, const std::vector<std::string>& entries) {
  std::vector<ObjectId> ids;
  ids.reserve(entries.size());
  for (const std::string& e : entries) {
    ids.push_back(ObjectId::FromBinary(std::string_view(e.data(), ObjectId::kSize)));
  }
  // One request to the head's queue for the whole batch.
  HeadMoves(std::move(ids), [this, node](Result<std::vector<std::pair<ObjectId, NodeId>>> r) {
    if (!r.ok()) {  // the head cannot say: nothing more to free
      CUMULUS_LOG(WARN) << "node: could not ask the head where freed objects sent to drained node "
                        << node << " were handed on (" << r.status()
                        << "); their copies elsewhere stay";
      return;
    }
    std::vector<std::string> elsewhere;
    for (auto& [obj, to] : *r) {
      if (to != node) elsewhere.push_back(obj.Binary() + to.Binary());
    }
    if (!elsewhere.empty()) FreeEntries(elsewhere, /*here_only=*/false);
  });
}

void TaskRouter::Impl::HandleCancel(const TaskId& id) {
  RoutedTask* t = tasks_.Find(id);
  if (!t) return;
  switch (t->state) {
    case RoutedTask::kQueued:  // its queue entry is dropped when the queue reaches it
      return scheduler_.FailTask(
          id, Status::Cancelled("task " + t->function + " was cancelled before it ran"));
    case RoutedTask::kForwarded: {
      t->cancelled = true;  // if that node is lost, the task is not placed again
      if (uint64_t peer = PeerConn(t->forwarded_to)) {
        capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
        message.initRoot<proto::CoreMessage>().setCancelTask(DataOf(id));
        Send(peer, EncodeFrame(message));
      }
      return;
    }
    case RoutedTask::kOnWorker:
      t->cancelled = true;
      // The worker may be deep in user code: only killing it stops it for sure.
      if (Worker* w = leases_.workers().Find(t->worker)) leases_.workers().Kill(*w);
      return;
  }
}

void TaskRouter::Impl::HandleBlocked(Conn& c, proto::WorkerBlocked::Reader b) {
  if (c.role != Role::kWorker) return;
  Worker* w = leases_.workers().Find(c.worker);
  if (!w) return;
  leases_.SetBlocked(*w, b.getBlocked());
  // Tasks queued behind a task that waits on other tasks could deadlock it: run them elsewhere.
  for (auto raw : b.getReturned()) {
    TaskId id = IdFrom<TaskId>(raw);
    auto& a = w->assigned;
    a.erase(std::remove(a.begin(), a.end(), id), a.end());
    if (RoutedTask* t = tasks_.Find(id)) tasks_.Requeue(*t, /*front=*/true);
  }
  schedule_dirty_ = true;
}

// A node this one forwarded a task to could not start it (LocalScheduler::ReturnToSender): the
// task is queued here again, at the front of its class, and placed on this node's view, where
// that node looks no freer than it said it is (RemoteNodes::Saw) until the head reports it anew,
// so the task does not go straight back. Only from the node it was forwarded to, while there.
void TaskRouter::Impl::HandleReturned(uint64_t id, Conn& c, proto::TaskReturned::Reader r) {
  if (c.role != Role::kPeer) return Close(id, "only a node may return a task forwarded to it");
  RoutedTask* t = tasks_.Find(IdFrom<TaskId>(r.getTaskId()));
  if (!t || t->state != RoutedTask::kForwarded || t->forwarded_to != c.peer) return;
  if (t->cancelled) {
    return scheduler_.FailTask(t->id,
                               Status::Cancelled(t->What() + " was cancelled before it ran"));
  }
  std::string reason(r.getReason().cStr(), std::min<size_t>(r.getReason().size(), 512));
  CUMULUS_LOG(DEBUG) << "node: node " << c.peer << " returned " << t->What() << " unstarted ("
                     << reason << "); placing it again";
  remote_.Saw(c.peer, DecodeResources(r.getFree()), clock_.Now());
  t->state = RoutedTask::kQueued;
  t->forwarded_to = NodeId();
  t->wait_reason = "node " + c.peer.Hex().substr(0, 8) + " could not start it: " + reason;
  tasks_.Requeue(*t, /*front=*/true);
  schedule_dirty_ = true;
}

// An owner here lost an actor's process on a node: kept here, where `cumulus list actors` and
// `describe actor` find it, if the head declares that node dead (a dead node keeps nothing); set
// aside until then. Only for the sender's own job's actors.
void TaskRouter::Impl::HandleActorLost(uint64_t id, Conn& c, proto::ActorLost::Reader lost) {
  if (c.role != Role::kDriver && c.role != Role::kWorker) {
    return Close(id, "only a driver or worker may report its actor lost");
  }
  auto actor = IdFrom<ActorId>(lost.getActorId());
  auto node = IdFrom<NodeId>(lost.getNodeId());
  JobId job = JobOf(c);
  if (actor.IsNil() || node.IsNil() || job.IsNil() || actor.Job() != job) {
    return Close(id, "reported an actor lost that is not of its job, or without its node");
  }
  if (node == node_id_) return;  // this node recalls that end itself
  // Texts the owner wrote: bounded, as every record kept here is (~200 bytes each).
  auto text = [](capnp::Text::Reader t) {
    return std::string(t.cStr(), std::min<size_t>(t.size(), 512));
  };
  ActorEnd e;
  e.actor = actor.Hex();
  e.class_name = text(lost.getClassName());
  e.job = job;
  e.node = node.Hex();
  e.life = static_cast<int>(std::min<uint32_t>(lost.getLife(), INT32_MAX));
  e.max_restarts = std::max(lost.getMaxRestarts(), -1);
  e.restart_cause = text(lost.getRestartCause());
  e.cause = text(lost.getCause());
  e.detached = lost.getDetached();
  e.ended_micros = clock_.WallMicros();
  actor_ends_.AddPending(std::move(e));
  if (remote_.AnnouncedDead(node)) actor_ends_.NodeDead(node.Hex(), clock_.WallMicros());
}

JobId TaskRouter::Impl::JobOf(const Conn& c) {
  if (c.role != Role::kWorker) return c.job;
  Worker* w = leases_.workers().Find(c.worker);
  return w ? w->job : JobId();
}

void TaskRouter::Impl::OnClose(uint64_t id, const std::string& why) {
  Conn& c = conns_[id];
  c.closed = true;
  closed_.push_back(id);
  if (c.role == Role::kWorker && !c.worker.IsNil()) {
    // It is usually exiting already: Housekeeping reaps it (and retries its tasks), killing it
    // if it does not exit within a moment.
    if (Worker* w = leases_.workers().Find(c.worker)) {
      leases_.workers().ConnectionClosed(*w, clock_.Now());
    }
  } else if (c.role == Role::kDriver) {
    // Its queued tasks have nobody to answer to; its job's workers go away.
    EndJob(c.job, /*tell_peers=*/true);
    if (options_.on_job_end && !c.job.IsNil()) options_.on_job_end(c.job);
  } else if (c.role == Role::kPeer) {
    // Only the connection this node sends on carries its forwarded tasks and reservations
    // (the peer's own connection into this node may close independently).
    auto p = peers_.find(c.peer);
    if (p == peers_.end() || p->second != id) {
      CUMULUS_LOG(DEBUG) << "node: closed a second connection of node " << c.peer << ": " << why;
      return;
    }
    peers_.erase(p);
    PeerLost(c.peer, why);
  } else if (c.role == Role::kCaller) {
    CallerLeft(id, c);
  } else if (c.role == Role::kUnknown && c.tcp) {
    CUMULUS_LOG(DEBUG) << "node: closed a core connection: " << why;
  }
  if (c.role != Role::kUnknown && c.role != Role::kCaller && why != "closed" &&
      why != "worker gone" && why.rfind("cannot connect", 0) != 0) {  // (PeerLost says which node)
    CUMULUS_LOG(WARN) << "node: closed a core connection: " << why;
  }
}

}  // namespace cumulus
