// JobSupervisor: the requests thread (a job's "run": fetch its package, unpack it, start its
// driver; "stop": SIGTERM, then SIGKILL after the grace), the clean-up of jobs' files, and the
// public calls. The shipper thread is in job_supervisor_shipping.cc.
#include "runtime/node/job_supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <mutex>
#include <vector>

#include "runtime/base/clock.h"
#include "runtime/base/file_write.h"
#include "runtime/base/logging.h"
#include "runtime/base/numeric.h"
#include "runtime/base/spawn.h"
#include "runtime/core/messages.h"
#include "runtime/head/control_client.h"
#include "runtime/node/job_supervisor_impl.h"

extern char** environ;

namespace cumulus {

namespace {

constexpr auto kStopGrace = std::chrono::seconds(5);  // SIGTERM, then SIGKILL (default)
constexpr int64_t kMaxStopGraceMs = 3'600'000;

// The grace of a stop request: "stop" (the default) or "stop:MILLISECONDS" (as `cumulus cancel
// --grace` writes it: 0 to 3600000). Another number is said and the default is used.
Duration StopGrace(const std::string& request) {
  if (request.rfind("stop:", 0) != 0) return kStopGrace;
  auto ms = ParseMilliseconds("a stop request's grace", request.substr(5), 0, kMaxStopGraceMs);
  if (!ms.ok()) {
    CUMULUS_LOG(WARN) << "job supervisor: " << ms.status().message() << "; using "
                      << std::chrono::duration_cast<std::chrono::seconds>(kStopGrace).count()
                      << " s";
    return kStopGrace;
  }
  return *ms;
}

// A relative path that stays inside the directory it is unpacked in.
bool SafeRelativePath(const std::string& p) {
  if (p.empty() || p[0] == '/') return false;
  for (auto& part : std::filesystem::path(p)) {
    if (part == "..") return false;
  }
  return true;
}

}  // namespace

JobSupervisor::Impl::Impl(const JobSupervisorOptions& o) : options_(o), node_id_(o.node_id) {
  // Drivers start in their own directory: every path handed to them must be absolute.
  std::error_code ec;
  options_.work_dir = std::filesystem::absolute(options_.work_dir, ec).string();
  options_.core_socket = std::filesystem::absolute(options_.core_socket, ec).string();
}

void JobSupervisor::Impl::Begin() {
  std::filesystem::create_directories(options_.work_dir + "/logs");
  std::filesystem::create_directories(options_.work_dir + "/submitted");
  control_ = std::thread([this] { ControlLoop(); });
  shipper_ = std::thread([this] { ShipLoop(); });
}

JobSupervisor::Impl::~Impl() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    if (control_fd_ >= 0) shutdown(control_fd_, SHUT_RDWR);  // wakes a KvWait in flight
    for (auto& [job, r] : running_) kill(-r.pid, SIGKILL);   // their node is going away
  }
  cv_.notify_all();
  if (control_.joinable()) control_.join();
  if (shipper_.joinable()) shipper_.join();
  for (auto& [job, r] : running_) {  // killed above (or just now): do not leave zombies
    kill(-r.pid, SIGKILL);
    waitpid(r.pid, nullptr, 0);
  }
}

void JobSupervisor::Impl::SetNodeId(const NodeId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  node_id_ = id;
}

void JobSupervisor::Impl::JobEnded(const JobId& job) {
  std::lock_guard<std::mutex> lock(mu_);
  ended_.push_back(job);
}

void JobSupervisor::Impl::RecordFailure(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failures_.size() < 1000) failures_.emplace_back(options_.clock->WallMicros(), what);
}

// ---- requests ------------------------------------------------------------------------------

void JobSupervisor::Impl::ControlLoop() {
  std::unique_ptr<ControlClient> head;
  while (!Stopped()) {
    if (!head) {
      auto c = Connect();
      if (!c.ok()) {
        if (!Pause(std::chrono::seconds(1))) return;
        continue;
      }
      head = std::move(*c);
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      control_fd_ = head->fd();
    }
    std::string me = Node().Hex();
    // Wait for the bell (or a while), then take every request addressed here.
    auto bell = head->KvWait(kJobQueueNamespace, me + "/bell", std::chrono::seconds(5));
    Status st =
        bell.ok() ? head->KvDelete(kJobQueueNamespace, me + "/bell").status() : bell.status();
    if (st.ok() || st.code() == StatusCode::kTimedOut) {
      auto page = head->KvList(kJobQueueNamespace, me + "/", "", 100);
      st = page.status();
      if (page.ok()) {
        for (auto& [key, value] : page->entries) {
          std::string rest = key.substr(me.size() + 1);
          if (rest == "bell") continue;
          auto job = JobId::FromHex(rest);
          bool handled = true;
          if (job.ok() && value == "run") {
            handled = RunJob(*head, *job);
          } else if (job.ok() && (value == "stop" || value.rfind("stop:", 0) == 0)) {
            StopJob(*head, *job, StopGrace(value));
          }
          if (!handled) continue;  // the head failed us: the request stays for the next round
          // Gone only if nobody changed it meanwhile (a "stop" written over a "run").
          auto now = head->KvGet(kJobQueueNamespace, key);
          if (now.ok() && *now == value) (void)head->KvDelete(kJobQueueNamespace, key);
        }
      }
    }
    if (!st.ok() && st.code() != StatusCode::kTimedOut) {
      if (!Stopped()) {
        CUMULUS_LOG(DEBUG) << "job supervisor: the head went away (" << st.message()
                           << "); reconnecting";
      }
      std::lock_guard<std::mutex> lock(mu_);
      control_fd_ = -1;
      head.reset();
    }
  }
}

