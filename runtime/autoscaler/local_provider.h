// LocalProvider (`kind: local`): each instance is a node daemon process on this machine
// (`cumulus start --address HEAD --block ...`) with the type's resources and labels, started after
// an injected boot delay, failing at an injected rate. For tests and the demo.
//
// State lives on disk, one directory per instance, so a restarted head's provider finds the
// instances an earlier one launched:
//   STATE_DIR/CLUSTER/ID/instance   "type TYPE" and "pid PID"
//   STATE_DIR/CLUSTER/ID/node.log   the daemon's stdout and stderr (its ready line names its node
//   id) STATE_DIR/CLUSTER/ID/data/      the daemon's data dir STATE_DIR/CLUSTER/ID/terminated
//   written by Terminate() STATE_DIR/CLUSTER/ID/ended      written when List() first sees the
//   process gone
// Instance ids are TYPE-XXXXXXXX (8 random hex digits).
//
// States: pending while booting (the delay, then until the daemon prints its ready line); running
// once it has (node_id set); terminated after Terminate() or a clean exit; failed if it exited
// otherwise (detail: the last line it printed, e.g. "injected launch failure ..." or the daemon's
// own error). Ended instances stay listed for `keep_ended` and are then forgotten.
//
// Thread-safe (one mutex around the instance table and the random draws).
#pragma once

#include <map>
#include <mutex>
#include <random>
#include <string>

#include "runtime/autoscaler/node_provider.h"

namespace cumulus {

struct LocalProviderOptions {
  std::string name = "local";
  LocalProviderSettings settings;
  std::string cumulus_binary;  // the program instances run (required, an existing file)
  std::string state_dir;       // STATE_DIR above (required); CLUSTER is cluster_name
  std::string cluster_name = "cumulus";
  Duration keep_ended = std::chrono::minutes(10);  // how long ended instances stay listed
};

class LocalProvider final : public NodeProvider {
 public:
  // InvalidArgument if the binary does not exist or the state dir cannot be made.
  static Result<std::unique_ptr<LocalProvider>> Create(LocalProviderOptions options);
  ~LocalProvider() override;  // leaves running instances running (they are daemons)

  const std::string& name() const override { return options_.name; }
  Result<std::vector<std::string>> Launch(const NodeTypeConfig& type, int count,
                                          const LaunchSpec& spec, TimePoint deadline) override;
  Result<std::vector<Instance>> List(TimePoint deadline) override;
  // SIGTERM (the daemon leaves the cluster cleanly); SIGKILL to its process group if it has not
  // exited by the deadline.
  Status Terminate(const std::string& id, TimePoint deadline) override;

  // The seed of the failure draws (settings.seed, or the random one picked).
  uint64_t seed() const { return seed_; }

 private:
  explicit LocalProvider(LocalProviderOptions options);
  std::string Dir(const std::string& id) const { return root_ + "/" + id; }
  Result<std::string> LaunchOne(const NodeTypeConfig& type, const LaunchSpec& spec);
  // Whether instance `id`'s process `pid` is still running (reaps it if it is our child).
  bool Alive(const std::string& id, int pid);
  Instance Describe(const std::string& id);
  // Waits (mu_ not held) until the process is gone or `deadline`; true if it is gone.
  bool WaitUntilGone(int pid, const std::string& id, TimePoint deadline);

  LocalProviderOptions options_;
  std::string root_;  // state_dir/cluster_name
  uint64_t seed_;
  std::mutex mu_;
  std::mt19937_64 failures_;        // draws of injected failures (seeded: reproducible)
  std::mt19937_64 ids_;             // instance ids (never seeded the same: unique across runs)
  std::map<int, int> exit_status_;  // pid -> wait status of children this object reaped
};

}  // namespace cumulus
