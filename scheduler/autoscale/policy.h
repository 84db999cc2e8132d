// The autoscaler's policy: a pure, deterministic function from a Snapshot (autoscale/snapshot.h)
// to a Decision. No I/O and no clock of its own (Snapshot::now), so the head's monitor and the
// trace replay (bench/bench_burst.cc) run the same code. What it decides, in order:
//
//   1. On-prem first. Each pending copy is fitted, largest first, onto the free resources of
//      on-prem nodes, then of running cloud nodes: what fits there launches nothing.
//   2. Booting nodes are capacity. What is left is fitted onto nodes that are launching (their
//      type's resources): demand is counted once, nothing stacks while they boot.
//   3. The rest is bin-packed onto new nodes: each copy goes onto a node opened this round if it
//      fits, else a node of the type that costs least per waiting copy it would hold (fewer left
//      idle resources on a tie), among the types whose labels the copy's selector accepts (so
//      site=onprem never launches, gpu_model in (A100,H100) only those models), that are large
//      enough, not backed off, below their max, within the budgets and the upscaling speed. A
//      CPU-only copy never opens a GPU type while a CPU type could hold it. A placement group is
//      placed whole (STRICT_PACK on one node, STRICT_SPREAD on distinct nodes; PACK and SPREAD
//      bundle by bundle) or launches nothing. A copy that has waited less than its chosen type's
//      launch_after_waiting (DemandItem::since) launches nothing yet (kWaitingBriefly): rent only
//      when on-prem has not freed room within that time.
//   4. Min counts: a type below its min launches up to it.
//   5. Scale down: a running cloud node idle past its type's idle timeout (learned from
//      Snapshot::idle_gaps for a type with learn_idle_timeout: autoscale/idle_gaps.h), not busy
//      and holding no
//      sole copy of an object, with its type above min, is drained (at most
//      Options::max_drains_per_round per round, longest idle first); a draining node is
//      terminated only once it has reported itself drained (Node::drained: it finished what ran,
//      handed its objects on and left), never because a view says it is quiet, which may be
//      older than the drain or than work just sent to it. A launch that has not registered after
//      its launch timeout is terminated and its type backed off at once.
//
// Every copy of every pending item gets a Verdict: launching, or why not.
#pragma once

#include "cumulus/status.h"
#include "scheduler/autoscale/snapshot.h"

namespace cumulus::autoscale {

struct Options {
  // Drains started per round (a disruption budget): idle nodes beyond it wait for the next round.
  int max_drains_per_round = 5;
  // Backoff of a type after `n` failed launches in a row: base * 2^(n-1), at most max.
  int64_t backoff_base_micros = 2 * kMicrosPerMinute;
  int64_t backoff_max_micros = 30 * kMicrosPerMinute;
  // A launch not registered after max(launch_timeout_factor * boot time, min_launch_timeout) has
  // timed out: it is terminated and its type backed off.
  double launch_timeout_factor = 3.0;
  int64_t min_launch_timeout_micros = 10 * kMicrosPerMinute;
  // Nodes launching at once may always reach this many, whatever the upscaling speed.
  int min_launch_batch = 5;
};

// The time until which `type` is backed off given its history (0: not backed off).
int64_t BackoffUntil(const LaunchHistory& history, const Options& options);

// REQUIRES nothing. InvalidArgument for a snapshot of another version, a node naming an unknown
// type, a type given twice, or a count below 1.
Result<Decision> Decide(const Snapshot& snapshot, const Options& options = {});

}  // namespace cumulus::autoscale
