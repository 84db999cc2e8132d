#include "workers/task_manager.h"

#include <algorithm>

#include "runtime/base/logging.h"
#include "runtime/core/messages.h"
#include "runtime/net/first_segment.h"
#include "runtime/net/frame.h"
#include "workers/task_spec.h"

namespace cumulus {

std::unique_ptr<PendingTask> TaskManager::NewPending(const TaskId& id, const ObjectId& ret,
                                                     std::string function,
                                                     std::vector<internal::ArgData> args,
                                                     internal::CallOptions options) {
  auto p = std::make_unique<PendingTask>();
  p->id = id;
  p->ret = ret;
  p->function = std::move(function);
  p->args = std::move(args);
  p->options = std::move(options);
  return p;
}

ObjectId TaskManager::SubmitTask(const std::string& function, std::vector<internal::ArgData> args,
                                 const internal::CallOptions& options) {
  TaskId task = TaskId::ForNormalTask(job_);
  ObjectId ret = ObjectId::FromTaskReturn(task, 1);
  refs_.Add(ret);
  auto pending = NewPending(task, ret, function, std::move(args), options);
  // Like Ray: a task takes one CPU unless it says otherwise, whatever else it asks for.
  pending->options.resources.emplace("CPU", 1.0);
  pending->max_retries = options.max_retries.value_or(3);
  Enqueue(std::move(pending));
  return ret;
}

ObjectId TaskManager::SubmitActorCall(const ActorId& actor, const std::string& method,
                                      std::vector<internal::ArgData> args,
                                      const internal::CallOptions& options) {
  TaskId task = TaskId::ForActorTask(actor);
  ObjectId ret = ObjectId::FromTaskReturn(task, 1);
  refs_.Add(ret);
  auto pending = NewPending(task, ret, method, std::move(args), options);
  pending->actor = actor;
  pending->actor_call = true;
  pending->max_retries = options.max_retries.value_or(0);
  pending->seq = next_seq_++;
  if (!actors_.Queue(actor, *pending)) {
    FailObject(ret, Status::NotFound("actor " + actor.Hex() + " is unknown to this process"));
    return ret;
  }
  Enqueue(std::move(pending));
  return ret;
}

ObjectId TaskManager::Refused(const TaskId& task, const std::string& function, const Status& why) {
  ObjectId ret = ObjectId::FromTaskReturn(task, 1);
  refs_.Add(ret);
  FailObject(ret, Status(why.code(), function + ": " + why.message()));
  return ret;
}

Status TaskManager::Cancel(const ObjectId& id) {
  TaskId task = id.Task();
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return Status();  // finished already (or never ours)
  PendingTask& t = *it->second;
  if (t.actor_call)
    return Status::InvalidArgument("actor calls cannot be cancelled; kill the actor");
  if (!t.sent) {
    Status st = Status::Cancelled("task " + t.function + " was cancelled before it ran");
    Finish(task, &st, nullptr);
    return Status();
  }
  capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
  message.initRoot<proto::CoreMessage>().setCancelTask(DataOf(task));
  return io_.SendToNode(EncodeFrame(message));
}

void TaskManager::OnResult(proto::TaskResult::Reader r) {
  TaskId id = IdFrom<TaskId>(r.getTaskId());
  if (r.getCode() == 0) {
    Finish(id, nullptr, &r);
    return;
  }
  Status st(static_cast<StatusCode>(r.getCode()), r.getMessage());
  if (r.hasLostObject() &&
      WaitForRebuiltArgument(id, IdFrom<ObjectId>(r.getLostObject()),
                             IdFrom<NodeId>(r.getLostObjectNode()), st.message())) {
    return;
  }
  Finish(id, &st, nullptr);
}

void TaskManager::NodeLost() {
  std::string why = io_.CannotSubmit();
  Status st = Status::Unavailable(why.empty() ? "the connection to the node was lost" : why);
  std::vector<TaskId> lost;
  for (auto& [id, t] : tasks_) {
    if (t->sent && !t->actor_call) lost.push_back(id);
  }
  for (auto& id : lost) Finish(id, &st, nullptr);
}

std::string TaskManager::DescribeProducer(const ObjectId& id) const {
  auto t = tasks_.find(id.Task());
  return t == tasks_.end() ? "a finished task" : "task " + t->second->function;
}

PendingTask* TaskManager::FindTask(const TaskId& id) {
  auto it = tasks_.find(id);
  return it == tasks_.end() ? nullptr : it->second.get();
}

void TaskManager::Enqueue(std::unique_ptr<PendingTask> task) {
  PendingTask& t = *task;
  TaskId id = t.id;
  tasks_[id] = std::move(task);
  if (io_.stopped()) {
    Status st = Status::Unavailable("cumulus was shut down");
    Finish(id, &st, nullptr);
    return;
  }
  for (auto& arg : t.args) {
    if (!arg.is_ref) continue;
    ObjectEntry* held = refs_.Find(arg.ref);
    if (!held) {
      Status st =
          Status::InvalidArgument("an argument of " + t.function + " is object " + arg.ref.Hex() +
                                  ", which this process does not own (or freed)");
      Finish(id, &st, nullptr);
      return;
    }
    held->task_refs++;
    t.held.push_back(arg.ref);
    if (held->state == ObjectEntry::kPending) {
      t.unresolved++;
      held->waiting.push_back(id);
    }
  }
  if (t.unresolved == 0) Dispatch(t);
}

void TaskManager::Dispatch(PendingTask& t) {
  // An argument that failed fails the task, naming it.
  for (size_t i = 0; i < t.args.size(); ++i) {
    if (!t.args[i].is_ref) continue;
    const ObjectEntry& e = *refs_.Find(t.args[i].ref);  // held by the task
    if (e.state == ObjectEntry::kFailed) {
      Status st(e.error.code(), "argument " + std::to_string(i) + " of " + t.function +
                                    " failed: " + e.error.message());
      Finish(t.id, &st, nullptr);
      return;
    }
  }
  if (t.actor_call) {
    actors_.Pump(t.actor);
    return;
  }
  auto frame = Spec(t);
  Status st = frame.ok() ? io_.SendToNode(std::move(*frame)) : frame.status();
  if (!st.ok()) {
    Finish(t.id, &st, nullptr);
    return;
  }
  t.sent = true;
}

Result<std::string> TaskManager::Spec(const PendingTask& t) {
  TaskSpecInput in;
  in.id = t.id;
  in.job = job_;
  in.function = t.function;
  in.max_retries = t.max_retries;
  in.attempt = t.attempt;
  in.actor_creation = t.actor_creation;
  in.restart_cause = t.restart_cause;
  in.actor_class = t.actor_class;
  in.actor_call = t.actor_call;
  in.actor = t.actor;
  in.args = &t.args;
  in.options = &t.options;
  return BuildTaskSpec(in, [this](const ObjectId& id) {
    const ObjectEntry& e = *refs_.Find(id);  // held by the task
    return ArgumentLocation{e.inline_value, e.node, e.transfer, e.size};
  });
}

void TaskManager::Finish(const TaskId& id, const Status* error, proto::TaskResult::Reader* result) {
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return;
  std::unique_ptr<PendingTask> t = std::move(it->second);
  tasks_.erase(it);
  if (t->actor_call) actors_.CallFinished(*t);
  if (t->actor_creation) actors_.CreationFinished(*t, error, result);
  if (ObjectEntry* e = refs_.Find(t->ret)) {
    if (error) {
      e->state = ObjectEntry::kFailed;
      e->error = *error;
      if (!t->rebuilds_lost.empty() && error->code() != StatusCode::kCancelled) {
        e->error =
            Status::ObjectLost("object " + t->ret.Hex() + " (result of " + t->function +
                               ") was lost (" + t->rebuilds_lost + ") and running " + t->function +
                               " again to rebuild it failed: " + error->ToString());
      }
    } else {
      SetResult(*t, *e, *result);
    }
    ResolveWaiters(t->ret, *e);  // may add or erase objects
    refs_.FreeIfUnused(t->ret);
  }
  refs_.Release(t->held);
  FlushFrees();
  io_.Changed();
}

void TaskManager::SetResult(PendingTask& t, ObjectEntry& e, proto::TaskResult::Reader& result) {
  e.state = ObjectEntry::kReady;
  auto returns = result.getReturns();
  if (returns.size() != 1) {
    e.state = ObjectEntry::kFailed;
    e.error = Status::Internal("task " + t.function + " returned " +
                               std::to_string(returns.size()) + " values, expected 1");
    return;
  }
  if (returns[0].isInline()) {
    auto d = returns[0].getInline();
    e.inline_value =
        std::make_shared<std::string>(reinterpret_cast<const char*>(d.begin()), d.size());
    return;
  }
  auto loc = returns[0].getStored();
  ReferenceTable::SetStored(e, IdFrom<NodeId>(loc.getNodeId()), loc.getTransferAddress(),
                            loc.getSize());
  if (t.actor_call || t.actor_creation) {
    e.no_lineage = "it is the result of actor call " + t.function +
                   ", and actor calls are not run again to rebuild their results";
    return;
  }
  // Its hold on its arguments passes to the lineage.
  refs_.RecordLineage(e, t.function, std::move(t.args), t.options, t.max_retries,
                      std::move(t.held));
  t.held.clear();
}

bool TaskManager::Rebuild(const ObjectId& id, const NodeId& failed_node, const std::string& why) {
  std::string cannot =
      io_.CannotSubmit().empty() ? "" : "this process is no longer connected to its node";
  auto plan = refs_.PlanRebuild(id, failed_node, why, cannot);
  switch (plan.kind) {
    case ReferenceTable::RebuildPlan::kNotStored:
      return false;
    case ReferenceTable::RebuildPlan::kUnderway:
      return true;
    case ReferenceTable::RebuildPlan::kLost:
      FlushFrees();
      io_.Changed();
      return false;
    case ReferenceTable::RebuildPlan::kRebuild:
      break;
  }
  std::unique_ptr<Lineage> l = std::move(plan.lineage);
  CUMULUS_LOG(WARN) << "cumulus: object " << id.Hex() << " (result of " << l->function
                    << ") was lost (" << why << "); rebuilding it by running " << l->function
                    << " again (rebuild " << plan.attempt << " of " << ReferenceTable::kMaxRebuilds
                    << ")";
  auto pending = NewPending(id.Task(), id, l->function, l->args, l->options);
  pending->max_retries = l->max_retries;
  pending->rebuilds_lost = why;
  Enqueue(std::move(pending));  // holds the arguments again before the lineage lets them go
  refs_.Release(l->pinned);
  return true;
}

bool TaskManager::WaitForRebuiltArgument(const TaskId& task, const ObjectId& lost,
                                         const NodeId& node, const std::string& why) {
  PendingTask* p = FindTask(task);
  if (!p || p->actor_call) return false;
  if (std::find(p->held.begin(), p->held.end(), lost) == p->held.end()) return false;
  if (!Rebuild(lost, node, why)) return false;
  ObjectEntry* e = refs_.Find(lost);
  if (!e) return false;
  p->sent = false;
  if (e->state == ObjectEntry::kPending) {
    p->unresolved++;
    e->waiting.push_back(task);
  } else if (e->state == ObjectEntry::kReady) {
    Dispatch(*p);
  } else {
    return false;
  }
  return true;
}

void TaskManager::FailObject(const ObjectId& id, const Status& st) {
  ObjectEntry* e = refs_.Find(id);
  if (!e) return;
  e->state = ObjectEntry::kFailed;
  e->error = st;
  ResolveWaiters(id, *e);
  io_.Changed();
}

void TaskManager::ResolveWaiters(const ObjectId& id, ObjectEntry& e) {
  auto waiting = std::move(e.waiting);
  e.waiting.clear();
  for (const TaskId& tid : waiting) {
    PendingTask* t = FindTask(tid);
    if (t && --t->unresolved == 0) Dispatch(*t);
  }
}

void TaskManager::FlushFrees() {
  ReferenceTable::Frees frees = refs_.TakeFrees();
  if (!frees.remote.empty()) {
    capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
    auto list = message.initRoot<proto::CoreMessage>().initFreeObjects(
        static_cast<unsigned>(frees.remote.size()));
    for (unsigned i = 0; i < frees.remote.size(); ++i) {
      list.set(i, capnp::Data::Reader(reinterpret_cast<const uint8_t*>(frees.remote[i].data()),
                                      frees.remote[i].size()));
    }
    (void)io_.SendToNode(EncodeFrame(message));
  }
  if (!frees.local_copies.empty()) io_.DeleteLocalCopies(std::move(frees.local_copies));
}

}  // namespace cumulus
