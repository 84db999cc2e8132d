#include "runtime/node/worker_pool.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/base/spawn.h"
#include "runtime/node/job_supervisor.h"

extern char** environ;

namespace cumulus {

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

void WorkerPool::KillAll() {
  for (auto& [id, w] : workers_) {
    if (w.pid > 0) {
      kill(w.pid, SIGKILL);
      waitpid(w.pid, nullptr, 0);
      w.pid = -1;
    }
    if (w.pidfd >= 0) {
      if (on_forget_) on_forget_(w);
      close(w.pidfd);
      w.pidfd = -1;
    }
  }
  for (pid_t pid : zombies_) waitpid(pid, nullptr, WNOHANG);
  zombies_.clear();
}

void WorkerPool::SetEnvironment(const std::string& name, const std::string& value) {
  for (auto& [n, v] : options_.environment) {
    if (n == name) {
      v = value;
      return;
    }
  }
  options_.environment.emplace_back(name, value);
}

Result<Worker*> WorkerPool::Spawn(const JobId& job, const JobProgram& program,
                                  const std::string& key, const std::string& devices,
                                  TimePoint now) {
  WorkerId wid = WorkerId::FromRandom();
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (kv.rfind("CUMULUS_", 0) == 0 || kv.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0) continue;
    env_strings.emplace_back(kv);
  }
  env_strings.push_back("CUMULUS_WORKER_ID=" + wid.Hex());
  env_strings.push_back("CUMULUS_JOB_ID=" + job.Hex());
  for (auto& [name, value] : options_.environment) env_strings.push_back(name + "=" + value);
  env_strings.push_back("CUDA_VISIBLE_DEVICES=" + devices);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = program.argv;
  if (args.empty()) args.push_back(program.path);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  // Workers of a submitted job write to its log on this node (shipped to `cumulus logs`).
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  std::string log;
  if (program.submitted) {
    log = JobSupervisor::WorkerLogPath(options_.work_dir, job);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  }
  CleanSpawnAttributes attributes;  // not the daemon's blocked SIGINT and SIGTERM
  int rc =
      posix_spawn(&pid, program.path.c_str(), &actions, attributes.get(), argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return Status::ResourceExhausted("cannot start " + program.path + ": " + std::strerror(rc));
  }
  Worker& w = workers_[wid];
  w.id = wid;
  w.pid = pid;
  w.spawned_pid = pid;
  w.job = job;
  w.key = key;
  w.started = now;
  w.idle_since = now;
  // The loop is told the moment the process exits (no polling); Reap is the fallback.
  w.pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (w.pidfd >= 0) fcntl(w.pidfd, F_SETFD, FD_CLOEXEC);
  if (w.pidfd >= 0 && on_started_) on_started_(w);
  return &w;
}

Worker* WorkerPool::Find(const WorkerId& id) {
  auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : &it->second;
}

Worker* WorkerPool::FindIdle(const std::string& key) {
  for (auto& [id, w] : workers_) {
    if (!w.leased && !w.is_actor && !w.closing() && w.key == key) return &w;
  }
  return nullptr;
}

Worker* WorkerPool::FindPipelined(const JobId& job, const std::string& lease_class, size_t depth) {
  Worker* best = nullptr;
  for (auto& [id, w] : workers_) {
    if (w.leased && !w.is_actor && !w.blocked && !w.closing() && w.lease_class == lease_class &&
        w.job == job && w.assigned.size() < depth &&
        (!best || w.assigned.size() < best->assigned.size())) {
      best = &w;
    }
  }
  return best;
}

bool WorkerPool::AtTaskWorkerLimit() const {
  size_t n = 0;
  for (auto& [id, w] : workers_) n += w.is_actor || w.closing() ? 0 : 1;
  return n >= options_.max_task_workers;
}

void WorkerPool::ConnectionClosed(Worker& w, TimePoint now) {
  w.conn = 0;
  w.closed_at = now;
}

void WorkerPool::Kill(Worker& w) {
  if (w.pid > 0) kill(w.pid, SIGKILL);
}

std::vector<std::pair<WorkerId, std::string>> WorkerPool::Reap(TimePoint now) {
  for (auto it = zombies_.begin(); it != zombies_.end();) {
    it = waitpid(*it, nullptr, WNOHANG) != 0 ? zombies_.erase(it) : std::next(it);
  }
  std::vector<std::pair<WorkerId, std::string>> gone;
  for (auto& [id, w] : workers_) {
    if (w.pid <= 0) {
      // Reaped before, or never started: only its connection kept it.
      if (w.closing()) gone.emplace_back(id, "closed its connection");
      continue;
    }
    if (auto how = ReapIfExited(w)) {
      gone.emplace_back(id, *how);
    } else if (w.closing()) {
      if (now - w.closed_at > options_.exit_grace) kill(w.pid, SIGKILL);
    } else if (!w.conn && now - w.started > options_.start_timeout) {
      kill(w.pid, SIGKILL);
    } else if (!w.leased && !w.is_actor && w.assigned.empty() &&
               now - w.idle_since > options_.idle_lifetime) {
      kill(w.pid, SIGKILL);
    }
  }
  return gone;
}

std::optional<std::string> WorkerPool::ReapIfExited(Worker& w) {
  if (w.pid <= 0) return std::nullopt;
  int status = 0;
  pid_t r = waitpid(w.pid, &status, WNOHANG);
  if (r == w.pid) {
    w.pid = -1;
    return DescribeExit(status);
  }
  if (r < 0 && errno == ECHILD) {
    w.pid = -1;
    return std::string(w.closing() ? "closed its connection" : "ended");
  }
  return std::nullopt;
}

void WorkerPool::Remove(const WorkerId& id) {
  auto it = workers_.find(id);
  if (it == workers_.end()) return;
  Worker& w = it->second;
  if (w.pidfd >= 0) {
    if (on_forget_) on_forget_(w);
    close(w.pidfd);
  }
  if (w.pid > 0) zombies_.push_back(w.pid);
  workers_.erase(it);
}

}  // namespace cumulus
