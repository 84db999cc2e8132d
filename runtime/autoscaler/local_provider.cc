#include "runtime/autoscaler/local_provider.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/base/logging.h"
#include "runtime/base/numeric.h"
#include "runtime/base/spawn.h"
#include "runtime/cli/local_state.h"
#include "runtime/net/tcp.h"

extern char** environ;

namespace cumulus {

namespace fs = std::filesystem;

namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The value after "KEY " on a line of an `instance` file.
std::string InstanceField(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + " ", 0) == 0) return line.substr(key.size() + 1);
  }
  return "";
}

// The node id in the daemon's ready line, or "".
std::string NodeIdFromLog(const std::string& log) {
  const std::string marker = "cumulus node ready node_id=";
  size_t at = log.find(marker);
  if (at == std::string::npos) return "";
  at += marker.size();
  return log.substr(at, log.find_first_of(" \n", at) - at);
}

std::string LastLine(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  size_t nl = t.rfind('\n');
  std::string line = nl == std::string::npos ? t : t.substr(nl + 1);
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

// Whether /proc/PID/cmdline names `needle` among its arguments (so a reused pid is not taken
// for our process) and the process is not a zombie.
bool ProcessHas(int pid, const std::string& needle) {
  std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  if (stat.empty() || paren == std::string::npos || paren + 2 >= stat.size() ||
      stat[paren + 2] == 'Z') {
    return false;
  }
  std::string cmdline = ReadAll("/proc/" + std::to_string(pid) + "/cmdline");
  for (size_t at = cmdline.find(needle); at != std::string::npos;
       at = cmdline.find(needle, at + 1)) {
    size_t end = at + needle.size();  // the label ends there: "...=ID,..." or "...=ID\0"
    if (end == cmdline.size() || cmdline[end] == ',' || cmdline[end] == '\0') return true;
  }
  return false;
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Status::Unavailable("cannot write " + path);
  return Status();
}

}  // namespace

LocalProvider::LocalProvider(LocalProviderOptions options) : options_(std::move(options)) {
  std::random_device rd;
  seed_ = options_.settings.seed != 0 ? static_cast<uint64_t>(options_.settings.seed)
                                      : (static_cast<uint64_t>(rd()) << 32 | rd());
  failures_.seed(seed_);
  ids_.seed(static_cast<uint64_t>(rd()) << 32 ^ rd() ^ static_cast<uint64_t>(getpid()));
  root_ = options_.state_dir + "/" + options_.cluster_name;
}

LocalProvider::~LocalProvider() = default;

Result<std::unique_ptr<LocalProvider>> LocalProvider::Create(LocalProviderOptions options) {
  if (access(options.cumulus_binary.c_str(), X_OK) != 0) {
    return Status::InvalidArgument("local provider " + options.name + ": cannot run " +
                                   options.cumulus_binary +
                                   " (set cumulus_binary to the cumulus program)");
  }
  if (auto bytes = ParseBytes(options.settings.object_store_memory); !bytes.ok()) {
    return bytes.status().WithContext("local provider " + options.name + ": object_store_memory");
  }
  std::unique_ptr<LocalProvider> p(new LocalProvider(std::move(options)));
  Status st = cli::EnsurePrivateDir(p->options_.state_dir);
  if (st.ok()) st = cli::EnsurePrivateDir(p->root_);
  if (!st.ok()) {
    return Status::InvalidArgument("local provider " + p->options_.name +
                                   ": state dir: " + st.message());
  }
  return p;
}

