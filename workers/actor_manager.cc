#include "workers/actor_manager.h"

#include <algorithm>

#include "runtime/base/logging.h"
#include "runtime/core/messages.h"
#include "runtime/net/first_segment.h"
#include "runtime/net/frame.h"

namespace cumulus {

ActorEntry& ActorManager::Create(const ActorId& id, const std::string& factory,
                                 const std::string& class_name,
                                 const std::vector<internal::ArgData>& args,
                                 const internal::CallOptions& options) {
  ActorEntry& a = actors_[id];
  a.id = id;
  a.class_name = class_name;
  a.factory = factory;
  a.owned = true;
  a.name = options.name;
  a.max_restarts = options.max_restarts;
  a.detached = options.detached;
  if (a.detached && !options.placement_group.IsNil()) {
    MarkDead(a, Status::InvalidArgument(
                    "actor " + factory +
                    " is detached and in a placement group: a group ends with its job"));
    return a;
  }
  if (a.detached && options.name.empty()) {
    MarkDead(a, Status::InvalidArgument(
                    "actor " + factory +
                    " is detached but has no name: give it SetName(...) so that other "
                    "programs can find it once this one is gone"));
    return a;
  }
  if (a.max_restarts != 0) {
    // Kept to build it again; its object arguments stay alive as long as it may restart.
    a.creation_args = args;
    a.creation_options = options;
    for (auto& arg : args) {
      if (arg.is_ref && refs_.Hold(arg.ref)) a.pinned.push_back(arg.ref);
    }
  }
  return a;
}

void ActorManager::Start(ActorEntry& a, std::vector<internal::ArgData> args,
                         const internal::CallOptions& options) {
  TaskId task = TaskId::ForActorTask(a.id);
  auto pending = std::make_unique<PendingTask>();
  pending->id = task;
  pending->ret = ObjectId::FromTaskReturn(task, 1);
  refs_.Add(pending->ret).refs = 0;  // nobody holds the creation result: freed once it arrives
  pending->function = a.factory;
  pending->args = std::move(args);
  pending->options = options;
  pending->actor_creation = true;
  pending->actor = a.id;
  pending->attempt = a.restarts;  // the worker tells WasRestarted() from it
  if (a.restarts > 0) pending->restart_cause = a.restart_cause;
  pending->actor_class = a.class_name;
  a.creation_task = task;
  calls_.Submit(std::move(pending));
}

ActorEntry& ActorManager::AddNamed(const ActorId& id, const std::string& name,
                                   const std::string& class_name, bool* added) {
  ActorEntry& a = actors_[id];
  *added = a.id.IsNil();
  if (*added) {
    a.id = id;
    a.class_name = class_name;
    a.factory = name;
    a.name = name;
    a.owned = false;
  }
  return a;
}

ActorEntry* ActorManager::Find(const ActorId& id) {
  auto it = actors_.find(id);
  return it == actors_.end() ? nullptr : &it->second;
}

bool ActorManager::Queue(const ActorId& actor, PendingTask& call) {
  ActorEntry* a = Find(actor);
  if (!a) return false;
  a->queue.push_back(call.id);
  return true;
}

void ActorManager::Pump(const ActorId& actor) {
  if (ActorEntry* a = Find(actor)) Pump(*a);
}

void ActorManager::Pump(ActorEntry& a) {
  if (a.state == ActorEntry::kDead) {
    while (!a.queue.empty()) {
      TaskId id = a.queue.front();
      a.queue.pop_front();
      calls_.Fail(id, a.death);
    }
    return;
  }
  if (a.state != ActorEntry::kAlive || a.conn == 0) return;  // being built or connected to
  while (!a.queue.empty()) {
    PendingTask* t = calls_.FindTask(a.queue.front());
    if (!t) {
      a.queue.pop_front();
      continue;
    }
    if (t->unresolved > 0) return;  // keep the order: later calls wait for this one
    auto frame = calls_.Spec(*t);
    a.queue.pop_front();
    if (!frame.ok()) {
      calls_.Fail(t->id, frame.status());
      continue;
    }
    // A call written into a connection that breaks is in flight: it is sent again to a
    // restarted actor if it has retries left (Lost).
    io_.SendToActor(a.conn, std::move(*frame));
    t->sent = true;
    a.in_flight.insert(t->id);
  }
}

void ActorManager::CallFinished(const PendingTask& call) {
  if (ActorEntry* a = Find(call.actor)) a->in_flight.erase(call.id);
}

void ActorManager::CreationFinished(const PendingTask& t, const Status* error,
                                    proto::TaskResult::Reader* result) {
  ActorEntry& a = actors_[t.actor];
  if (a.creation_task != t.id) return;  // an older attempt's answer: the actor has moved on
  if (error && error->code() == StatusCode::kActorDied && a.state != ActorEntry::kDead &&
      CanRestart(a)) {
    // Its worker died before the constructor finished: build it again. (Not other errors: a
    // constructor that throws, or a node that cannot start workers, would only fail again.)
    Lost(a, error->message());
    return;
  }
  if (error) {
    // An actor no node can ever hold says so with Infeasible, as a task does; other failures
    // to build it are ActorDied.
    StatusCode code =
        error->code() == StatusCode::kInfeasible ? StatusCode::kInfeasible : StatusCode::kActorDied;
    MarkDead(a, Status(code, "actor " + t.function + " (" + t.actor.Hex() +
                                 ") could not be created: " + error->ToString()));
    return;
  }
  std::string address = result->getActorAddress();
  a.node = IdFrom<NodeId>(result->getNodeId());
  // Killed by its handle while it was being built: connected to only to be killed.
  bool killed = a.state == ActorEntry::kDead;
  Status st = Connect(a, address);
  if (!st.ok() && !killed) {
    // It died between answering and our connecting: a restart if it may have one.
    Lost(a, "cannot connect to it at " + address + ": " + st.message());
  } else if (st.ok() && !killed && !a.name.empty()) {
    io_.PublishActorName(a.name, ActorNameRecord{a.id.Hex(), a.class_name, address});
  }
}

void ActorManager::Lost(ActorEntry& a, const std::string& why) {
  if (a.state == ActorEntry::kDead) return;
  // Its node recalls this end if it lives; if the head declares it dead, that record is gone
  // with it, and this process's node keeps the one told here (HandleActorLost).
  if (a.owned && !a.node.IsNil()) (void)io_.SendToNode(LostFrame(a, why));
  a.node = NodeId();  // its next life's, once its constructor answers
  std::string name = "actor " + a.factory + " (" + a.id.Hex() + ")";
  std::string cannot = io_.CannotSubmit();
  if (!cannot.empty()) {
    MarkDead(a, Status::ActorDied(name + " died (" + why + ") and cannot be restarted: " + cannot));
    return;
  }
  if (!CanRestart(a)) {
    std::string limit = a.max_restarts == 0 ? std::string("it may not restart (max_restarts 0)")
                                            : "no restarts left (max_restarts " +
                                                  std::to_string(a.max_restarts) + ")";
    MarkDead(a, Status::ActorDied(name + " died: " + why + "; " + limit));
    return;
  }
  a.restarts++;
  a.restart_cause = why;
  a.state = ActorEntry::kPending;
  a.conn = 0;
  std::string restarting =
      name + " died (" + why + "); restarting it (restart " + std::to_string(a.restarts) +
      (a.max_restarts < 0 ? std::string() : " of " + std::to_string(a.max_restarts)) + ")";
  CUMULUS_LOG(WARN) << "cumulus: " << restarting;
  // Calls it was running: again, in their order, ahead of those not sent yet; or they fail.
  std::vector<PendingTask*> running;
  for (const TaskId& id : a.in_flight) {
    if (PendingTask* t = calls_.FindTask(id)) running.push_back(t);
  }
  a.in_flight.clear();
  std::sort(running.begin(), running.end(),
            [](PendingTask* x, PendingTask* y) { return x->seq > y->seq; });
  for (PendingTask* t : running) {
    if (t->max_retries < 0 || t->attempt < t->max_retries) {
      t->attempt++;
      t->sent = false;
      a.queue.push_front(t->id);
    } else {
      calls_.Fail(t->id, Status::ActorDied(restarting + " while it ran " + t->function +
                                           ", which has no retries left"));
    }
  }
  // The constructor again, with the arguments it had.
  Start(a, a.creation_args, a.creation_options);
}

void ActorManager::MarkDead(ActorEntry& a, const Status& why) {
  if (a.state == ActorEntry::kDead) return;
  a.state = ActorEntry::kDead;
  a.death = why;
  refs_.Release(a.pinned);
  a.pinned.clear();
  std::vector<TaskId> in_flight(a.in_flight.begin(), a.in_flight.end());
  a.in_flight.clear();
  for (auto& id : in_flight) calls_.Fail(id, why);
  Pump(a);
  io_.Changed();
}

Status ActorManager::Connect(ActorEntry& a, const std::string& address) {
  CUMULUS_RETURN_IF_ERROR(io_.ConnectToActor(a.id, a.restarts, address));
  if (a.state != ActorEntry::kDead) a.state = ActorEntry::kAlive;
  a.conn = 0;
  return Status();
}

CoreChannel::Adopted ActorManager::Adopt(uint64_t conn, const ActorId& actor, int incarnation) {
  ActorEntry* a = Find(actor);
  bool current = a && a->restarts == incarnation && a->conn == 0;
  if (current && a->state == ActorEntry::kAlive) {
    a->conn = conn;
    Pump(*a);
    return {};
  }
  bool kill = current && a->state == ActorEntry::kDead && a->kill_when_created;
  return {false, kill ? KillFrame(actor) : std::string()};
}

void ActorManager::ConnectionClosed(uint64_t conn, const ActorId& actor, const std::string& why) {
  ActorEntry* a = Find(actor);
  if (!a || a->conn != conn) return;
  a->conn = 0;
  Lost(*a, why == "closed" ? std::string("its process closed the connection")
                           : "its connection failed (" + why + ")");
}

std::vector<uint64_t> ActorManager::NodeDied(const NodeId& dead) {
  // A hung node keeps its connections open: its actors are lost all the same.
  std::vector<ActorId> lost;
  for (auto& [id, a] : actors_) {
    if (a.node == dead && a.state == ActorEntry::kAlive) lost.push_back(id);
  }
  std::vector<uint64_t> conns;
  for (auto& id : lost) {
    ActorEntry& a = actors_.at(id);
    if (a.conn) conns.push_back(a.conn);
    Lost(a, "its node " + dead.Hex() + " was declared dead by the head");
  }
  return conns;
}

std::string ActorManager::LostFrame(const ActorEntry& a, const std::string& why) {
  capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
  auto lost = message.initRoot<proto::CoreMessage>().initActorLost();
  lost.setActorId(DataOf(a.id));
  lost.setClassName(a.class_name);
  lost.setNodeId(DataOf(a.node));
  lost.setLife(static_cast<uint32_t>(a.restarts));
  lost.setMaxRestarts(a.max_restarts);
  lost.setRestartCause(a.restart_cause);
  lost.setCause(why);
  lost.setDetached(a.detached);
  return EncodeFrame(message);
}

Result<std::string> ActorManager::Kill(const ActorId& actor) {
  ActorEntry* found = Find(actor);
  if (!found) return Status::NotFound("actor " + actor.Hex() + " is unknown here");
  ActorEntry& a = *found;
  if (a.state != ActorEntry::kDead) {
    if (a.conn) {
      io_.SendToActor(a.conn, KillFrame(actor));
    } else {
      a.kill_when_created = true;  // being built, or being connected to
    }
    MarkDead(a, Status::ActorDied("actor " + a.factory + " (" + actor.Hex() +
                                  ") was killed by its handle"));
  }
  // A dead actor's name may still be held (a detached actor whose creator went before it was
  // built): it is freed too.
  return a.name;
}

std::vector<std::string> ActorManager::EndOwned() {
  std::vector<std::string> names;
  for (auto& [id, a] : actors_) {
    if (!a.owned || a.detached) continue;
    bool alive = a.conn && a.state == ActorEntry::kAlive;
    // Being built or being connected to: killed once the connection is made (Adopt).
    if (!alive && a.state != ActorEntry::kDead) a.kill_when_created = true;
    MarkDead(a, Status::ActorDied("actor " + a.factory + " ended with its owner"));
    if (alive) io_.SendToActor(a.conn, KillFrame(id));
    if (!a.name.empty()) names.push_back(a.name);
  }
  return names;
}

std::string ActorManager::KillFrame(const ActorId& actor) {
  capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
  message.initRoot<proto::CoreMessage>().setKillActor(DataOf(actor));
  return EncodeFrame(message);
}

}  // namespace cumulus
