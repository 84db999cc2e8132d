// MemoryMonitor: before the kernel's OOM killer picks a victim at random (often the node itself),
// the node kills the newest task it runs that may be retried (else the newest task; actors are
// left alone: their state would go), and tells the task's job in its log on this node. The task
// is then retried like any task whose worker died (WorkerGone reads `killed_because`). After a
// kill it waits a second for the kernel to reclaim the memory.
//
// Not thread-safe: the node's event loop owns it.
#pragma once

#include <string>

#include "runtime/base/clock.h"
#include "runtime/node/task_table.h"
#include "runtime/node/worker_pool.h"

namespace cumulus {

struct MemoryMonitorOptions {
  double threshold = 0.95;  // fraction of the machine's memory in use; 1 turns it off
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

 private:
  MemoryMonitorOptions options_;
  TimePoint next_check_{};
  TimePoint cooldown_until_{};
};

}  // namespace cumulus
