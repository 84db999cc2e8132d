// A cluster replayed with a simulated clock: on-prem nodes from a trace's node list, cloud nodes
// launched by a Scaler (our autoscaler's policy, or one of the baselines in scalers.h), pods from
// a trace's pod list placed on-prem first. Deterministic: no randomness, no wall clock.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "bench/burst/trace.h"

namespace cumulus::burst {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

struct CloudType {
  std::string name;      // "v100x8"
  std::string instance;  // where the price comes from: "p3.16xlarge"
  Res res;
  std::string model;  // GPU model label; "" for a CPU type
  double price_per_hour = 0;
  int64_t boot_s = 300;
};

struct SimNode {
  enum State { kLaunching, kRunning, kDraining, kGone };
  Res total, free;
  std::string model;  // "" without GPUs
  int type = -1;      // index into the cloud types; -1 on-prem
  State state = kRunning;
  int64_t launched = 0, idle_since = 0, ended = -1;
  int pods = 0;  // running on it
};

// True if `pod` may run on a node with GPU model `model` ("" = no GPU) as far as labels go.
bool Accepts(const Pod& pod, const std::string& model);

// What a Scaler sees each round.
struct ClusterView {
  int64_t now = 0;  // seconds since the trace's first arrival
  const std::vector<SimNode>& nodes;
  const std::vector<Pod>& pods;
  const std::vector<int>& pending;  // pods waiting, in arrival order
  const std::vector<CloudType>& types;
};

struct Actions {
  std::vector<int> launch;  // a type index per node to launch
  std::vector<int> drain;   // node indices
  std::vector<int> terminate;
  int64_t recheck = kNever;  // run a round by then even if nothing happens (seconds)
};

class Scaler {
 public:
  virtual ~Scaler() = default;
  virtual Actions Round(const ClusterView& view) = 0;
};

struct SimResult {
  double cost = 0;  // dollars for cloud nodes, launch to termination (or the end)
  // Where `cost` went: time a cloud node ran no pod (booting included), and the part of its price
  // above the cheapest type that holds what runs on it (summed, every pod's models accepted):
  // small work that landed on a larger node and keeps it. The rest paid for right-sized nodes.
  double idle_cost = 0, oversized_cost = 0;
  double wait_mean_s = 0, wait_p95_s = 0;
  double onprem_util = 0;  // on-prem GPUs (CPUs without GPUs) in use, averaged over the trace
  int launches = 0;
  int never_started = 0;  // waits censored at the end of the run
  double cloud_node_hours = 0;
  int rounds = 0;
};

// Replays `pods` (sorted by arrival). `countable[i]`: pod i counts in the wait figures (pods no
// on-prem node and no cloud type could ever hold are left out of every row). A round of `scaler`
// (nullptr: none) runs on the first `tick_s` boundary after anything changes, and at its recheck.
SimResult Simulate(const std::vector<Pod>& pods, const std::vector<TraceNode>& onprem,
                   const std::vector<CloudType>& types, Scaler* scaler, int64_t tick_s,
                   const std::vector<bool>& countable);

}  // namespace cumulus::burst
