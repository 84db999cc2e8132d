// JobSupervisor: a node's half of `cumulus submit`. It
//   - waits on the head's key-value store for requests addressed to this node (kJobQueueNamespace,
//     woken by a "bell" key: no polling), and for each "run" fetches the job's package, unpacks
//     it under WORK_DIR/submitted/JOB, and starts the driver there with the cluster's address,
//     token, this node's socket and the job id in its environment, its output in the job's log
//     file; once the driver exited and its output is shipped, the directory and the log go (and
//     at start, those of jobs that ended while no node process of this data dir ran);
//   - on "stop" sends the driver SIGTERM, then SIGKILL after a grace period (its node ends
//     everything the job started when the driver's connection closes);
//   - records each job's state (RUNNING, then SUCCEEDED, FAILED with the exit status, or
//     STOPPED) in its submission record, which lives in the head's control store;
//   - ships the new bytes of every job log on this node (drivers', and workers' of submitted jobs)
//     to the head every half second (kJobLogsNamespace), where `cumulus logs` reads them;
//   - records when a driver attached to this node went away (kJobEndsNamespace), and recent
//     failures on this node (kFailuresNamespace, the last 100 per node).
// Head calls run on the supervisor's own threads, never on the node's task loop.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/net/tcp.h"

namespace cumulus {

struct JobSupervisorOptions {
  NodeId node_id;
  HostPort head;
  std::string token;
  std::string work_dir;     // jobs/ and logs/ are made here
  std::string core_socket;  // where the drivers it starts connect
  // A serialized NodeStateReport of what the node holds, sent to the head every 2 s.
  std::function<std::string()> state_report;
  Clock* clock = &SystemClock::Get();  // must outlive the supervisor
};

class JobSupervisor {
 public:
  static Result<std::unique_ptr<JobSupervisor>> Start(const JobSupervisorOptions& options);
  ~JobSupervisor();  // stops the drivers it started, ships what is left of the logs

  // The node registered again under a new id.
  void SetNodeId(const NodeId& id);
  // A driver attached to this node went away (called from the task loop: does not block).
  void JobEnded(const JobId& job);
  // Something died on this node (recorded at the head for `cumulus status`; does not block).
  void RecordFailure(const std::string& what);
  // Where workers of a submitted job on this node write their output.
  static std::string WorkerLogPath(const std::string& work_dir, const JobId& job);

  class Impl;

 private:
  explicit JobSupervisor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cumulus
