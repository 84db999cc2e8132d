// JobSupervisor::Impl: the state of a node's job supervisor and its two threads. Private to
// runtime/node:
//   job_supervisor.cc           the requests thread (run and stop a job: fetch, unpack and start
//                               its driver) and the clean-up of jobs' files;
//   job_supervisor_shipping.cc  the shipper thread: drivers' exits and overdue stops, job logs,
//                               job ends, failures and state reports sent to the head.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/base/clock.h"
#include "runtime/core/messages.h"
#include "runtime/head/control_client.h"
#include "runtime/node/job_supervisor.h"

namespace cumulus {

class JobSupervisor::Impl {
 public:
  explicit Impl(const JobSupervisorOptions& o);
  void Begin();
  ~Impl();
  void SetNodeId(const NodeId& id);
  void JobEnded(const JobId& job);
  void RecordFailure(const std::string& what);

 private:
  struct Running {
    pid_t pid = -1;
    bool stop_requested = false;
    Duration grace{0};
    TimePoint kill_at = TimePoint::max();
    bool killed = false;  // SIGKILLed once its grace was over
  };

  bool Stopped() {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_;
  }
  NodeId Node() {
    std::lock_guard<std::mutex> lock(mu_);
    return node_id_;
  }
  // Sleeps `d` unless stopping; false when stopping.
  bool Pause(Duration d) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, d, [&] { return stop_; });
    return !stop_;
  }

  Result<std::unique_ptr<ControlClient>> Connect() {
    ControlClientOptions o;
    o.role = "node";
    o.request_timeout = std::chrono::seconds(30);
    return ControlClient::Connect(options_.head, options_.token, o);
  }

  // ---- requests (job_supervisor.cc) ----------------------------------------------------------

  void ControlLoop();

  Result<SubmissionRecord> Load(ControlClient& head, const JobId& job) {
    CUMULUS_ASSIGN_OR_RETURN(std::string raw, head.KvGet(kSubmissionsNamespace, job.Hex()));
    return DecodeRecord<SubmissionRecord>(raw);
  }
  Status Save(ControlClient& head, const JobId& job, const SubmissionRecord& r) {
    return head.KvPut(kSubmissionsNamespace, job.Hex(), EncodeRecord(r)).status();
  }
  bool RunJob(ControlClient& head, const JobId& job);
  std::string JobDir(const JobId& job) const;
  void RemoveJobFiles(const JobId& job);
  void RemoveStaleJobFiles(ControlClient& head);
  Status Launch(ControlClient& head, const JobId& job, SubmissionRecord& record, pid_t* started);
  void StopJob(ControlClient& head, const JobId& job, Duration grace);

  // ---- logs and exits (job_supervisor_shipping.cc) -------------------------------------------

  void ShipLoop();
  static std::string HowStopped(const Running& r, const std::string& how);
  static Status DeleteCollectiveEntries(ControlClient& head, const JobId& job);
  Status Finish(ControlClient& head, const JobId& job, const std::string& outcome);
  Status ShipLogs(ControlClient& head, std::map<std::string, uint64_t>* shipped);

  JobSupervisorOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  NodeId node_id_;
  int control_fd_ = -1;
  std::map<JobId, Running> running_;
  std::vector<JobId> ended_;
  std::vector<std::pair<int64_t, std::string>> failures_;
  std::thread control_, shipper_;
};

}  // namespace cumulus
