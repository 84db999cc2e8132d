// TaskTable: the tasks a node holds — queued here, forwarded to another node, or on one of its
// workers — with one FIFO per scheduling class (shape, labels, strategy, group) and the retries
// waiting for their backoff. A class's queue is placed in order and stops at its first task that
// cannot be placed, so a long queue costs nothing per pass.
//
// Not thread-safe: the node's event loop owns it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "cumulus/ids.h"
#include "runtime/base/clock.h"
#include "runtime/core/messages.h"

namespace cumulus {

struct Worker;

// One earlier run of a task that ended without a result (for `cumulus describe TASK`).
struct TaskAttempt {
  std::string node;   // hex id of the node it ran on
  int pid = -1;       // its worker's pid (-1: on another node)
  std::string cause;  // why it ended ("killed by signal 9", "lost the connection to node ...")
  int64_t ended_micros = 0;
};
// A task keeps at most this many earlier attempts (the oldest go first).
constexpr size_t kMaxTaskAttemptsKept = 8;

struct RoutedTask {
  TaskId id;
  JobId job;
  std::string frame;  // the submitTask frame as it arrived: forwarded or sent to a worker as is
  TaskRequirements req;
  std::string function;
  bool actor_creation = false;
  bool detached = false;  // a detached actor's constructor: its worker outlives the job
  int max_retries = 3;
  uint32_t attempt = 0;
  uint32_t hops = 0;
  uint64_t origin = 0;  // the connection its result goes back to
  enum State { kQueued, kForwarded, kOnWorker } state = kQueued;
  NodeId forwarded_to;
  WorkerId worker;
  bool cancelled = false;
  std::string class_key;             // its scheduling class
  bool waiting_retry = false;        // waiting for its backoff, not in a queue
  bool waiting_for_program = false;  // its job's program could not be fetched yet
  TimePoint waiting_since{};
  TimePoint assigned_at{};            // when it was handed to its worker
  std::string actor;                  // an actor creation's actor id (hex)
  int actor_life = 0;                 // an actor creation: 0, or n after its n-th restart
  int max_restarts = 0;               // an actor creation's (-1: forever)
  std::string restart_cause;          // an actor creation after a restart: why it restarts
  std::string actor_type;             // an actor creation: its class (typeid name)
  std::vector<TaskAttempt> attempts;  // earlier runs, at most kMaxTaskAttemptsKept
  std::string wait_reason;            // why the last scheduling pass left it queued

  // Remembers an earlier run that ended (`cause`), dropping the oldest beyond the bound.
  void AddAttempt(TaskAttempt a) {
    if (attempts.size() >= kMaxTaskAttemptsKept) attempts.erase(attempts.begin());
    attempts.push_back(std::move(a));
  }
  // For the timeline: when it arrived here, when it was handed to its worker (wall micros).
  int64_t arrived_us = 0;
  int64_t dispatched_us = 0;
  // Nobody will read its result (its caller left): what it stored is freed when it answers.
  bool free_results = false;

  std::string What() const { return (actor_creation ? "actor " : "task ") + function; }
};

// The scheduling class of a task: tasks of one class are placed in order.
std::string SchedulingClass(const TaskRequirements& req, bool actor_creation);
// A submitted task from its spec and the words of its frame; its result goes back to `origin`.
RoutedTask TaskFromSpec(proto::TaskSpec::Reader spec, kj::ArrayPtr<const capnp::word> words,
                        uint64_t origin);

class TaskTable {
 public:
  using Queues = std::map<std::string, std::deque<TaskId>>;

  RoutedTask* Find(const TaskId& id);
  bool Contains(const TaskId& id) const { return tasks_.count(id) > 0; }
  // Adds a task and queues it at the back of its class.
  RoutedTask& Add(RoutedTask task);
  void Erase(const TaskId& id) { tasks_.erase(id); }
  void EraseJob(const JobId& job);

  // Back to its class's queue (at the front: it was there before, e.g. it had not started).
  void Requeue(RoutedTask& t, bool front);
  // Queued again at `due` (a retry's backoff, a program not fetched yet).
  void RequeueAt(RoutedTask& t, TimePoint due);
  // Queues the retries that are due; true if any.
  bool RequeueDue(TimePoint now);

  // The queues, for the scheduling pass (which pops what it placed and erases empty queues).
  Queues& queues() { return queues_; }
  std::vector<TaskId> ForwardedTo(const NodeId& node) const;
  // Rows for `cumulus list tasks` (at most `limit`); `worker` finds a task's worker.
  std::vector<TaskStateRow> Rows(size_t limit,
                                 const std::function<const Worker*(const WorkerId&)>& worker) const;
  std::unordered_map<TaskId, RoutedTask>& all() { return tasks_; }
  size_t size() const { return tasks_.size(); }

 private:
  std::unordered_map<TaskId, RoutedTask> tasks_;
  Queues queues_;                             // scheduling class -> FIFO
  std::multimap<TimePoint, TaskId> delayed_;  // waiting to be queued again
};

}  // namespace cumulus