Result<std::string> LocalProvider::LaunchOne(const NodeTypeConfig& type, const LaunchSpec& spec) {
  // REQUIRES: mu_ held.
  std::string id, dir;
  for (int attempt = 0;; ++attempt) {
    char hex[9];
    std::snprintf(hex, sizeof(hex), "%08x", static_cast<unsigned>(ids_() & 0xffffffffu));
    id = type.name + "-" + hex;
    std::replace(id.begin(), id.end(), '/', '-');  // one directory per instance
    dir = Dir(id);
    if (mkdir(dir.c_str(), 0700) == 0) break;
    if (errno != EEXIST || attempt > 10) {
      return Status::Unavailable("local provider " + options_.name + ": cannot create " + dir +
                                 ": " + std::strerror(errno));
    }
  }
  bool fail = options_.settings.failure_rate > 0 && std::uniform_real_distribution<double>(0, 1)(
                                                        failures_) < options_.settings.failure_rate;

  std::ostringstream delay;
  delay << options_.settings.boot_delay_s;
  // sh -c SCRIPT NAME DELAY [PROGRAM ARGS...]: sleeps the boot delay, then becomes the daemon,
  // or says why it failed. $0 is NAME; the instance label is on its command line from the start,
  // so a restarted provider recognises the process before and after the exec.
  std::vector<std::string> argv = {"/bin/sh", "-c", "", "cumulus-local-boot", delay.str()};
  if (fail) {
    std::ostringstream why;
    why << "injected launch failure (failure_rate " << options_.settings.failure_rate << ", seed "
        << seed_ << ")";
    argv[2] = "sleep \"$1\"; echo \"local provider: " + why.str() + "\" >&2; exit 1";
    argv.push_back(std::string(kInstanceIdLabel) + "=" + id);
  } else {
    argv[2] = "sleep \"$1\" && shift && exec \"$@\"";
    argv.push_back(options_.cumulus_binary);
    for (auto& a : NodeStartArgs(type, spec, id)) argv.push_back(a);
    for (const char* a : {"--data-dir", "", "--object-store-memory", ""}) argv.push_back(a);
    argv[argv.size() - 3] = dir + "/data";
    argv[argv.size() - 1] = options_.settings.object_store_memory;
  }

  std::string log = dir + "/node.log";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  CleanSpawnAttributes attributes(/*own_process_group=*/true);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, attributes.get(), args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    return Status::Unavailable("local provider " + options_.name +
                               ": cannot start a node: " + std::strerror(rc));
  }
  CUMULUS_RETURN_IF_ERROR(
      WriteFile(dir + "/instance", "type " + type.name + "\npid " + std::to_string(pid) + "\n"));
  if (fail)
    CUMULUS_LOG(INFO) << "local provider " << options_.name << ": " << id
                      << " will fail (injected, seed " << seed_ << ")";
  return id;
}

Result<std::vector<std::string>> LocalProvider::Launch(const NodeTypeConfig& type, int count,
                                                       const LaunchSpec& spec, TimePoint deadline) {
  if (count < 1) return Status::InvalidArgument("Launch: count must be at least 1");
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    auto id = LaunchOne(type, spec);
    if (!id.ok()) {
      for (auto& started : ids) {  // all or none
        int pid = std::atoi(InstanceField(ReadAll(Dir(started) + "/instance"), "pid").c_str());
        if (pid > 0) kill(-pid, SIGKILL);
        WriteFile(Dir(started) + "/terminated", "launch of the batch failed\n").ok();
      }
      return id.status();
    }
    ids.push_back(*id);
  }
  return ids;
}

bool LocalProvider::Alive(const std::string& id, int pid) {
  // REQUIRES: mu_ held.
  if (pid <= 0) return false;
  int status = 0;
  pid_t r = waitpid(pid, &status, WNOHANG);
  if (r == pid) {
    exit_status_[pid] = status;
    return false;
  }
  if (r == 0) return true;  // our child, running
  // Not our child (launched by an earlier process): look at it.
  return ProcessHas(pid, std::string(kInstanceIdLabel) + "=" + id);
}

