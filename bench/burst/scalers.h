// The autoscalers bench_burst compares: ours (the real policy, scheduler/autoscale/policy.h,
// through its Snapshot) and three baseline rules written after what other systems do.
#pragma once

#include <memory>

#include "bench/burst/simulator.h"

namespace cumulus::burst {

// How bench_burst sets up our policy's node types (the cluster file's keys, docs/autoscaler.md).
struct OurSettings {
  // Each type's idle_timeout; -1: idle_timeout_boots times its boot time. The default, two boots,
  // is the cluster file's (cluster_config.h): ski rental where removing a node whose work comes
  // back costs a boot billed and a boot that work waits.
  int64_t idle_timeout_s = -1;
  double idle_timeout_boots = 2;    // with idle_timeout_s -1: this many times the type's boot time
  bool learn_idle_timeout = false;  // each type's learn_idle_timeout (the gaps recorded here)
  // Each type's launch_after_waiting; -1: its boot time.
  int64_t launch_after_waiting_s = 0;
  int max_drains_per_round = 5;
};

// Our policy (scheduler/autoscale/policy.h) with an IdleGapRecorder, as the head's monitor runs it.
std::unique_ptr<Scaler> MakeOurScaler(const OurSettings& settings = {});

// Launches, for every pending pod no booting node covers, one node of the cheapest type that
// holds it alone; terminates a node the round after it goes idle.
std::unique_ptr<Scaler> MakeBurstImmediately();

// After Ray's autoscaler v1 (resource_demand_scheduler): bin-packs the pending demand onto the
// type whose node it would use best (utilization score: no GPU type for CPU work, then the
// highest min and mean utilization), price-blind; nodes booting count; up to max(5, running)
// launching at once (upscaling_speed 1); terminates nodes idle for 5 minutes.
std::unique_ptr<Scaler> MakeRayLike();

// After OpenAI's kubernetes-ec2-autoscaler: each pending pod goes onto the first node group in
// the operator's order (the types' listed order) that fits it, packed first fit; nodes booting
// count; terminates nodes idle for 55 minutes (its idle threshold, from hourly billing).
std::unique_ptr<Scaler> MakeK8sEc2Like();

}  // namespace cumulus::burst
