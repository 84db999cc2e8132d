// NodeProvider: how the autoscaler gets nodes and gives them back. One provider per entry under
// `providers:` in the cluster file; node types name theirs.
//
// The contract every provider keeps (docs/cluster_file.md, "Provider contract"):
//   - Calls are synchronous and each takes a deadline: a call returns by then (TimedOut if the
//     provider's own work did not finish; what it started may still show up in List()).
//   - Thread-safe: a monitor may call any method from several threads at once.
//   - Errors are Status with one line naming the provider, what failed and, for a script or a
//     SLURM command, its stderr.
//   - Every launched node daemon carries the labels of its type plus
//       cumulus.node_type=TYPE and cumulus.instance_id=ID
//     so the monitor can match the head's nodes to instances even when List() does not know the
//     node id.
//   - List() is the truth: it reports every instance this provider launched for this cluster
//     that it can still see, including ones launched by an earlier process (a restarted head
//     finds its nodes again; no duplicate launches). Instances that ended may drop out of it
//     after a while (SLURM forgets finished jobs).
//   - Terminate() of an instance already gone is OK (it is idempotent); NotFound only if the
//     provider never knew the id.
// Providers do not decide anything: which type, how many and when is the policy's
// (scheduler/autoscale/); retries and backoff are the monitor's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cumulus/status.h"
#include "runtime/autoscaler/cluster_config.h"
#include "runtime/base/clock.h"

namespace cumulus {

// What a launched node daemon needs to join the cluster.
struct LaunchSpec {
  std::string head_address;  // HOST:PORT of the head, as the new node reaches it
  std::string token_file;    // the cluster token (a file readable where the node runs)
  // The node's Prometheus endpoint: -1 none; 0 a free port (the node publishes where to the head,
  // which lists it for service discovery); else that port. It listens on the node's --bind
  // address (loopback unless the type's provider starts nodes with another).
  int metrics_port = -1;
};

enum class InstanceState {
  kPending,     // asked for; not yet up (booting, queued)
  kRunning,     // up: its node daemon is started (node_id set once known)
  kTerminated,  // gone after Terminate(), or ended on its own without an error
  kFailed,      // could not start, or ended with an error (`detail` says why)
};
const char* InstanceStateName(InstanceState state);  // "pending", "running", ...
// "pending", "running", "terminated", "failed" (as a command's list script prints them).
Result<InstanceState> ParseInstanceState(const std::string& text);

struct Instance {
  std::string id;         // the provider's id: letters, digits, '_', '-', '.', '/'
  std::string node_type;  // the type it was launched as ("" if the provider cannot tell)
  InstanceState state = InstanceState::kPending;
  std::string node_id;  // hex id the node registered with the head as; "" if not known
  std::string detail;   // why it failed, or the provider's own state word
};

class NodeProvider {
 public:
  virtual ~NodeProvider() = default;

  // The name under `providers:`.
  virtual const std::string& name() const = 0;

  // Starts `count` (>= 1) nodes of `type`; returns their instance ids, all pending or running.
  // An error means none was launched that the provider knows of (a script may still have made
  // some: List() shows them).
  virtual Result<std::vector<std::string>> Launch(const NodeTypeConfig& type, int count,
                                                  const LaunchSpec& spec, TimePoint deadline) = 0;

  // Every instance this provider launched for this cluster that it can still see. May run
  // concurrently with Launch(): an instance launched while List runs may be missing from its
  // answer, but is never said to be terminated or failed because it is missing (the monitor
  // forgets ended instances, so it would launch another in its place).
  virtual Result<std::vector<Instance>> List(TimePoint deadline) = 0;

  // Stops instance `id` (its node leaves the cluster). Returns once the provider has taken the
  // request; the node may still be leaving (List() shows when it is terminated).
  virtual Status Terminate(const std::string& id, TimePoint deadline) = 0;
};

// What the factory needs besides the provider's settings.
struct ProviderEnv {
  std::string cluster_name = "cumulus";  // ClusterConfig::cluster_name
  // The `cumulus` program launched nodes run when the settings name none ("": the one next to
  // the running program, else `cumulus` on PATH).
  std::string cumulus_binary;
  // Where providers keep their state when the settings name no directory ("": STATE_DIR, i.e.
  // $CUMULUS_STATE_DIR or /tmp/cumulus-UID).
  std::string state_dir;
};

// Makes the provider `config` describes. InvalidArgument if its settings cannot work here (a
// directory that cannot be made, a program that does not exist).
Result<std::unique_ptr<NodeProvider>> MakeNodeProvider(const ProviderConfig& config,
                                                       const ProviderEnv& env);

// The `cumulus start` arguments (after the program) that start a node daemon of `type` joining
// `spec`'s head in the foreground, with labels of the type plus the two labels above, and
// `--metrics-port N` when spec.metrics_port >= 0.
std::vector<std::string> NodeStartArgs(const NodeTypeConfig& type, const LaunchSpec& spec,
                                       const std::string& instance_id);

}  // namespace cumulus
