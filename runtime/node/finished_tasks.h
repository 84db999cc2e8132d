// FinishedTasks: a bounded ring of the tasks a node has answered for — finished or failed on one of
// its workers, or failed here (cancelled, infeasible, out of retries) — so that `cumulus list
// tasks` and `cumulus describe task` still answer for a task after it ended, for a while: as Ray's
// task event buffer, the oldest record goes first once `capacity` are kept. A task forwarded to
// another node is recorded by the node that ran it, not by the one that forwarded it.
//
// Not thread-safe: the node's event loop owns it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/node/task_table.h"

namespace cumulus {

// Records kept per node by default (~300 bytes each); CUMULUS_FINISHED_TASKS=N overrides it.
constexpr size_t kDefaultFinishedTasks = 10000;
constexpr size_t kMaxFinishedTasks = 10000000;

// How many finished tasks to keep: CUMULUS_FINISHED_TASKS (0..kMaxFinishedTasks) if set, else
// `fallback`; InvalidArgument (one line) for a value that is not such a number.
Result<size_t> FinishedTasksFromEnv(size_t fallback);

struct FinishedTask {
  TaskId id;
  JobId job;
  std::string function;
  bool failed = false;
  std::string error;  // failed: its status as the caller was told it ("Cancelled: ...")
  std::string node;   // hex id of the node that ran (or failed) it
  int pid = -1;       // its last worker's pid (-1: it never reached a worker here)
  std::string worker;
  uint32_t attempt = 0;  // of its last run, from 0
  int max_retries = 0;
  std::string demand, labels, purpose, actor;
  std::vector<TaskAttempt> attempts;  // earlier runs that ended without a result
  int64_t ended_micros = 0;
};

class FinishedTasks {
 public:
  explicit FinishedTasks(size_t capacity) : capacity_(capacity) {}

  // Keeps `t`, dropping the oldest record beyond the capacity (nothing with capacity 0).
  void Add(FinishedTask t);
  // Each record, newest first (so that of a task that ended twice, e.g. re-run to rebuild a lost
  // object, a caller that keeps the first record of an id keeps its latest end).
  void ForEach(const std::function<void(const FinishedTask&)>& fn) const;
  size_t size() const { return kept_.size(); }
  size_t capacity() const { return capacity_; }
  uint64_t dropped() const { return dropped_; }

 private:
  size_t capacity_;
  std::deque<FinishedTask> kept_;
  uint64_t dropped_ = 0;
};

// The record of `t`, which ended on node `node` (failed with `error` unless it is OK).
FinishedTask FinishedFrom(const RoutedTask& t, const std::string& node, int pid,
                          const std::string& worker, const Status& error, int64_t ended_micros);

}  // namespace cumulus
