#include "runtime/autoscaler/slurm_provider.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "runtime/autoscaler/command_provider.h"
#include "runtime/cli/local_state.h"

namespace cumulus {

namespace {

// Stands for the job id in the node's arguments until the script is written.
constexpr const char* kJobIdMark = "@CUMULUS_SLURM_JOB_ID@";

// `arg` single-quoted for sh, with every kJobIdMark becoming "$SLURM_JOB_ID".
std::string ShellWord(const std::string& arg) {
  std::string out = "'";
  for (size_t i = 0; i < arg.size();) {
    if (arg.compare(i, std::strlen(kJobIdMark), kJobIdMark) == 0) {
      out += "'\"$SLURM_JOB_ID\"'";
      i += std::strlen(kJobIdMark);
      continue;
    }
    out += arg[i] == '\'' ? std::string("'\\''") : std::string(1, arg[i]);
    ++i;
  }
  return out + "'";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string NodeIdFromOutput(const std::string& out) {
  const std::string marker = "cumulus node ready node_id=";
  size_t at = out.find(marker);
  if (at == std::string::npos) return "";
  at += marker.size();
  return out.substr(at, out.find_first_of(" \n", at) - at);
}

bool AllDigits(const std::string& s) {
  return !s.empty() && s.size() < 20 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

InstanceState FromSlurmState(const std::string& state) {
  static const std::set<std::string> kRunning = {"RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING"};
  static const std::set<std::string> kTerminated = {"COMPLETED", "CANCELLED"};
  static const std::set<std::string> kFailed = {"FAILED",        "TIMEOUT",   "NODE_FAIL",
                                                "PREEMPTED",     "BOOT_FAIL", "DEADLINE",
                                                "OUT_OF_MEMORY", "REVOKED",   "SPECIAL_EXIT"};
  if (kRunning.count(state)) return InstanceState::kRunning;
  if (kTerminated.count(state)) return InstanceState::kTerminated;
  if (kFailed.count(state)) return InstanceState::kFailed;
  return InstanceState::kPending;  // PENDING, CONFIGURING, REQUEUED, SUSPENDED, RESIZING, ...
}

}  // namespace

Result<std::unique_ptr<SlurmProvider>> SlurmProvider::Create(SlurmProviderOptions options) {
  if (options.settings.output_dir.empty()) {
    return Status::InvalidArgument("slurm provider " + options.name + ": no output_dir");
  }
  Status st = cli::EnsurePrivateDir(options.settings.output_dir);
  if (!st.ok()) {
    return Status::InvalidArgument("slurm provider " + options.name +
                                   ": output_dir: " + st.message());
  }
  return std::unique_ptr<SlurmProvider>(new SlurmProvider(std::move(options)));
}

std::string SlurmProvider::BatchScript(const NodeTypeConfig& type, const LaunchSpec& spec) const {
  std::vector<std::string> args = NodeStartArgs(type, spec, kJobIdMark);
  args.push_back("--data-dir");
  args.push_back(options_.settings.node_data_dir + "/cumulus-slurm-" + kJobIdMark);
  if (!options_.settings.object_store_memory.empty()) {
    args.push_back("--object-store-memory");
    args.push_back(options_.settings.object_store_memory);
  }
  std::string script = "#!/bin/sh\n# A Cumulus node of type " + type.name + " (cluster " +
                       options_.cluster_name +
                       "), submitted by the slurm provider.\n# It runs as long as the job; "
                       "scancel stops it (SIGTERM: the node leaves the cluster).\nexec " +
                       ShellWord(options_.cumulus_binary);
  for (auto& a : args) script += " " + ShellWord(a);
  return script + "\n";
}

Result<ProgramResult> SlurmProvider::Slurm(const std::vector<std::string>& argv, TimePoint deadline,
                                           double* allowed_s) {
  TimePoint now = SystemClock::Get().Now();
  TimePoint until =
      std::min(deadline, now + std::chrono::duration_cast<Duration>(
                                   std::chrono::duration<double>(options_.settings.timeout_s)));
  *allowed_s = std::chrono::duration<double>(until - now).count();
  RunProgramOptions o;
  if (!options_.settings.slurm_conf.empty()) o.env = {{"SLURM_CONF", options_.settings.slurm_conf}};
  auto r = RunProgram(argv, until, o);
  if (!r.ok()) {
    return r.status().WithContext("slurm provider " + options_.name +
                                  " (is SLURM installed here? sbatch, squeue and scancel must be "
                                  "on PATH)");
  }
  return r;
}

Status SlurmProvider::Failure(const std::vector<std::string>& argv, const ProgramResult& r,
                              double allowed_s) {
  return ProgramFailure("slurm provider " + options_.name + ": " + ShowArgv(argv), r, allowed_s);
}

Result<std::vector<std::string>> SlurmProvider::Launch(const NodeTypeConfig& type, int count,
                                                       const LaunchSpec& spec, TimePoint deadline) {
  if (count < 1) return Status::InvalidArgument("Launch: count must be at least 1");
  const auto& s = options_.settings;
  // The script, written once per type (sbatch copies it at submission).
  std::string file_name = type.name;
  std::replace(file_name.begin(), file_name.end(), '/', '-');
  std::string script_path = s.output_dir + "/" + file_name + ".sbatch";
  {
    // A temporary name of this call's own: other threads may write the same type's script.
    std::string tmp =
        script_path + ".tmp" + std::to_string(getpid()) + "-" + std::to_string(next_script_++);
    std::ofstream out(tmp, std::ios::trunc);
    out << BatchScript(type, spec);
    out.close();
    if (!out || std::rename(tmp.c_str(), script_path.c_str()) != 0) {
      return Status::Unavailable("slurm provider " + options_.name + ": cannot write " +
                                 script_path);
    }
  }
  std::vector<std::string> argv = {"sbatch", "--parsable",
                                   "--job-name=" + JobNamePrefix() + type.name,
                                   "--output=" + s.output_dir + "/%j.out"};
  if (!s.partition.empty()) argv.push_back("--partition=" + s.partition);
  if (double cpus = type.resources.Get("CPU"); cpus > 0) {
    argv.push_back("--cpus-per-task=" + std::to_string(static_cast<int64_t>(std::ceil(cpus))));
  }
  if (double bytes = type.resources.Get("memory"); bytes > 0) {
    argv.push_back("--mem=" + std::to_string(static_cast<int64_t>(std::ceil(bytes / (1 << 20)))) +
                   "M");
  }
  if (double gpus = type.resources.Get("GPU"); gpus > 0) {
    argv.push_back("--gres=gpu:" + std::to_string(static_cast<int64_t>(gpus)));
  }
  for (auto& a : s.sbatch_args) argv.push_back(a);
  argv.push_back(script_path);

  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    double until = 0;
    CUMULUS_ASSIGN_OR_RETURN(ProgramResult r, Slurm(argv, deadline, &until));
    std::string id = r.out.substr(0, r.out.find_first_of(";\n"));
    if (!r.ok() || !AllDigits(id)) {
      if (r.ok()) r.err = "sbatch printed '" + r.out + "', not a job id";
      for (auto& submitted : ids) {  // all or none
        double ignored = 0;
        (void)Slurm({"scancel", submitted}, deadline, &ignored);
      }
      return Failure(argv, r, until);
    }
    ids.push_back(id);
    std::lock_guard<std::mutex> lock(mu_);
    launched_[id] = type.name;
  }
  return ids;
}

Result<std::vector<Instance>> SlurmProvider::List(TimePoint deadline) {
  // The jobs submitted before squeue runs: only these can be missing from its answer because
  // they finished. A job whose sbatch returns while squeue runs may not be in the answer either,
  // and saying it finished would make the monitor forget it and launch again (two nodes for one).
  std::map<std::string, std::string> submitted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    submitted = launched_;
  }
  std::vector<std::string> argv = {"squeue", "--me", "-h", "-t", "all", "-o", "%i|%j|%T|%r"};
  double until = 0;
  CUMULUS_ASSIGN_OR_RETURN(ProgramResult r, Slurm(argv, deadline, &until));
  if (!r.ok()) return Failure(argv, r, until);
  std::vector<Instance> out;
  std::set<std::string> seen;
  std::istringstream lines(r.out);
  std::string line;
  const std::string prefix = JobNamePrefix();
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, '|');) f.push_back(x);
    if (f.size() < 3 || f[1].rfind(prefix, 0) != 0 || !AllDigits(f[0])) continue;
    Instance in;
    in.id = f[0];
    in.node_type = f[1].substr(prefix.size());
    in.state = FromSlurmState(f[2]);
    in.detail = f[2] + (f.size() > 3 && f[3] != "None" ? " (" + f[3] + ")" : "");
    in.node_id = NodeIdFromOutput(ReadAll(options_.settings.output_dir + "/" + in.id + ".out"));
    seen.insert(in.id);
    out.push_back(std::move(in));
  }
  for (auto& [id, type] : submitted) {
    if (seen.count(id)) continue;
    Instance in;
    in.id = id;
    in.node_type = type;
    in.state = InstanceState::kTerminated;
    in.detail = "no longer known to SLURM (finished)";
    out.push_back(std::move(in));
  }
  return out;
}

Status SlurmProvider::Terminate(const std::string& id, TimePoint deadline) {
  if (!AllDigits(id)) {
    return Status::InvalidArgument("slurm provider " + options_.name + ": '" + id +
                                   "' is not a SLURM job id");
  }
  std::vector<std::string> argv = {"scancel", id};
  double until = 0;
  CUMULUS_ASSIGN_OR_RETURN(ProgramResult r, Slurm(argv, deadline, &until));
  if (r.ok()) return Status();
  // Gone already: what Terminate wants.
  if (r.err.find("already completing or completed") != std::string::npos ||
      r.err.find("Invalid job id") != std::string::npos) {
    return Status();
  }
  return Failure(argv, r, until);
}

}  // namespace cumulus
