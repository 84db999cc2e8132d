// CommandProvider (`kind: command`): the user's own launch, list and terminate programs, for any
// cloud with a command line (scripts/providers/kubernetes/ is a worked example).
//
// Each program is an argv template (no shell: items are passed as they are, after the
// placeholders are filled in). Placeholders, also set as environment variables:
//   {type}        CUMULUS_NODE_TYPE     the node type's name
//   {count}       CUMULUS_COUNT         how many to launch
//   {instance_id} CUMULUS_INSTANCE_ID   the instance to terminate
//   {head}        CUMULUS_HEAD          HOST:PORT the node joins
//   {token_file}  CUMULUS_TOKEN_FILE    the cluster token's file (on this machine)
//   {resources}   CUMULUS_RESOURCES     the type's resources, as --resources takes them
//   {labels}      CUMULUS_LABELS        the type's labels plus cumulus.node_type=TYPE
//   {metrics_port} CUMULUS_METRICS_PORT the node's --metrics-port ("0": a free port, when
//                                      `cumulus up --metrics-port` asked for metrics; "": none;
//                                      the cluster file refuses it as a whole argv item)
//   {cluster}     CUMULUS_CLUSTER       the cluster's name
// Output contract:
//   launch     exit 0; prints one instance id per line for each instance it started (at least
//              one), without waiting for the nodes to boot. The node it starts must run
//                cumulus start --address {head} --resources {resources} --block
//                      --labels {labels},cumulus.instance_id=ID --wait-for-nodes (and the token,
//                      and --metrics-port {metrics_port} when it is not empty; --join-timeout
//                      60 keeps a head restarting during the boot from failing the launch)
//              so the head's node can be matched to the instance. Its output must not go to
//              the launch program's stdout (the program's end is what is waited for).
//   list       exit 0; prints one line per instance of this cluster it can see:
//                ID STATE [NODE_ID|- [TYPE]]
//              STATE is pending, running, terminated or failed; blank lines and lines starting
//              with '#' are ignored.
//   terminate  exit 0 once the instance is going away (also if it is gone already); SIGTERM to
//              the node makes it leave the cluster cleanly.
// A node the policy drains leaves the cluster by itself and exits 0 once idle: list may show it
// terminated before terminate is called; the monitor then drops it from its books and may not
// call terminate for it (whatever of it remains, e.g. a finished pod, is the scripts' to clean).
// tests/data/command_provider/ (run by tests/provider_e2e_test.cc) and
// scripts/providers/kubernetes/ keep to this contract.
// A program that exits non-zero, prints output that breaks the contract, or runs past
// timeout_s (it is killed with its process group) is an error naming the provider, the program
// and the last of its stderr. Instance ids: letters, digits, '_', '-', '.', '/'.
//
// Thread-safe; keeps only which type each id it launched was (for List lines without TYPE).
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "runtime/autoscaler/node_provider.h"

namespace cumulus {

struct CommandProviderOptions {
  std::string name = "command";
  CommandProviderSettings settings;
  std::string cluster_name = "cumulus";
};

class CommandProvider final : public NodeProvider {
 public:
  explicit CommandProvider(CommandProviderOptions options) : options_(std::move(options)) {}

  const std::string& name() const override { return options_.name; }
  Result<std::vector<std::string>> Launch(const NodeTypeConfig& type, int count,
                                          const LaunchSpec& spec, TimePoint deadline) override;
  Result<std::vector<Instance>> List(TimePoint deadline) override;
  Status Terminate(const std::string& id, TimePoint deadline) override;

 private:
  using Vars = std::map<std::string, std::string>;
  // Runs `which` ("launch", ...) with `vars`; its stdout, or the error.
  Result<std::string> Run(const char* which, const std::vector<std::string>& argv_template,
                          const Vars& vars, TimePoint deadline);

  CommandProviderOptions options_;
  std::mutex mu_;
  std::map<std::string, std::string> types_;  // instance id -> type, for those launched here
};

// `text` with every {NAME} of `vars` replaced by its value (unknown names left as they are).
std::string FillPlaceholders(const std::string& text,
                             const std::map<std::string, std::string>& vars);

// Whether `id` is a valid instance id (letters, digits, '_', '-', '.', '/'; 1 to 256 chars).
bool ValidInstanceId(const std::string& id);

}  // namespace cumulus
