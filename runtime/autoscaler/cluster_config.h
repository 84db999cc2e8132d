// ClusterConfig: the cluster file of the autoscaler (YAML), parsed and checked.
//
// The file names the head, the static on-prem nodes, the providers that launch cloud nodes, the
// cloud node types, a budget and the upscaling speed. docs/cluster_file.md ("Cluster file and
// providers") shows a whole file; examples/burst.yaml is one that parses.
//
// Every field has a default written next to it; a key the file leaves out keeps it. Parsing
// accepts exactly the keys below: an unknown key, a value of the wrong type or an impossible one
// (max_count < min_count, a negative price, a type with no resources, a provider that is not
// defined, two types with one name, ...) is ONE InvalidArgument whose message is a single line
//   FILE:LINE:COLUMN: KEY.PATH what is wrong
// e.g. "burst.yaml:21:16: node_types[gpu-a100].max_count (1) is less than min_count (2)".
// The first error found is reported; nothing is partially applied.
//
// Relative paths in the file (head.data_dir, a provider's state_dir, slurm output_dir, command
// argv[0] when it contains a '/') are resolved against the directory of the file.
//
// Pure values: parsing does no I/O beyond reading the file, and starts nothing.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "cumulus/status.h"
#include "scheduler/resources.h"

namespace cumulus {

// kNodeTypeLabel and kInstanceIdLabel, which the autoscaler sets on every node it launches, are
// declared in scheduler/resources.h (placement reads them too).

struct HeadConfig {
  std::string host = "127.0.0.1";  // the address the head binds and nodes connect to
  uint16_t port = 6380;            // its control port (0: a free one, picked at start)
  std::string data_dir;            // "": cumulus's default (STATE_DIR/head-PORT)
};

// A node that is always there (not launched by the autoscaler).
struct StaticNodeConfig {
  std::string name;                // unique among static nodes; default "onprem-INDEX"
  std::string host = "localhost";  // "localhost": `cumulus up` starts it on this machine;
                                   // any other host is started by its owner and only declared
  ResourceSet resources;           // required, at least one amount > 0
  Labels labels;                   // default {site=onprem}; "site" is added when not given
};

// Settings of the `local` provider: node daemons as processes on this machine.
struct LocalProviderSettings {
  double boot_delay_s = 0;  // seconds between Launch and the daemon's start, 0 to 3600
  double failure_rate = 0;  // chance, 0 to 1, that a launched instance fails while booting
  int64_t seed = 0;         // of the failure draws; 0: a random seed (logged with each failure)
  std::string state_dir;    // instances' pid files and logs; "": STATE_DIR/local-provider
  std::string object_store_memory = "128M";  // each launched node's --object-store-memory
  std::string cumulus_binary;                // "": the `cumulus` next to the running program
};

// Settings of the `command` provider: the user's own scripts. Each is an argv template whose
// items may contain {type} {count} {instance_id} {head} {token_file} {resources} {labels}
// {cluster}; docs/cluster_file.md states the output each script must print.
struct CommandProviderSettings {
  std::vector<std::string> launch;     // required: prints one instance id per line
  std::vector<std::string> list;       // required: prints "ID STATE [NODE_ID]" lines
  std::vector<std::string> terminate;  // required: exit 0 once the instance is going away
  double timeout_s = 120;              // per script run, 1 to 3600 (killed past it)
};

// Settings of the `slurm` provider: each instance is one SLURM batch job running a node daemon.
struct SlurmProviderSettings {
  std::string partition;                     // "": the cluster's default partition
  std::vector<std::string> sbatch_args;      // extra sbatch arguments, e.g. ["--time=04:00:00"]
  std::string job_name_prefix = "cumulus-";  // jobs are named PREFIX+TYPE; List sees only these
  std::string output_dir;  // where jobs write their output; "": STATE_DIR/slurm (must be
                           // readable here for node ids to be known: a shared filesystem)
  std::string node_data_dir = "/tmp";  // on the SLURM node: the daemon's data dir is
                                       // NODE_DATA_DIR/cumulus-slurm-JOBID
  std::string object_store_memory;     // "": the node daemon's default
  std::string slurm_conf;              // "": SLURM_CONF from the environment (or slurm's default)
  std::string cumulus_binary;          // "": the `cumulus` next to the running program (the
                                       // path must be valid on the SLURM nodes)
  double timeout_s = 30;               // per sbatch/squeue/scancel run, 1 to 3600
};

enum class ProviderKind { kLocal, kCommand, kSlurm };
const char* ProviderKindName(ProviderKind kind);  // "local", "command", "slurm"

struct ProviderConfig {
  std::string name;  // its key under `providers:`
  ProviderKind kind = ProviderKind::kLocal;
  LocalProviderSettings local;      // used when kind == kLocal
  CommandProviderSettings command;  // used when kind == kCommand
  SlurmProviderSettings slurm;      // used when kind == kSlurm
};

// A kind of node the autoscaler may launch.
struct NodeTypeConfig {
  std::string name;           // required, unique; letters, digits, '_', '-', '.', '/'
  std::string provider;       // required: a key of `providers:`
  ResourceSet resources;      // required, at least one amount > 0; GPU a whole number
  Labels labels;              // default {site=cloud}; "site" is added when not given;
                              // gpu_model=MODEL is added when gpu_model is set
  std::string gpu_model;      // "": none declared; set only when resources have GPU
  double price_per_hour = 0;  // currency units per node-hour, 0 to 1e6
  double boot_time_s = 300;   // expected time from launch to a registered node, 0 to 86400
  int64_t min_count = 0;      // kept running, 0 to max_count
  int64_t max_count = 10;     // never more, 1 to 10000
  bool spot = false;          // may be taken away by the cloud at any time
  // Idle this long: drained and terminated, 0 to 604800. Not given in the file: twice boot_time_s
  // (600 for the default boot time). Ski rental: a node removed when its work comes back costs a
  // boot billed plus a boot the work waits, so keeping it idle that long costs at most twice the
  // best choice made knowing the future.
  double idle_timeout_s = 600;
  // Learn the idle timeout from how soon work came back for this type (ski rental over the
  // recent idle gaps, scheduler/autoscale/idle_gaps.h); idle_timeout_s until 10 gaps are known.
  bool learn_idle_timeout = false;
  // Pending work launches a node of this type only once it has waited this long (on-prem may
  // free room sooner), 0 to 86400; 0: at once.
  double launch_after_waiting_s = 0;
};

struct BudgetConfig {
  // Both in the units of price_per_hour; infinity: no limit (the default).
  double per_hour = std::numeric_limits<double>::infinity();  // sum of running types' prices
  double total = std::numeric_limits<double>::infinity();     // spend since the cluster started
};

struct ClusterConfig {
  std::string file;                      // the path it was read from ("" for text)
  std::string text;                      // the text it was parsed from (`cumulus down` reads it)
  std::string cluster_name = "cumulus";  // names launched jobs/pods; label-value characters
  HeadConfig head;
  std::vector<StaticNodeConfig> onprem_nodes;
  std::map<std::string, ProviderConfig> providers;
  std::vector<NodeTypeConfig> node_types;  // in file order
  BudgetConfig budget;
  // How fast to scale up (Ray's meaning): at most max(5, upscaling_speed x nodes running) nodes
  // may be launching at once. From 0.01 to 1000; default 1.
  double upscaling_speed = 1.0;

  // The type named `name`, or nullptr.
  const NodeTypeConfig* FindType(const std::string& name) const;
};

// Reads and checks the cluster file at `path`. InvalidArgument (one line, as above) if the file
// cannot be read or is not a valid cluster file.
Result<ClusterConfig> LoadClusterConfig(const std::string& path);

// The same for text already read; `file` names it in messages, and relative paths are resolved
// against `base_dir` ("" leaves them as written).
Result<ClusterConfig> ParseClusterConfig(const std::string& text, const std::string& file,
                                         const std::string& base_dir = "");

}  // namespace cumulus