Instance LocalProvider::Describe(const std::string& id) {
  // REQUIRES: mu_ held.
  std::string dir = Dir(id);
  std::string info = ReadAll(dir + "/instance");
  Instance in;
  in.id = id;
  in.node_type = InstanceField(info, "type");
  int pid = std::atoi(InstanceField(info, "pid").c_str());
  std::string log = ReadAll(dir + "/node.log");
  in.node_id = NodeIdFromLog(log);
  if (Alive(id, pid)) {
    in.state = in.node_id.empty() ? InstanceState::kPending : InstanceState::kRunning;
    return in;
  }
  std::string ended = dir + "/ended";
  if (access(ended.c_str(), F_OK) != 0) {
    std::string how = "unknown";  // a process an earlier provider started: no exit status
    if (auto it = exit_status_.find(pid); it != exit_status_.end()) {
      int st = it->second;
      how = WIFEXITED(st) ? "exit " + std::to_string(WEXITSTATUS(st))
                          : "signal " + std::to_string(WTERMSIG(st));
      exit_status_.erase(it);
    }
    WriteFile(ended, how + "\n").ok();
  }
  std::string how = LastLine(ReadAll(ended));
  bool asked = access((dir + "/terminated").c_str(), F_OK) == 0;
  if (asked || how == "exit 0") {
    in.state = InstanceState::kTerminated;
    in.detail = asked ? "terminated" : "exited";
  } else {
    in.state = InstanceState::kFailed;
    std::string last = LastLine(log);
    // "unknown": an earlier provider (monitor process) started it; its exit status is gone.
    std::string status = how == "unknown" ? "" : " (" + how + ")";
    in.detail = last.empty() ? "node daemon ended" + status + " printing nothing" : last + status;
  }
  return in;
}

Result<std::vector<Instance>> LocalProvider::List(TimePoint deadline) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Instance> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    std::string id = entry.path().filename().string();
    if (!entry.is_directory() || access((Dir(id) + "/instance").c_str(), F_OK) != 0) continue;
    Instance in = Describe(id);
    if (in.state == InstanceState::kTerminated || in.state == InstanceState::kFailed) {
      auto ended_at = fs::last_write_time(Dir(id) + "/ended", ec);
      if (!ec && fs::file_time_type::clock::now() - ended_at > options_.keep_ended) {
        fs::remove_all(Dir(id), ec);
        continue;
      }
    }
    out.push_back(std::move(in));
  }
  if (ec) {
    return Status::Unavailable("local provider " + options_.name + ": cannot list " + root_ + ": " +
                               ec.message());
  }
  return out;
}

bool LocalProvider::WaitUntilGone(int pid, const std::string& id, TimePoint deadline) {
  // A pidfd becomes readable when the process ends (Linux 5.3+); without one, check every 20 ms.
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  bool gone = false;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!Alive(id, pid)) {
        gone = true;
        break;
      }
    }
    int ms = MillisUntil(deadline);
    if (ms == 0) break;
    pollfd p{fd, POLLIN, 0};
    if (fd < 0 || poll(&p, 1, ms) > 0) poll(nullptr, 0, std::min(ms, 20));
  }
  if (fd >= 0) close(fd);
  return gone;
}

Status LocalProvider::Terminate(const std::string& id, TimePoint deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (id.empty() || id.find('/') != std::string::npos ||
      access((Dir(id) + "/instance").c_str(), F_OK) != 0) {
    return Status::NotFound("local provider " + options_.name + ": no instance " + id);
  }
  int pid = std::atoi(InstanceField(ReadAll(Dir(id) + "/instance"), "pid").c_str());
  CUMULUS_RETURN_IF_ERROR(WriteFile(Dir(id) + "/terminated", "terminate asked\n"));
  if (!Alive(id, pid)) return Status();
  // Still booting (the shell sleeping): end the whole group; a daemon: SIGTERM it alone, so it
  // leaves the cluster and stops its workers itself.
  bool booting = ReadAll("/proc/" + std::to_string(pid) + "/cmdline").rfind("/bin/sh", 0) == 0;
  kill(booting ? -pid : pid, SIGTERM);
  lock.unlock();  // others may List while this one waits
  bool gone = WaitUntilGone(pid, id, deadline);
  if (!gone) {
    kill(-pid, SIGKILL);
    CUMULUS_LOG(WARN) << "local provider " << options_.name << ": " << id
                      << " did not stop by its deadline; killed";
  }
  return Status();
}

}  // namespace cumulus