// False if the head could not be read (try again later).
bool JobSupervisor::Impl::RunJob(ControlClient& head, const JobId& job) {
  auto record = Load(head, job);
  if (!record.ok()) {
    CUMULUS_LOG(WARN) << "job supervisor: cannot read job " << job.Hex() << ": "
                      << record.status().message();
    return record.status().code() == StatusCode::kNotFound;
  }
  if (record->state != "PENDING") return true;  // asked twice, or stopped before it started
  pid_t pid = -1;
  Status st = Launch(head, job, *record, &pid);
  if (pid <= 0) RemoveJobFiles(job);  // nothing runs there: nothing of the package stays
  if (!st.ok()) {
    if (st.code() == StatusCode::kUnavailable && pid < 0) return false;  // the head, or fork
    record->state = "FAILED";
    record->message = "could not start the driver on node " + Node().Hex() + ": " + st.message();
    record->end_micros = options_.clock->WallMicros();
    CUMULUS_LOG(WARN) << "job supervisor: job " << job.Hex() << ": " << record->message;
  }
  // RUNNING is written before the exit watcher may write how it ended.
  Status saved = Save(head, job, *record);
  if (!saved.ok()) {
    CUMULUS_LOG(WARN) << "job supervisor: cannot record the state of job " << job.Hex() << ": "
                      << saved.message();
  }
  if (pid > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    running_[job].pid = pid;
    if (stop_) kill(-pid, SIGKILL);  // the node is stopping under us
  }
  // Its files are on this node now; the head need not keep them.
  for (uint32_t i = 0; i < record->package_chunks && pid > 0; ++i) {
    (void)head.KvDelete(kPackagesNamespace, job.Hex() + "/" + std::to_string(i));
  }
  return true;
}

std::string JobSupervisor::Impl::JobDir(const JobId& job) const {
  return options_.work_dir + "/submitted/" + job.Hex();
}
void JobSupervisor::Impl::RemoveJobFiles(const JobId& job) {
  std::error_code ec;
  std::filesystem::remove_all(JobDir(job), ec);
  if (ec) {
    CUMULUS_LOG(WARN) << "job supervisor: cannot remove " << JobDir(job) << ": " << ec.message();
  }
}

// The files of submitted jobs that ended before this node process started: in this node's dir
// (an earlier process with the same pid) and in those of node processes of the same data dir
// that are gone. A job's are removed if the head has no record of it, its record says it ended,
// or its driver is not running any more.
void JobSupervisor::Impl::RemoveStaleJobFiles(ControlClient& head) {
  std::filesystem::path mine(options_.work_dir);
  std::vector<std::filesystem::path> dirs = {mine};
  std::error_code ec;
  for (auto& entry : std::filesystem::directory_iterator(mine.parent_path(), ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("node-", 0) != 0) continue;
    auto pid = ParseInteger("a node directory's pid", name.substr(5), {1, INT32_MAX});
    if (!pid.ok() || *pid == getpid()) continue;
    if (kill(static_cast<pid_t>(*pid), 0) != 0 && errno == ESRCH) dirs.push_back(entry.path());
  }
  for (auto& dir : dirs) {
    for (auto& entry : std::filesystem::directory_iterator(dir / "submitted", ec)) {
      auto job = JobId::FromHex(entry.path().filename().string());
      if (!job.ok()) continue;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (dir == mine && running_.count(*job)) continue;
      }
      auto record = Load(head, *job);
      if (!record.ok() && record.status().code() != StatusCode::kNotFound) continue;
      bool ended = !record.ok() || (record->state != "PENDING" && record->state != "RUNNING") ||
                   (record->state == "RUNNING" && record->pid > 0 && kill(record->pid, 0) != 0 &&
                    errno == ESRCH);
      if (!ended) continue;
      std::error_code rm;
      std::filesystem::remove_all(entry.path(), rm);
      CUMULUS_LOG(INFO) << "job supervisor: removed the files of ended job " << job->Hex()
                        << " left by an earlier node process (" << entry.path().string() << ")";
    }
  }
}

