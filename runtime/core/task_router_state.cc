// TaskRouter: state queries from `cumulus list|describe|top` (a caller with the cluster token,
// over TCP). Answered on the loop thread from the live tables — tasks, workers, the object store
// — filtered before the cap (RowSelector), so a filter finds rows however many the node holds.
#include <algorithm>
#include <cstdio>
#include <string>
#include <unordered_set>
#include <vector>

#include "runtime/core/task_router_impl.h"
#include "runtime/node/machine_stats.h"
#include "scheduler/node_policy.h"

namespace cumulus {

namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

std::string Pid(int pid) { return pid > 0 ? std::to_string(pid) : ""; }

std::string Where(bool in_memory, bool on_disk) {
  return in_memory && on_disk ? "BOTH" : in_memory ? "MEMORY" : "DISK";
}

void AddAttempts(const std::vector<TaskAttempt>& attempts, StateRowFields& row) {
  row["attempts"] = std::to_string(attempts.size());
  for (size_t i = 0; i < attempts.size(); ++i) {
    const TaskAttempt& a = attempts[i];
    std::string n = std::to_string(i + 1);
    row["attempt." + n + ".node"] = a.node;
    row["attempt." + n + ".pid"] = Pid(a.pid);
    row["attempt." + n + ".cause"] = a.cause;
    row["attempt." + n + ".ended_micros"] = std::to_string(a.ended_micros);
  }
}

}  // namespace

void TaskRouter::Impl::HandleStateQuery(uint64_t id, proto::StateQuery::Reader in) {
  StateQuerySpec q = DecodeStateQuery(in);
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<proto::CoreMessage>().initStateReply();
  reply.setNodeId(DataOf(node_id_));
  Status st = CheckStateQuery(q);
  if (!st.ok()) {
    reply.setCode(static_cast<uint16_t>(st.code()));
    reply.setMessage(st.message());
    return Send(id, EncodeFrame(message));
  }
  bool more = false;
  uint64_t matched = 0;
  std::vector<StateRowFields> rows;
  if (q.kind == "tasks") {
    rows = TaskRows(q, &more, &matched);
  } else if (q.kind == "objects") {
    rows = ObjectRows(q, &more, &matched);
  } else if (q.kind == "workers") {
    rows = WorkerRows(q, &more, &matched);
  } else if (q.kind == "actor_ends") {
    rows = ActorEndRows(q, &more, &matched);
  } else if (q.kind == "actors") {
    rows = ActorRows(q, &more, &matched);
  } else {
    rows = {NodeRow()};
    matched = 1;
  }
  EncodeStateRows(rows, reply);
  reply.setMore(more);
  reply.setMatched(matched);
  Send(id, EncodeFrame(message));
}

std::vector<StateRowFields> TaskRouter::Impl::TaskRows(const StateQuerySpec& q, bool* more,
                                                       uint64_t* matched) {
  RowSelector selector(q);
  const std::string here = node_id_.Hex();
  for (auto& [tid, t] : tasks_.all()) {
    const RoutedTask& task = t;
    Worker* w = task.state == RoutedTask::kOnWorker ? leases_.workers().Find(task.worker) : nullptr;
    std::string state;
    switch (task.state) {
      case RoutedTask::kQueued:
        state = task.waiting_retry ? "RETRY_WAIT" : "QUEUED";
        break;
      case RoutedTask::kForwarded:
        state = "FORWARDED";
        break;
      case RoutedTask::kOnWorker:
        // Behind another task on its worker (pipelined): queued there.
        state = w && !w->assigned.empty() && w->assigned.front() != tid ? "QUEUED" : "RUNNING";
        break;
    }
    auto field = [&](const std::string& key) -> std::string {
      if (key == "job") return task.job.Hex();
      if (key == "function") return task.function;
      if (key == "state") return state;
      if (key == "node") return here;
      if (key == "pid") return w ? Pid(w->spawned_pid) : "";
      if (key == "attempt") return std::to_string(task.attempt + 1);
      if (key == "worker") return w ? w->id.Hex() : "";
      return "";
    };
    auto build = [&] {
      StateRowFields row;
      row["task"] = tid.Hex();
      for (const char* k : {"job", "function", "state", "node", "pid", "attempt", "worker"}) {
        row[k] = field(k);
      }
      if (!q.detail) return row;
      row["demand"] = task.req.placement.demand.ToString();
      row["labels"] = task.req.placement.labels.ToString();
      if (!task.req.purpose.empty()) row["purpose"] = task.req.purpose;
      row["max_retries"] = std::to_string(task.max_retries);
      if (task.actor_creation) row["actor"] = task.actor;
      if (task.state == RoutedTask::kForwarded) row["forwarded_to"] = task.forwarded_to.Hex();
      if (task.state == RoutedTask::kQueued) row["pending"] = PendingReason(task);
      AddAttempts(task.attempts, row);
      return row;
    };
    selector.Offer(tid.Hex(), field, build);
  }
  FinishedTaskRows(selector, q.detail);
  return selector.Take(more, matched);
}

