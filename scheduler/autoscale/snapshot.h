// The autoscaler's input and output: one versioned snapshot of the cluster in, one set of
// decisions out (autoscale/policy.h decides). Plain values, no I/O, no clock: the head's monitor
// and the trace replay in bench/bench_burst.cc fill the same structs.
//
// How the monitor on the head fills a snapshot (one per round):
//   - `types`: the cloud node types of the cluster file (resources, labels with site=cloud and,
//     for GPU types, gpu_model=<model>; price, boot time, min/max, idle timeout).
//   - `nodes`: one per ALIVE record of the head's node table (runtime/head/membership.h,
//     NodeRecord): `total`/`available` -> total/free, `labels` as they are. A node the monitor did
//     not launch is kOnPrem (type ""); one it launched carries its type and kRunning, or kDraining
//     once it asked the node to drain. Launches the provider has accepted but whose node has not
//     registered yet are kLaunching with `since` = when the launch was requested: they are
//     capacity, so the same demand does not launch twice while they boot (Ray #36926).
//     `idle_since`, `busy` and `holds_sole_copy` come from the node's heartbeat (resources in
//     use, or any task or actor held, NodeRecord::work, also one that takes no resources;
//     primary copies of objects still referenced). A launched node that was draining and is
//     gone (it left, its own drain finished: nothing runs, its objects handed on; or the head
//     declared it dead meanwhile), or that registered and then died or stopped without a drain,
//     is kDraining with `drained` set until its instance is terminated.
//   - `demand`: what waits. The heartbeat carries NodeRecord::pending_demand as (shape, count,
//     label selector, the node it is pinned to if any) (runtime/proto/node.capnp, Demand): each
//     is one DemandItem with `count` copies (runtime/autoscaler/snapshot_builder.cc); placement
//     groups that wait (the driver's node reserves them) are one item each, all bundles with the
//     group's strategy. A demand counted by two nodes would launch twice: the monitor reports
//     each waiting task once, where it is queued.
//   - `launch_history`: per type, the failed or timed-out launches in a row and the last one's time
//     and error (the monitor records a failure when the provider refuses a launch, or when the
//     policy terminates a launch that timed out; a node of the type that registers resets it).
//   - `spend`, budgets, `upscaling_speed` from the cluster file and the monitor's books; `now`.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "scheduler/placement.h"
#include "scheduler/resources.h"

