// MemoryMonitor: before the kernel's OOM killer picks a victim at random (often the node itself),
// the node kills the newest task it runs that may be retried (else the newest task; actors are
// left alone: their state would go), and tells the task's job in its log on this node. The task
// is then retried like any task whose worker died (WorkerGone reads `killed_because`). After a
// kill it waits a second for the kernel to reclaim the memory.
//
// What it watches: the machine's memory (its cgroup's, in a container; MemoryUsage), or, with
// `worker_memory_limit`, the private memory (RssAnon) of this node's workers added up, against
// that many bytes: a budget for the node's workers on a shared machine, whatever else runs there.
//
// Not thread-safe: the node's event loop owns it.
#pragma once

#include <string>

#include "runtime/base/clock.h"
#include "runtime/node/detect_resources.h"
#include "runtime/node/task_table.h"
#include "runtime/node/worker_pool.h"

namespace cumulus {

struct MemoryMonitorOptions {
  double threshold = 0.95;  // fraction of the memory watched in use; 1 turns it off
  // Bytes; 0: the machine's (or cgroup's) memory is watched, else the workers' against this.
  uint64_t worker_memory_limit = 0;
  Duration every = std::chrono::milliseconds(250);
  std::string node_name;  // for messages
  std::string work_dir;   // job logs are under it
};

class MemoryMonitor {
 public:
  explicit MemoryMonitor(MemoryMonitorOptions options) : options_(std::move(options)) {}
  // Checks memory if it is time to; kills a victim if it is short.
  void Tick(TimePoint now, WorkerPool& workers, TaskTable& tasks);
  void set_node_name(const std::string& name) { options_.node_name = name; }
  // Tasks killed since start.
  uint64_t kills() const { return kills_; }
  // The private memory (RssAnon) of the pool's live workers, added up; `limit` as given.
  static MemoryUse WorkerMemory(const WorkerPool& workers, uint64_t limit);

 private:
  MemoryMonitorOptions options_;
  TimePoint next_check_{};
  TimePoint cooldown_until_{};
  uint64_t kills_ = 0;
};

}  // namespace cumulus
