#include "runtime/node/task_table.h"

#include "runtime/node/worker_pool.h"

namespace cumulus {

std::string SchedulingClass(const TaskRequirements& req, bool actor_creation) {
  std::string key = req.placement.demand.ToString() + "|" + req.placement.labels.ToString() + "|" +
                    std::to_string(static_cast<int>(req.placement.strategy)) + "|" +
                    req.placement.affinity_node.Hex() +
                    (req.placement.affinity_soft ? "|soft" : "") + (actor_creation ? "|actor" : "");
  if (!req.placement_group.empty()) {
    key += "|pg:" + req.placement_group + ":" + std::to_string(req.bundle_index);
  }
  // Work with a purpose (a trial's actor) is a class of its own, so that its pending demand
  // (the head of a class's queue, with the queue's length) names it.
  if (!req.purpose.empty()) key += "|for:" + req.purpose;
  return key;
}

RoutedTask TaskFromSpec(proto::TaskSpec::Reader spec, kj::ArrayPtr<const capnp::word> words,
                        uint64_t origin) {
  RoutedTask t;
  t.id = IdFrom<TaskId>(spec.getTaskId());
  t.job = IdFrom<JobId>(spec.getJobId());
  t.frame = FrameOfWords(words);
  t.req = RequirementsOf(spec);
  t.function = spec.getFunctionName();
  t.actor_creation = spec.getActorCreation();
  t.detached = t.actor_creation && spec.getDetached();
  t.max_retries = spec.getMaxRetries();
  t.hops = spec.getHops();
  t.origin = origin;
  t.class_key = SchedulingClass(t.req, t.actor_creation);
  if (t.actor_creation) {
    t.actor = IdFrom<ActorId>(spec.getActorId()).Hex();
    t.actor_life = static_cast<int>(spec.getAttempt());
    t.max_restarts = spec.getMaxRestarts();
    t.restart_cause = spec.getRestartCause();
    t.actor_type = spec.getActorClass();
  }
  return t;
}

RoutedTask* TaskTable::Find(const TaskId& id) {
  auto it = tasks_.find(id);
  return it == tasks_.end() ? nullptr : &it->second;
}

RoutedTask& TaskTable::Add(RoutedTask task) {
  TaskId id = task.id;
  RoutedTask& t = tasks_.emplace(id, std::move(task)).first->second;
  Requeue(t, /*front=*/false);
  return t;
}

void TaskTable::EraseJob(const JobId& job) {
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    it = it->second.job == job ? tasks_.erase(it) : std::next(it);
  }
}

void TaskTable::Requeue(RoutedTask& t, bool front) {
  t.state = RoutedTask::kQueued;
  auto& q = queues_[t.class_key];
  if (front) {
    q.push_front(t.id);
  } else {
    q.push_back(t.id);
  }
}

void TaskTable::RequeueAt(RoutedTask& t, TimePoint due) {
  t.state = RoutedTask::kQueued;
  t.waiting_retry = true;
  delayed_.emplace(due, t.id);
}

bool TaskTable::RequeueDue(TimePoint now) {
  bool any = false;
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    TaskId id = delayed_.begin()->second;
    delayed_.erase(delayed_.begin());
    RoutedTask* t = Find(id);
    if (!t || !t->waiting_retry) continue;
    t->waiting_retry = false;
    Requeue(*t, /*front=*/false);
    any = true;
  }
  return any;
}

std::vector<TaskId> TaskTable::ForwardedTo(const NodeId& node) const {
  std::vector<TaskId> out;
  for (auto& [id, t] : tasks_) {
    if (t.state == RoutedTask::kForwarded && t.forwarded_to == node) out.push_back(id);
  }
  return out;
}

std::vector<TaskStateRow> TaskTable::Rows(
    size_t limit, const std::function<const Worker*(const WorkerId&)>& worker) const {
  std::vector<TaskStateRow> rows;
  for (auto& [id, t] : tasks_) {
    if (rows.size() >= limit) break;
    TaskStateRow r;
    r.task = id.Hex();
    r.job = t.job.Hex();
    r.function = t.function;
    r.attempt = t.attempt;
    switch (t.state) {
      case RoutedTask::kQueued:
        r.state = t.waiting_retry ? "RETRY_WAIT" : "QUEUED";
        break;
      case RoutedTask::kForwarded:
        r.state = "FORWARDED";
        break;
      case RoutedTask::kOnWorker:
        r.state = "RUNNING";
        if (const Worker* w = worker(t.worker)) {
          r.pid = w->spawned_pid;
          if (w->assigned.empty() || w->assigned.front() != id) r.state = "QUEUED";  // behind it
        }
        break;
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace cumulus