namespace cumulus::autoscale {

// Bumped when a field changes meaning; Decide refuses a snapshot of another version.
constexpr int kSnapshotVersion = 2;  // 2: kDraining nodes end only once `drained`

constexpr int64_t kMicrosPerSecond = 1'000'000;
constexpr int64_t kMicrosPerMinute = 60 * kMicrosPerSecond;
constexpr double kNoLimit = std::numeric_limits<double>::infinity();

// A kind of node the autoscaler may launch.
struct NodeType {
  std::string name;                            // "gpu-a100", unique
  ResourceSet resources;                       // what one node offers: CPU=96,GPU=8,memory=...
  Labels labels;                               // site=cloud,region=...,gpu_model=A100
  double price_per_hour = 0;                   // dollars per node-hour
  int64_t boot_micros = 5 * kMicrosPerMinute;  // expected time from launch to registered
  int min_count = 0;                           // kept running even when idle
  int max_count = std::numeric_limits<int>::max();
  bool spot = false;  // may be reclaimed; shown, the policy treats it like any other type
  int64_t idle_timeout_micros = 5 * kMicrosPerMinute;  // idle this long: drained
  // Learn the idle timeout from Snapshot::idle_gaps (LearnedIdleTimeout, autoscale/idle_gaps.h)
  // once enough gaps are known; idle_timeout_micros until then.
  bool learn_idle_timeout = false;
  // Demand launches a node of this type only once it has waited this long (it may fit on-prem
  // when something there ends): 0 launches at once.
  int64_t launch_after_waiting_micros = 0;
};

enum class NodeState {
  kOnPrem,     // a static node: never launched, drained or terminated by the autoscaler
  kLaunching,  // requested from the provider, not registered yet
  kRunning,    // a launched node that is registered
  kDraining,   // takes no new work; terminated only once `drained` (the node said it is done)
};
const char* NodeStateName(NodeState s);  // "on-prem", "launching", "running", "draining"

struct Node {
  std::string id;    // the head's node id, or the provider's id while launching
  std::string type;  // a NodeType name; "" for kOnPrem
  NodeState state = NodeState::kOnPrem;
  ResourceSet total;  // kLaunching: ignored, the type's resources are used
  ResourceSet free;
  Labels labels;                 // kLaunching: ignored, the type's labels are used
  int64_t since = 0;             // kLaunching: when the launch was requested
  int64_t idle_since = -1;       // since when nothing runs on it; -1: something runs
  bool busy = false;             // runs tasks or hosts actors
  bool holds_sole_copy = false;  // holds the only copy of an object still referenced
  // kDraining: the node itself has reported, after its drain began, that it is done: nothing
  // runs on it and it holds no primary copy left to hand on (it left the cluster). Only then is
  // a draining node terminated. `busy`, `idle_since` and `holds_sole_copy` are never read as
  // "done" for a draining node: they may come from a view older than the drain, or than work
  // sent to the node just before it (a busy node killed, Ray #46492).
  bool drained = false;
  // kRunning: a launched node that registered and is not alive now (its head restarted and
  // waits to hear from it, it died less than the grace ago, or the view lacks it). The provider
  // still runs and bills the machine: it counts against its type's max and the budget, but is
  // no capacity, keeps no min count, and is never drained or terminated on this view.
  bool unreachable = false;
};

// Work that waits: a task or actor (one bundle), or a placement group (its bundles, placed as one).
struct DemandItem {
  std::string id;  // who waits: "task 3f2a..", "trial 17", "pg 9c..": shown with its reason
  std::vector<ResourceSet> bundles;               // one for a task or actor
  GroupStrategy strategy = GroupStrategy::kPack;  // for more than one bundle
  LabelSelector labels;                           // e.g. site=onprem, gpu_model in (A100,H100)
  int count = 1;                                  // identical copies that wait
  int64_t since = 0;                              // waiting since
  // Hard affinity to this node (the head's node id): only it may run the work, so no launch is
  // for it (Reason::kPinnedToNode). "" for none.
  std::string pinned_to;
};

struct LaunchHistory {
  int failures_in_a_row = 0;  // failed or timed-out launches since the type last came up
  int64_t last_failure = 0;   // when the last one failed
  std::string last_error;     // the provider's message, or "launch timed out"
};

struct Snapshot {
  int version = kSnapshotVersion;
  int64_t now = 0;  // microseconds, on the clock every other time here is on
  std::vector<NodeType> types;
  std::vector<Node> nodes;
  std::vector<DemandItem> demand;
  std::map<std::string, LaunchHistory> launch_history;  // by type name
  double spend = 0;                                     // dollars spent on launched nodes so far
  double budget_per_hour = kNoLimit;  // the launched nodes' price per hour, all together
  double budget_total = kNoLimit;     // dollars, spend included
  double upscaling_speed = 1.0;       // nodes launching at once: up to this times the running ones
  // Per type name: recent idle gaps, how long after a node of the type went idle work for the
  // type came back (autoscale/idle_gaps.h records them); used by types with learn_idle_timeout.
  std::map<std::string, std::vector<int64_t>> idle_gaps;
};

// ---- What the policy decides ----

struct Launch {
  std::string type;
  int count = 0;
  std::string why;  // "3 item(s) waiting: trial 17, ..." or "min count 2"
};

struct Drain {
  std::string node;
  std::string why;  // "idle for 6m, timeout 5m"
};

struct Termination {
  std::string node;
  std::string why;  // "drained and idle", "launch timed out after 15m"
};

// Why a pending item is, or is not, getting a new node.
enum class Reason {
  kLaunching,            // new nodes are launched for it this round
  kFitsOnPremNow,        // fits free on-prem capacity now: the scheduler will place it
  kFitsCloudNow,         // fits free capacity on a running cloud node now
  kBootInProgress,       // nodes already launching cover it
  kLabelsExcludeCloud,   // its label selector matches no cloud type (e.g. site=onprem)
  kGpuModelNotAccepted,  // the types with room for it have GPU models it does not accept
  kNoTypeFits,           // no cloud type is large enough (or, for STRICT_SPREAD, enough of them)
  kTypeMaxReached,       // every fitting type is at its max count
  kBackoff,              // every fitting type is backed off after failed launches
  kBudgetPerHour,        // launching would pass the hourly budget
  kBudgetTotal,          // launching would pass the total budget
  kUpscalingSpeed,       // as many nodes launch at once as the upscaling speed allows
  kWaitingBriefly,       // has waited less than its type's launch_after_waiting: on-prem may free
  kPinnedToNode,         // must run on one node (DemandItem::pinned_to): a new node cannot run it
};
const char* ReasonName(Reason r);  // "launching", "fits on-prem now", "budget per hour", ...

struct Verdict {
  std::string id;  // the DemandItem's
  int count = 0;   // copies with this reason (an item may have several verdicts)
  Reason reason = Reason::kNoTypeFits;
  std::string detail;  // e.g. "backoff of type gpu-a100 until +4m (launch timed out)"
};

// For `cumulus status`: one row per type.
struct TypeReport {
  std::string type;
  int running = 0, launching = 0, draining = 0, idle = 0;
  int unreachable = 0;            // registered, not alive now (Node::unreachable)
  int launches = 0;               // decided this round
  int64_t backoff_until = 0;      // 0: not backed off
  double price_per_hour_now = 0;  // of its nodes that are launching, running or draining
};

struct Decision {
  std::vector<Launch> launches;
  std::vector<Drain> drains;
  std::vector<Termination> terminations;
  std::vector<Verdict> verdicts;  // every copy of every DemandItem, in the order of `demand`
  std::vector<TypeReport> types;
  // Call Decide again by this time even if nothing else changes (an idle timeout or a backoff
  // ends, a launch times out); INT64_MAX: only when something changes.
  int64_t recheck_at = std::numeric_limits<int64_t>::max();
};

}  // namespace cumulus::autoscale
