// The autoscalers bench_burst compares: ours (the real policy, scheduler/autoscale/policy.h,
// through its Snapshot) and three baseline rules written after what other systems do.
#pragma once

#include <memory>

#include "bench/burst/simulator.h"

namespace cumulus::burst {

// Our policy. Each type's idle timeout is `idle_timeout_s`, or with -1 its boot time (keeping an
// idle node as long as a new one takes to boot costs at most twice the best choice made knowing
// the future: ski rental).
std::unique_ptr<Scaler> MakeOurScaler(int64_t idle_timeout_s = -1, int max_drains_per_round = 5);

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