Status JobSupervisor::Impl::Launch(ControlClient& head, const JobId& job, SubmissionRecord& record,
                                   pid_t* started) {
  if (record.entrypoint.empty()) return Status::InvalidArgument("the job has no entrypoint");
  // The package: chunks in the head's store. Its size comes from a record anyone with the token
  // may write: checked before it is reserved.
  CUMULUS_RETURN_IF_ERROR(CheckInteger("the job's packageBytes", record.package_bytes,
                                       {0, static_cast<int64_t>(kMaxPackageBytes), "bytes"}));
  uint64_t chunks = (record.package_bytes + kPackageChunkBytes - 1) / kPackageChunkBytes;
  CUMULUS_RETURN_IF_ERROR(
      CheckInteger("the job's packageChunks", record.package_chunks,
                   {static_cast<int64_t>(chunks), static_cast<int64_t>(chunks)}));
  std::string packed;
  packed.reserve(record.package_bytes);
  for (uint32_t i = 0; i < record.package_chunks; ++i) {
    CUMULUS_ASSIGN_OR_RETURN(std::string chunk,
                             head.KvGet(kPackagesNamespace, job.Hex() + "/" + std::to_string(i)));
    packed += chunk;
  }
  if (packed.size() != record.package_bytes) {
    return Status::ObjectLost("the job's package has " + std::to_string(packed.size()) +
                              " bytes, expected " + std::to_string(record.package_bytes));
  }
  CUMULUS_ASSIGN_OR_RETURN(JobPackage package, DecodeRecord<JobPackage>(packed));
  std::string dir = JobDir(job);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::ResourceExhausted("cannot create " + dir + ": " + ec.message());
  for (auto& f : package.files) {
    if (!SafeRelativePath(f.path)) {
      return Status::InvalidArgument("the package holds a path outside its directory: " + f.path);
    }
    std::string path = dir + "/" + f.path;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    CUMULUS_RETURN_IF_ERROR(
        WriteFileAtomically(path, f.bytes.data(), f.bytes.size(), f.mode & 0755));
  }
  std::string program = record.entrypoint[0];
  if (program.find('/') == std::string::npos || SafeRelativePath(program)) {
    std::string in_dir = dir + "/" + program;
    if (access(in_dir.c_str(), X_OK) == 0) program = in_dir;
  }
  if (program.find('/') == std::string::npos || access(program.c_str(), X_OK) != 0) {
    return Status::NotFound("the entrypoint " + record.entrypoint[0] +
                            " is not an executable file of the job's package");
  }

  std::string log = options_.work_dir + "/logs/driver-" + job.Hex() + ".log";
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (kv.rfind("CUMULUS_", 0) == 0) continue;
    env_strings.emplace_back(kv);
  }
  env_strings.push_back("CUMULUS_ADDRESS=" + options_.head.ToString());
  env_strings.push_back("CUMULUS_TOKEN=" + options_.token);
  env_strings.push_back("CUMULUS_NODE_SOCKET=" + options_.core_socket);
  env_strings.push_back("CUMULUS_JOB_ID=" + job.Hex());
  env_strings.push_back("CUMULUS_JOB_NAME=" + record.name);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = record.entrypoint;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  // Its own process group (a stop reaches all it started), and not the daemon's blocked
  // SIGINT and SIGTERM.
  CleanSpawnAttributes attr(/*own_process_group=*/true);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, program.c_str(), &actions, attr.get(), argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Status::NotFound("cannot start " + program + ": " + std::strerror(rc));
  *started = pid;
  record.state = "RUNNING";
  record.pid = pid;
  record.node = Node().Hex();
  record.start_micros = options_.clock->WallMicros();
  CUMULUS_LOG(INFO) << "job supervisor: started job " << job.Hex() << " ("
                    << (record.name.empty() ? record.entrypoint[0] : record.name) << ") as pid "
                    << pid;
  return Status();
}

void JobSupervisor::Impl::StopJob(ControlClient& head, const JobId& job, Duration grace) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = running_.find(job);
    if (it != running_.end()) {
      if (!it->second.stop_requested) {
        it->second.stop_requested = true;
        it->second.grace = grace;
        it->second.kill_at = options_.clock->Now() + grace;
        kill(-it->second.pid, SIGTERM);
      }
      return;  // its state is written when it exits
    }
  }
  auto record = Load(head, job);
  if (record.ok() && record->state == "PENDING") {
    record->state = "STOPPED";
    record->message = "cancelled before it started";
    record->end_micros = options_.clock->WallMicros();
    (void)Save(head, job, *record);
  }
}

Result<std::unique_ptr<JobSupervisor>> JobSupervisor::Start(const JobSupervisorOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  impl->Begin();
  return std::unique_ptr<JobSupervisor>(new JobSupervisor(std::move(impl)));
}

JobSupervisor::JobSupervisor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JobSupervisor::~JobSupervisor() = default;
void JobSupervisor::SetNodeId(const NodeId& id) { impl_->SetNodeId(id); }
void JobSupervisor::JobEnded(const JobId& job) { impl_->JobEnded(job); }
void JobSupervisor::RecordFailure(const std::string& what) { impl_->RecordFailure(what); }
std::string JobSupervisor::WorkerLogPath(const std::string& work_dir, const JobId& job) {
  return work_dir + "/logs/workers-" + job.Hex() + ".log";
}

}  // namespace cumulus
