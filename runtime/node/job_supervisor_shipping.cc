// JobSupervisor: the shipper thread. Every half second it reaps drivers that exited (SIGKILLs
// those whose stop grace is over), sends the new bytes of job logs, records how jobs ended,
// the jobs whose drivers went away and the recent failures, and this node's state report; at
// its first round it removes the files of jobs that ended before this process started.
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <vector>

#include "runtime/base/logging.h"
#include "runtime/core/messages.h"
#include "runtime/head/control_client.h"
#include "runtime/node/job_supervisor_impl.h"

namespace cumulus {

namespace {

constexpr auto kShipEvery = std::chrono::milliseconds(500);
constexpr uint64_t kMaxShipBytes = 1u << 20;  // per log entry

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "ended (status " + std::to_string(status) + ")";
}

}  // namespace

// What ended a cancelled driver: SIGTERM, or SIGKILL once its grace was over.
std::string JobSupervisor::Impl::HowStopped(const Running& r, const std::string& how) {
  std::string grace = std::to_string(
      std::chrono::duration_cast<std::chrono::milliseconds>(r.grace).count() / 1000.0);
  grace.erase(grace.find_last_not_of('0') + 1);
  if (!grace.empty() && grace.back() == '.') grace.pop_back();
  if (r.killed) {
    return "the driver was cancelled: it did not end within " + grace +
           " s of SIGTERM and was killed with SIGKILL (" + how + ")";
  }
  return "the driver was cancelled: it ended after SIGTERM (" + how + ")";
}

// ---- logs and exits ------------------------------------------------------------------------

void JobSupervisor::Impl::ShipLoop() {
  std::unique_ptr<ControlClient> head;
  std::map<std::string, uint64_t> shipped;              // log file -> bytes shipped
  std::vector<std::pair<JobId, std::string>> finished;  // exited, state not written yet
  std::vector<JobId> ended;
  std::vector<JobId> cleanup;  // ended jobs whose collective entries are still to delete
  std::vector<std::pair<int64_t, std::string>> failures;  // not yet at the head
  std::deque<std::string> failure_keys;                   // written, oldest first
  TimePoint next_report{};
  std::string reported_as;  // the node id the last state report was filed under
  // Logs of ended jobs, removed once shipped after the time given (workers may still be
  // writing their last lines when the job's end is recorded).
  std::vector<std::pair<std::string, TimePoint>> retiring;
  bool swept = false;  // files of jobs ended before this process started
  while (true) {
    bool stopping = !Pause(kShipEvery);
    // Exits and overdue stops.
    {
      std::lock_guard<std::mutex> lock(mu_);
      TimePoint now = options_.clock->Now();
      for (auto it = running_.begin(); it != running_.end();) {
        int status = 0;
        pid_t r = waitpid(it->second.pid, &status, WNOHANG);
        if (r == it->second.pid || (r < 0 && errno == ECHILD)) {
          std::string how = r == it->second.pid ? DescribeExit(status) : "ended";
          bool ok = r == it->second.pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
          finished.emplace_back(it->first, it->second.stop_requested
                                               ? "STOPPED:" + HowStopped(it->second, how)
                                           : ok ? "SUCCEEDED:" + how
                                                : "FAILED:the driver " + how);
          kill(-it->second.pid, SIGKILL);  // anything it left behind in its group
          it = running_.erase(it);
          continue;
        }
        if (now >= it->second.kill_at && !it->second.killed) {
          it->second.killed = true;
          kill(-it->second.pid, SIGKILL);
        }
        ++it;
      }
      ended.insert(ended.end(), ended_.begin(), ended_.end());
      ended_.clear();
      failures.insert(failures.end(), failures_.begin(), failures_.end());
      failures_.clear();
    }
    if (!head) {
      auto c = Connect();
      if (c.ok()) head = std::move(*c);
    }
    if (head && !swept && !stopping) {
      RemoveStaleJobFiles(*head);
      swept = true;
    }
    if (head) {
      Status st = ShipLogs(*head, &shipped);
      if (st.ok()) {
        // What was written to the retiring logs has been shipped: they can go.
        TimePoint now = options_.clock->Now();
        for (auto it = retiring.begin(); it != retiring.end();) {
          if (it->second > now) {
            ++it;
            continue;
          }
          std::error_code ec;
          std::filesystem::remove(it->first, ec);
          shipped.erase(it->first);
          it = retiring.erase(it);
        }
      }
      while (st.ok() && !finished.empty()) {
        auto [job, outcome] = finished.back();
        st = Finish(*head, job, outcome);
        if (st.ok()) {
          // The driver's output is at the head (shipped above, after it exited) and its state
          // is recorded: its files and its log on this node go.
          RemoveJobFiles(job);
          retiring.emplace_back(options_.work_dir + "/logs/driver-" + job.Hex() + ".log",
                                TimePoint{});
          finished.pop_back();
        }
      }
      while (st.ok() && !failures.empty()) {
        char key[64];
        std::snprintf(key, sizeof(key), "%016lld-%s",
                      static_cast<long long>(failures.front().first),
                      Node().Hex().substr(0, 8).c_str());
        st = head->KvPut(kFailuresNamespace, key, failures.front().second).status();
        if (!st.ok()) break;
        failures.erase(failures.begin());
        failure_keys.push_back(key);
        while (failure_keys.size() > 100) {  // keep the last 100 of this node
          (void)head->KvDelete(kFailuresNamespace, failure_keys.front());
          failure_keys.pop_front();
        }
      }
      TimePoint now = options_.clock->Now();
      std::string me = Node().Hex();
      if (st.ok() && !reported_as.empty() && (reported_as != me || stopping)) {
        // A report under an id this node no longer has (it rejoined, or it is stopping).
        st = head->KvDelete(kNodeStateNamespace, reported_as).status();
        if (st.ok()) reported_as.clear();
      }
      if (st.ok() && options_.state_report && now >= next_report && !stopping) {
        next_report = now + std::chrono::seconds(2);
        st = head->KvPut(kNodeStateNamespace, me, options_.state_report()).status();
        if (st.ok()) reported_as = me;
      }
      while (st.ok() && !ended.empty()) {
        JobEnd end{options_.clock->WallMicros()};
        st = head->KvPut(kJobEndsNamespace, ended.back().Hex(), EncodeRecord(end)).status();
        if (st.ok()) {
          cleanup.push_back(ended.back());
          retiring.emplace_back(JobSupervisor::WorkerLogPath(options_.work_dir, ended.back()),
                                options_.clock->Now() + std::chrono::seconds(2));
          ended.pop_back();
        }
      }
      while (st.ok() && !cleanup.empty()) {
        st = DeleteCollectiveEntries(*head, cleanup.back());
        if (st.ok()) cleanup.pop_back();
      }
      if (!st.ok()) head.reset();  // try again next round
    }
    if (stopping) return;
  }
}

