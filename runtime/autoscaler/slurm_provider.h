// SlurmProvider (`kind: slurm`): each instance is one SLURM batch job whose script runs a node
// daemon (`exec cumulus start --address HEAD --block ...`) for as long as the job lives.
//
//   Launch     `sbatch --parsable` once per instance, the job named PREFIX+CLUSTER.TYPE, asking
//              for the type's resources (--cpus-per-task, --mem in MiB, --gres=gpu:N), with its
//              output in OUTPUT_DIR/JOBID.out; the instance id is the job id, and the node's
//              label cumulus.instance_id is the job id.
//   List       `squeue --me -h -t all`, the jobs named PREFIX+CLUSTER.*: PENDING and the like are
//              pending; RUNNING and COMPLETING running; COMPLETED and CANCELLED terminated;
//              FAILED, TIMEOUT, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, ... failed (detail: the
//              state and reason). A job launched here before squeue ran that squeue no longer
//              shows (SLURM forgets finished jobs after MinJobAge) is terminated; one whose
//              sbatch returned while squeue ran is not listed unless squeue showed it (it may be
//              too new for squeue's answer, not finished). The node id is read from the job's
//              output when OUTPUT_DIR is readable here (a shared filesystem), else "".
//   Terminate  `scancel JOBID` (SLURM sends SIGTERM: the daemon leaves the cluster cleanly);
//              a job already finished is OK.
// Each command runs at most timeout_s (and never past the call's deadline); SLURM_CONF is set
// for them from slurm_conf when given. Errors name the command and its stderr.
//
// Thread-safe (the table of launched jobs is under a mutex; commands run outside it).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "runtime/autoscaler/node_provider.h"
#include "runtime/autoscaler/run_program.h"

namespace cumulus {

struct SlurmProviderOptions {
  std::string name = "slurm";
  SlurmProviderSettings settings;  // output_dir must be set
  std::string cluster_name = "cumulus";
  std::string cumulus_binary = "cumulus";  // as the SLURM node runs it
};

class SlurmProvider final : public NodeProvider {
 public:
  // InvalidArgument if the output dir cannot be made.
  static Result<std::unique_ptr<SlurmProvider>> Create(SlurmProviderOptions options);

  const std::string& name() const override { return options_.name; }
  Result<std::vector<std::string>> Launch(const NodeTypeConfig& type, int count,
                                          const LaunchSpec& spec, TimePoint deadline) override;
  Result<std::vector<Instance>> List(TimePoint deadline) override;
  Status Terminate(const std::string& id, TimePoint deadline) override;

  // The batch script a job of `type` runs (for tests and docs).
  std::string BatchScript(const NodeTypeConfig& type, const LaunchSpec& spec) const;

 private:
  explicit SlurmProvider(SlurmProviderOptions options) : options_(std::move(options)) {}
  std::string JobNamePrefix() const {
    return options_.settings.job_name_prefix + options_.cluster_name + ".";
  }
  // Runs a SLURM command to its end, within timeout_s and `deadline`; *allowed_s is the time it
  // was given (for the message if it runs out).
  Result<ProgramResult> Slurm(const std::vector<std::string>& argv, TimePoint deadline,
                              double* allowed_s);
  Status Failure(const std::vector<std::string>& argv, const ProgramResult& r, double allowed_s);

  SlurmProviderOptions options_;
  std::mutex mu_;
  std::map<std::string, std::string> launched_;  // job id -> type, jobs submitted here
  std::atomic<uint64_t> next_script_{0};         // names temporary script files
};

}  // namespace cumulus
