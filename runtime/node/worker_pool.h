// WorkerPool: the worker processes of one node. A worker runs one job's program with the node's
// sockets in its environment and exactly the GPUs of its lease in CUDA_VISIBLE_DEVICES; it takes
// leases of that job and device set (its `key`) one after another, and is ended after a minute
// idle. An actor's worker is its own. The pool reaps exited workers without blocking: a worker
// whose connection closed is given a moment to exit, then killed, and reported with how it ended.
//
// Not thread-safe: the node's event loop owns it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/node/job_programs.h"
#include "scheduler/bundle_table.h"
#include "scheduler/resources.h"

namespace cumulus {

struct Worker {
  WorkerId id;
  pid_t pid = -1;          // -1 once reaped
  int pidfd = -1;          // readable once the process has exited (-1 where unsupported)
  pid_t spawned_pid = -1;  // for messages
  JobId job;
  std::string key;  // job + visible devices: which leases it can take
  uint64_t conn = 0;
  TimePoint started{};
  TimePoint idle_since{};
  bool is_actor = false;
  bool detached = false;  // hosts a detached actor: the end of its job leaves it running
  // Its lease, while it holds one.
  bool leased = false;
  ResourceSet lease;
  std::vector<uint32_t> gpu_ids;
  std::string lease_class;
  bool in_bundle = false;  // the lease came from a placement group's bundle
  BundleKey bundle;
  int64_t lent_cpu = 0;  // CPU units of its lease given back to the node while it is blocked
  bool blocked = false;
  std::deque<TaskId> assigned;     // in the order sent; the front one runs
  std::string killed_because;      // the node killed it on purpose (memory): says why
  std::string actor, actor_class;  // the actor it hosts (hex id, constructor), once assigned
  int actor_life = 0, actor_max_restarts = 0;  // of the actor it hosts (RoutedTask's)
  std::string actor_restart_cause;
  std::string actor_type;     // the actor's class (typeid name), as the job's catalog has it
  std::string actor_address;  // host:port for direct calls, once its constructor answered
  TimePoint closed_at{};      // its connection closed at (it is exiting); zero while open
  bool closing() const { return closed_at != TimePoint{}; }
};

struct WorkerPoolOptions {
  // Put in each worker's environment.
  std::vector<std::pair<std::string, std::string>> environment;
  std::string work_dir;                               // job logs are under it
  size_t max_task_workers = 4;                        // task (not actor) workers at once
  Duration start_timeout = std::chrono::seconds(30);  // spawn to hello
  Duration idle_lifetime = std::chrono::seconds(60);
  Duration exit_grace = std::chrono::milliseconds(100);  // connection closed to exit
};

class WorkerPool {
 public:
  explicit WorkerPool(WorkerPoolOptions options) : options_(std::move(options)) {}
  ~WorkerPool() { KillAll(); }
  // Kills and reaps every worker it started.
  void KillAll();
  // Called when a worker with a pidfd was started (watch it), and before its pidfd is closed.
  void SetHooks(std::function<void(const Worker&)> on_started,
                std::function<void(const Worker&)> on_forget) {
    on_started_ = std::move(on_started);
    on_forget_ = std::move(on_forget);
  }
  // Sets a variable of the environment of workers started from now on.
  void SetEnvironment(const std::string& name, const std::string& value);

  // Starts a worker of `job` running `program` with `devices` visible. ResourceExhausted if the
  // process cannot be started.
  Result<Worker*> Spawn(const JobId& job, const JobProgram& program, const std::string& key,
                        const std::string& devices, TimePoint now);

  Worker* Find(const WorkerId& id);
  // A worker with this key that holds no lease and hosts no actor, or nullptr.
  Worker* FindIdle(const std::string& key);
  // The leased task worker of `job` and `lease_class` with the fewest tasks queued, below
  // `depth`, not blocked; or nullptr.
  Worker* FindPipelined(const JobId& job, const std::string& lease_class, size_t depth);
  // True if the node runs as many task workers (not counting those exiting) as it may.
  bool AtTaskWorkerLimit() const;

  // The worker's connection closed: it is exiting. Reaped by Reap.
  void ConnectionClosed(Worker& w, TimePoint now);
  // Kills the worker's process (it is reaped and reported by Reap).
  void Kill(Worker& w);
  // Reaps exited workers and kills those that never connected, stayed idle too long, or did not
  // exit after their connection closed. Returns the workers that ended, with how.
  std::vector<std::pair<WorkerId, std::string>> Reap(TimePoint now);
  // How the worker ended if its process has exited (it is reaped now); nullopt while it runs.
  std::optional<std::string> ReapIfExited(Worker& w);
  // Forgets a worker; a process still running is reaped later.
  void Remove(const WorkerId& id);

  std::unordered_map<WorkerId, Worker>& workers() { return workers_; }
  const std::unordered_map<WorkerId, Worker>& workers() const { return workers_; }

 private:
  WorkerPoolOptions options_;
  std::unordered_map<WorkerId, Worker> workers_;
  std::vector<pid_t> zombies_;  // killed, not yet reaped
  std::function<void(const Worker&)> on_started_, on_forget_;
};

// "killed by signal 9", "exited with status 1".
std::string DescribeExit(int wait_status);

}  // namespace cumulus
