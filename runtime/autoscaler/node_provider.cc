#include "runtime/autoscaler/node_provider.h"

#include <unistd.h>

#include <filesystem>

#include "runtime/autoscaler/command_provider.h"
#include "runtime/autoscaler/local_provider.h"
#include "runtime/autoscaler/slurm_provider.h"
#include "runtime/base/subprocess.h"
#include "runtime/cli/local_state.h"

namespace cumulus {

const char* InstanceStateName(InstanceState state) {
  switch (state) {
    case InstanceState::kPending:
      return "pending";
    case InstanceState::kRunning:
      return "running";
    case InstanceState::kTerminated:
      return "terminated";
    case InstanceState::kFailed:
      return "failed";
  }
  return "unknown";
}

Result<InstanceState> ParseInstanceState(const std::string& text) {
  for (InstanceState s : {InstanceState::kPending, InstanceState::kRunning,
                          InstanceState::kTerminated, InstanceState::kFailed}) {
    if (text == InstanceStateName(s)) return s;
  }
  return Status::InvalidArgument("'" + text +
                                 "' is not an instance state (pending, running, terminated, "
                                 "failed)");
}

std::vector<std::string> NodeStartArgs(const NodeTypeConfig& type, const LaunchSpec& spec,
                                       const std::string& instance_id) {
  // A node keeps the GPUs it detects for every resource not named: a CPU type names GPU=0, so a
  // node launched on a machine with GPUs still offers exactly what its type declares.
  std::string resources = type.resources.ToString();
  if (!type.resources.Has("GPU")) resources += ",GPU=0";
  Labels labels = type.labels;
  labels[kNodeTypeLabel] = type.name;
  labels[kInstanceIdLabel] = instance_id;
  std::vector<std::string> args = {"start",
                                   "--address",
                                   spec.head_address,
                                   "--resources",
                                   resources,
                                   "--labels",
                                   LabelsToString(labels),
                                   "--block",
                                   "--wait-for-nodes",
                                   "--join-timeout",
                                   "60"};  // a head restarting meanwhile: not a failure
  if (!spec.token_file.empty()) {
    args.push_back("--token-file");
    args.push_back(spec.token_file);
  }
  if (spec.metrics_port >= 0) {
    args.push_back("--metrics-port");
    args.push_back(std::to_string(spec.metrics_port));
  }
  return args;
}

namespace {

std::string DefaultCumulusBinary(const ProviderEnv& env, const std::string& from_settings) {
  if (!from_settings.empty()) return from_settings;
  if (!env.cumulus_binary.empty()) return env.cumulus_binary;
  std::string next_to_us = ExecutableDir() + "/cumulus";
  if (access(next_to_us.c_str(), X_OK) == 0) return next_to_us;
  return "cumulus";
}

}  // namespace

Result<std::unique_ptr<NodeProvider>> MakeNodeProvider(const ProviderConfig& config,
                                                       const ProviderEnv& env) {
  std::string state_dir = env.state_dir.empty() ? cli::StateDir() : env.state_dir;
  switch (config.kind) {
    case ProviderKind::kLocal: {
      LocalProviderOptions o;
      o.name = config.name;
      o.settings = config.local;
      o.cluster_name = env.cluster_name;
      o.cumulus_binary = DefaultCumulusBinary(env, config.local.cumulus_binary);
      o.state_dir =
          config.local.state_dir.empty() ? state_dir + "/local-provider" : config.local.state_dir;
      CUMULUS_ASSIGN_OR_RETURN(auto p, LocalProvider::Create(std::move(o)));
      return std::unique_ptr<NodeProvider>(std::move(p));
    }
    case ProviderKind::kCommand: {
      CommandProviderOptions o;
      o.name = config.name;
      o.settings = config.command;
      o.cluster_name = env.cluster_name;
      return std::unique_ptr<NodeProvider>(std::make_unique<CommandProvider>(std::move(o)));
    }
    case ProviderKind::kSlurm: {
      SlurmProviderOptions o;
      o.name = config.name;
      o.settings = config.slurm;
      o.cluster_name = env.cluster_name;
      o.cumulus_binary = DefaultCumulusBinary(env, config.slurm.cumulus_binary);
      if (o.settings.output_dir.empty()) o.settings.output_dir = state_dir + "/slurm";
      CUMULUS_ASSIGN_OR_RETURN(auto p, SlurmProvider::Create(std::move(o)));
      return std::unique_ptr<NodeProvider>(std::move(p));
    }
  }
  return Status::Internal("unknown provider kind");
}

}  // namespace cumulus