// The job's collective groups are over: their rendezvous entries and declarations go, and so do
// the records of its objects that draining nodes handed on.
Status JobSupervisor::Impl::DeleteCollectiveEntries(ControlClient& head, const JobId& job) {
  for (const char* ns : {kCollectiveNamespace, kCollectiveGroupsNamespace, kObjectMovesNamespace}) {
    while (true) {
      CUMULUS_ASSIGN_OR_RETURN(auto page, head.KvList(ns, job.Hex() + "/", "", 1000,
                                                      /*keys_only=*/true));
      for (auto& [key, value] : page.entries) {
        CUMULUS_RETURN_IF_ERROR(head.KvDelete(ns, key).status());
      }
      if (!page.more || page.entries.empty()) break;
    }
  }
  return Status();
}

Status JobSupervisor::Impl::Finish(ControlClient& head, const JobId& job,
                                   const std::string& outcome) {
  auto record = Load(head, job);
  if (!record.ok())
    return record.status().code() == StatusCode::kNotFound ? Status() : record.status();
  size_t colon = outcome.find(':');
  record->state = outcome.substr(0, colon);
  record->message = outcome.substr(colon + 1);
  record->end_micros = options_.clock->WallMicros();
  CUMULUS_LOG(INFO) << "job supervisor: job " << job.Hex() << " " << record->state << ": "
                    << record->message;
  return Save(head, job, *record);
}

// Sends what was appended to each job log since the last round.
Status JobSupervisor::Impl::ShipLogs(ControlClient& head,
                                     std::map<std::string, uint64_t>* shipped) {
  std::error_code ec;
  std::string node8 = Node().Hex().substr(0, 8);
  for (auto& entry : std::filesystem::directory_iterator(options_.work_dir + "/logs", ec)) {
    std::string name = entry.path().filename().string();
    // driver-JOB.log, workers-JOB.log
    size_t dash = name.find('-');
    if (dash == std::string::npos || name.size() < dash + 5 ||
        name.compare(name.size() - 4, 4, ".log") != 0) {
      continue;
    }
    std::string source = name.substr(0, dash);
    std::string job = name.substr(dash + 1, name.size() - dash - 5);
    uint64_t size = std::filesystem::file_size(entry.path(), ec);
    if (ec) continue;
    uint64_t& done = (*shipped)[entry.path().string()];
    while (done < size) {
      uint64_t n = std::min<uint64_t>(size - done, kMaxShipBytes);
      std::string bytes(n, '\0');
      std::ifstream in(entry.path(), std::ios::binary);
      in.seekg(static_cast<std::streamoff>(done));
      in.read(bytes.data(), static_cast<std::streamsize>(n));
      bytes.resize(static_cast<size_t>(in.gcount()));
      if (bytes.empty()) break;
      char key[96];
      std::snprintf(key, sizeof(key), "%s/%016lld-%s-%s", job.c_str(),
                    static_cast<long long>(options_.clock->WallMicros()), node8.c_str(),
                    source.c_str());
      CUMULUS_RETURN_IF_ERROR(head.KvPut(kJobLogsNamespace, key, bytes).status());
      done += bytes.size();
    }
  }
  return Status();
}

}  // namespace cumulus