// The tasks answered for here (FinishedTasks), as rows of state FINISHED or FAILED: offered to
// the same selector as the live ones, so filters apply to them before the cap too.
// A task with a live row here, or an id already offered (it ended here more than once; newest
// first), is skipped: each id once, the live row or the latest end.
void TaskRouter::Impl::FinishedTaskRows(RowSelector& selector, bool detail) {
  std::unordered_set<TaskId> offered;  // bounded by the finished-task buffer
  finished_.ForEach([&](const FinishedTask& t) {
    if (tasks_.Find(t.id) || !offered.insert(t.id).second) return;
    std::string id = t.id.Hex();
    auto field = [&](const std::string& key) -> std::string {
      if (key == "job") return t.job.Hex();
      if (key == "function") return t.function;
      if (key == "state") return t.failed ? "FAILED" : "FINISHED";
      if (key == "node") return t.node;
      if (key == "pid") return Pid(t.pid);
      if (key == "attempt") return std::to_string(t.attempt + 1);
      if (key == "worker") return t.worker;
      return "";
    };
    selector.Offer(id, field, [&] {
      StateRowFields row{{"task", id}};
      for (const char* k : {"job", "function", "state", "node", "pid", "attempt", "worker"}) {
        row[k] = field(k);
      }
      if (!detail) return row;
      row["demand"] = t.demand;
      row["labels"] = t.labels;
      if (!t.purpose.empty()) row["purpose"] = t.purpose;
      row["max_retries"] = std::to_string(t.max_retries);
      if (!t.actor.empty()) row["actor"] = t.actor;
      if (t.failed) row["error"] = t.error;
      row["ended_micros"] = std::to_string(t.ended_micros);
      AddAttempts(t.attempts, row);
      return row;
    });
  });
}

// Why a queued task waits: "infeasible: ..." (no node could ever run it: the resource or label
// no node offers), "waiting: ..." (it fits the cluster, not what is free now), "retry: ...",
// "program: ...", or "placing: ..." (it fits now: the next scheduling pass places it).
std::string TaskRouter::Impl::PendingReason(const RoutedTask& t) {
  if (t.waiting_for_program) return "program: its job's program cannot be fetched yet";
  if (t.waiting_retry) return "retry: waiting for its retry's backoff";
  if (!t.req.placement_group.empty()) {
    return "group: waiting for its placement group's bundle to be reserved";
  }
  TimePoint now = clock_.Now();
  PlacementRequest req = RequestAtNode(t.req.placement, t.hops, node_id_);
  PlacementDecision d = PlaceTask(Snapshot(now, /*include_unreachable=*/true), req);
  switch (d.kind) {
    case PlacementDecision::kInfeasible:
      return "infeasible: " + d.reason;
    case PlacementDecision::kWait:
      return "waiting: " + d.reason + " (free here: " + leases_.available().ToString() + ")";
    case PlacementDecision::kPlace:
      break;
  }
  return "placing: node " + d.node.Hex() + " has room now; the next scheduling pass places it";
}

std::vector<StateRowFields> TaskRouter::Impl::ObjectRows(const StateQuerySpec& q, bool* more,
                                                         uint64_t* matched) {
  RowSelector selector(q);
  const std::string here = node_id_.Hex();
  options_.store->ForEachSealed([&](const ObjectStore::Listed& o) {
    std::string id = o.id.Hex();
    auto field = [&](const std::string& key) -> std::string {
      if (key == "job") return o.id.Task().Job().Hex();
      if (key == "size") return std::to_string(o.size);
      if (key == "where") return Where(o.in_memory, o.on_disk);
      if (key == "node") return here;
      if (key == "pins") return std::to_string(o.pins);
      return "";
    };
    selector.Offer(id, field, [&] {
      StateRowFields row{{"object", id}};
      for (const char* k : {"job", "size", "where", "node", "pins"}) row[k] = field(k);
      if (q.detail) row["task"] = o.id.Task().Hex();  // the task that made it (its owner's)
      return row;
    });
  });
  return selector.Take(more, matched);
}

