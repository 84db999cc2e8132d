#include "runtime/node/memory_monitor.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

#include "runtime/base/logging.h"
#include "runtime/node/detect_resources.h"
#include "runtime/node/job_supervisor.h"
#include "scheduler/node_policy.h"

namespace cumulus {

MemoryUse MemoryMonitor::WorkerMemory(const WorkerPool& workers, uint64_t limit) {
  MemoryUse m;
  m.limit = limit;
  for (auto& [id, w] : workers.workers()) {
    if (w.pid <= 0) continue;
    // "RssAnon:    123456 kB"; a process that has exited has none.
    std::ifstream status("/proc/" + std::to_string(w.pid) + "/status");
    for (std::string key; status >> key;) {
      if (key == "RssAnon:") {
        uint64_t kib = 0;
        status >> kib;
        m.used += kib * 1024;
        break;
      }
      status.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
  }
  return m;
}

void MemoryMonitor::Tick(TimePoint now, WorkerPool& workers, TaskTable& tasks) {
  if (now < next_check_) return;
  next_check_ = now + options_.every;
  if (options_.threshold >= 1.0 || now < cooldown_until_) return;
  const bool workers_only = options_.worker_memory_limit > 0;
  double used = (workers_only ? WorkerMemory(workers, options_.worker_memory_limit) : MemoryUsage())
                    .fraction();
  if (used < options_.threshold) return;
  std::vector<std::pair<Worker*, const RoutedTask*>> running;
  std::vector<RunningTask> candidates;
  for (auto& [id, w] : workers.workers()) {
    if (w.is_actor || w.assigned.empty() || w.pid <= 0 || w.closing() ||
        !w.killed_because.empty()) {
      continue;  // (a worker whose connection closed is exiting already)
    }
    const RoutedTask* t = tasks.Find(w.assigned.front());
    if (!t || t->actor_creation) continue;
    running.emplace_back(&w, t);
    candidates.push_back({MayRetry(t->max_retries, t->attempt), t->assigned_at});
  }
  auto chosen = ChooseMemoryVictim(candidates);
  if (!chosen) return;
  auto [victim, task] = running[*chosen];
  char why[200];
  std::snprintf(why, sizeof(why),
                "was killed by node %s to free memory (%.1f%% %sused, threshold %.1f%%)",
                options_.node_name.c_str(), used * 100,
                workers_only ? "of its workers' memory limit " : "", options_.threshold * 100);
  victim->killed_because = why;
  workers.Kill(*victim);
  kills_++;
  cooldown_until_ = now + std::chrono::seconds(1);  // let the kernel reclaim it first
  std::string line =
      "cumulus: task " + task->function + " (pid " + std::to_string(victim->pid) + ") " + why +
      (candidates[*chosen].retriable ? "; it will be retried" : "; it has no retries left");
  CUMULUS_LOG(WARN) << "node: " << line;
  // Into the job's log on this node (shipped to `cumulus logs JOB`).
  line += "\n";
  int fd = open(JobSupervisor::WorkerLogPath(options_.work_dir, victim->job).c_str(),
                O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd >= 0) {
    (void)!write(fd, line.data(), line.size());
    close(fd);
  }
}

}  // namespace cumulus