std::vector<StateRowFields> TaskRouter::Impl::WorkerRows(const StateQuerySpec& q, bool* more,
                                                         uint64_t* matched) {
  RowSelector selector(q);
  const std::string here = node_id_.Hex();
  for (auto& [wid, w] : leases_.workers().workers()) {
    if (w.pid <= 0) continue;  // reaped
    const RoutedTask* front = nullptr;
    if (!w.assigned.empty()) front = tasks_.Find(w.assigned.front());
    auto field = [&](const std::string& key) -> std::string {
      if (key == "job") return w.job.Hex();
      if (key == "pid") return Pid(w.spawned_pid);
      if (key == "actor") return w.actor;
      if (key == "state") {
        return w.closing()          ? "EXITING"
               : w.blocked          ? "BLOCKED"
               : w.is_actor         ? "ACTOR"
               : w.assigned.empty() ? "IDLE"
                                    : "BUSY";
      }
      if (key == "node") return here;
      if (key == "tasks") return std::to_string(w.assigned.size());
      if (key == "function")
        return !w.actor_class.empty() ? w.actor_class : front ? front->function : "";
      return "";
    };
    selector.Offer(wid.Hex(), field, [&] {
      StateRowFields row{{"worker", wid.Hex()}};
      for (const char* k : {"job", "pid", "actor", "state", "node", "tasks", "function"}) {
        row[k] = field(k);
      }
      if (q.detail) {
        row["lease"] = w.leased ? w.lease.ToString() : "";
        std::string gpus;
        for (uint32_t g : w.gpu_ids) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
        row["gpus"] = gpus;
        if (!w.actor.empty()) {
          row["address"] = w.actor_address;
          row["class"] = w.actor_type;
          row["life"] = std::to_string(w.actor_life);
          row["max_restarts"] = std::to_string(w.actor_max_restarts);
          if (!w.actor_restart_cause.empty()) row["restart_cause"] = w.actor_restart_cause;
        }
      }
      return row;
    });
  }
  return selector.Take(more, matched);
}

std::vector<StateRowFields> TaskRouter::Impl::ActorEndRows(const StateQuerySpec& q, bool* more,
                                                           uint64_t* matched) {
  RowSelector selector(q);
  actor_ends_.ForEach([&](const ActorEnd& e) {
    char life[16];
    std::snprintf(life, sizeof(life), "%06d", e.life);
    std::string id = e.actor + "/" + life;
    auto field = [&](const std::string& key) -> std::string {
      if (key == "actor") return e.actor;
      if (key == "job") return e.job.Hex();
      if (key == "node") return e.node;
      if (key == "pid") return Pid(e.pid);
      if (key == "life") return std::to_string(e.life);
      if (key == "cause") return e.cause;
      if (key == "class") return e.class_name;
      return "";
    };
    selector.Offer(id, field, [&] {
      StateRowFields row{{"end", id}};
      for (const char* k : {"actor", "job", "node", "pid", "life", "cause", "class"}) {
        row[k] = field(k);
      }
      row["max_restarts"] = std::to_string(e.max_restarts);
      if (!e.restart_cause.empty()) row["restart_cause"] = e.restart_cause;
      if (e.by_user) row["by_user"] = "1";
      if (e.with_job) row["with_job"] = "1";
      if (e.job_ended) row["job_ended"] = "1";  // nobody restarts it now
      row["ended_micros"] = std::to_string(e.ended_micros);
      return row;
    });
  });
  return selector.Take(more, matched);
}

// One row per actor: its latest life here, the first of: its live worker (an exiting one after
// any other), a constructor of it waiting here to be placed, its newest end. Later records of an
// id already offered are skipped here (RowSelector counts every offer).
std::vector<StateRowFields> TaskRouter::Impl::ActorRows(const StateQuerySpec& q, bool* more,
                                                        uint64_t* matched) {
  RowSelector selector(q);
  const std::string here = node_id_.Hex();
  // Bounded by this node's actor workers, queued constructors and remembered ends.
  std::unordered_set<std::string> offered;
  auto offer = [&](const std::string& actor, StateRowFields fields) {
    if (!offered.insert(actor).second) return;
    fields.emplace("node", here);  // (an end kept for a node that died says that node)
    auto field = [&](const std::string& key) -> std::string {
      auto it = fields.find(key);
      return it == fields.end() ? "" : it->second;
    };
    selector.Offer(actor, field, [&] {
      fields["actor"] = actor;
      return fields;
    });
  };
  std::vector<const Worker*> live;
  for (auto& [wid, w] : leases_.workers().workers()) {
    if (w.pid > 0 && !w.actor.empty()) live.push_back(&w);
  }
  std::sort(live.begin(), live.end(), [](const Worker* a, const Worker* b) {
    if (a->closing() != b->closing()) return !a->closing();
    return a->actor_life > b->actor_life;
  });
  for (const Worker* w : live) {
    StateRowFields row{{"job", w->job.Hex()},
                       {"class", w->actor_class},
                       {"state", w->closing()               ? "EXITING"
                                 : w->actor_address.empty() ? "PENDING"
                                                            : "ALIVE"},
                       {"pid", Pid(w->spawned_pid)},
                       {"restarts", std::to_string(w->actor_life)},
                       {"max_restarts", std::to_string(w->actor_max_restarts)},
                       {"worker", w->id.Hex()},
                       {"address", w->actor_address}};
    if (!w->actor_restart_cause.empty()) row["restart_cause"] = w->actor_restart_cause;
    offer(w->actor, std::move(row));
  }
  // A constructor queued here (its first life, or a restart its owner asked for); a forwarded
  // one is answered for by the node it went to.
  for (auto& [tid, t] : tasks_.all()) {
    if (!t.actor_creation || t.actor.empty() || t.state != RoutedTask::kQueued) continue;
    StateRowFields row{{"job", t.job.Hex()},
                       {"class", t.function},
                       {"state", t.actor_life > 0 ? "RESTARTING" : "PENDING"},
                       {"pid", ""},
                       {"restarts", std::to_string(t.actor_life)},
                       {"max_restarts", std::to_string(t.max_restarts)}};
    if (!t.restart_cause.empty()) row["restart_cause"] = t.restart_cause;
    offer(t.actor, std::move(row));
  }
  actor_ends_.ForEachNewestFirst([&](const ActorEnd& e) {
    std::string death;
    StateRowFields row{{"job", e.job.Hex()},
                       {"class", e.class_name},
                       {"node", e.node},
                       {"state", ActorEndState(e, &death)},
                       {"pid", Pid(e.pid)},
                       {"restarts", std::to_string(e.life)},
                       {"max_restarts", std::to_string(e.max_restarts)},
                       {"cause", e.cause},
                       {"death", death},
                       {"ended_micros", std::to_string(e.ended_micros)}};
    if (!e.restart_cause.empty()) row["restart_cause"] = e.restart_cause;
    offer(e.actor, std::move(row));
  });
  return selector.Take(more, matched);
}

StateRowFields TaskRouter::Impl::NodeRow() {
  StateRowFields row{{"node", node_id_.Hex()}};
  size_t running = 0, queued = 0, actors = 0, workers = 0;
  for (auto& [wid, w] : leases_.workers().workers()) {
    if (w.pid <= 0) continue;
    ++workers;
    if (w.is_actor && !w.closing()) ++actors;
    if (!w.is_actor && !w.assigned.empty()) ++running;
  }
  for (auto& [tid, t] : tasks_.all()) {
    if (t.state == RoutedTask::kQueued) ++queued;
  }
  row["running_tasks"] = std::to_string(running);
  row["queued_tasks"] = std::to_string(queued);
  row["tasks"] = std::to_string(tasks_.size());
  // Tasks submitted by callers still connected that have not answered them (it drops to 0 once
  // each is answered, however it ended: a leak shows here).
  size_t caller_tasks = 0;
  for (auto& [cid, c] : conns_) {
    if (c.role == Role::kCaller) caller_tasks += c.tasks.size();
  }
  row["caller_tasks"] = std::to_string(caller_tasks);
  row["actors"] = std::to_string(actors);
  row["workers"] = std::to_string(workers);
  row["total"] = options_.total.ToString();
  row["available"] = leases_.available().ToString();
  row["cpus_total"] = Num(options_.total.Get("CPU"));
  row["cpus_used"] = Num(options_.total.Get("CPU") - leases_.available().Get("CPU"));
  row["gpus_total"] = Num(options_.total.Get("GPU"));
  row["gpus_used"] = Num(options_.total.Get("GPU") - leases_.available().Get("GPU"));
  row["labels"] = LabelsToString(options_.labels);
  ObjectStoreStats s = options_.store->Stats();
  row["store_used"] = std::to_string(s.used_bytes);
  row["store_capacity"] = std::to_string(s.capacity_bytes);
  row["store_objects"] = std::to_string(s.objects_in_memory + s.objects_on_disk_only);
  row["spilled"] = std::to_string(s.bytes_on_disk_only);
  row["spilled_objects"] = std::to_string(s.objects_on_disk_only);
  for (auto& [k, v] : machine_.Snapshot()) row[k] = v;
  return row;
}

}  // namespace cumulus
