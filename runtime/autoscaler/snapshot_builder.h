// BuildSnapshot: the autoscaler's snapshot (scheduler/autoscale/snapshot.h) from what the monitor
// sees: the head's node records, the providers' instances, the monitor's books and the launches
// it has asked for that have not answered yet. Pure: no I/O, `now` given.
//
//   - A node record ALIVE with label cumulus.node_type=T (T a type of the cluster file) is a
//     launched node: kRunning, or kDraining if its instance is drained in the books or the head
//     marks it DRAINING. Any other ALIVE node is on-prem. A node is busy while its available
//     resources differ from its total or it holds any work (NodeRecord::work: tasks, actors,
//     also zero-resource ones); `idle_since` tracks, per node, since when it has been idle
//     (updated here). An ALIVE draining node is never `drained`: what the head shows of it
//     may be older than the drain.
//   - A launched node that was draining and has LEFT the cluster (DEAD with `left`: the node's
//     own drain finished and it stopped) while its instance is still in the books is kDraining
//     and `drained`: the one way a draining node becomes something the policy terminates.
//   - A launched node that registered (LaunchedInstance::registered) and then died or stopped
//     without a drain (DEAD, not draining, its newest such record for at least
//     `dead_grace_micros`, no other record of its instance ALIVE or RECOVERING) is gone:
//     kDraining and `drained` too, so its instance is terminated, with no launch failure counted
//     (BuiltSnapshot::gone says why it went). A registered instance is never kLaunching: while
//     its node recovers after a head restart, is dead for less than the grace (a node cut off
//     rejoins under a new id), or is missing from the view, it is an `unreachable` kRunning node
//     (kDraining if it was draining): the provider still bills it, so it counts against max and
//     the budget, but it is no capacity and keeps no min count.
//   - An instance in the books that never registered, with no ALIVE node yet, that its provider
//     does not list as ended, is kLaunching since its launch; launches still in flight are
//     kLaunching too (ids "asking/TYPE/N"), so no demand launches twice.
//   - Each ALIVE node's pending demand (shape, count, selector) is one DemandItem, unless
//     `demand_settled` is false (heartbeats may still report work that is moving to a new node).
//     Its id names who waits: the demand's purpose ("trial asha/7 {CPU=4}") when it has one,
//     else the node it waits on ("node 3f2a9c01 {CPU=4}").
// What the head does not report yet and is taken as false: holds_sole_copy (the only copy of a
// live object on a node); a node idle by its resources is drained even if it holds one. That
// loses nothing: the node's own drain hands its objects on before it leaves, and it is
// terminated only once it has left.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/autoscaler/cluster_config.h"
#include "runtime/autoscaler/monitor_books.h"
#include "runtime/autoscaler/node_provider.h"
#include "runtime/head/membership.h"
#include "scheduler/autoscale/snapshot.h"

namespace cumulus {

struct MonitorView {
  std::vector<NodeRecord> nodes;                        // the head's
  std::map<std::string, std::vector<Instance>> listed;  // provider -> List() (TrustedListing)
  std::map<std::string, int> in_flight_launches;        // type -> nodes asked for
  std::map<std::string, int64_t> in_flight_since;       // type -> when
  bool demand_settled = true;  // false: leave pending demand out (a node just joined)
  int64_t now = 0;             // wall clock, micros
  // A launched node dead (not drained) for less than this, by its record's death_micros, is not
  // yet taken as gone (it may rejoin under a new id). MonitorOptions::dead_node_grace.
  int64_t dead_grace_micros = 0;
};

struct BuiltSnapshot {
  autoscale::Snapshot snapshot;
  std::map<std::string, std::string> instance_of;  // snapshot node id -> instance id
  // Instance ids with an ALIVE node, registered once (the books), or with a node that drained
  // and left: not launching (terminating one is no launch failure).
  std::set<std::string> registered;
  // Instances whose node registered and then died or stopped without a drain -> the head's
  // reason; each is a kDraining, `drained` node of the snapshot (terminated).
  std::map<std::string, std::string> gone;
};

// What a provider's List() answer `listed`, a call that began at `list_started_micros`, may be
// trusted to say: its entries less those that say an instance of the books launched at or after
// that time (LaunchedInstance::launched_micros, when its Launch began) is terminated or failed.
// A List that began before the Launch may not know of the instance yet, and a provider that
// keeps its own records (a `command` list script, as the slurm provider once did) may then call
// it ended; the monitor would forget it and launch another in its place. The next List says.
// `booked_micros`: when each instance's Launch answered (if later than it began, the later time
// counts: a provider may not know an instance its Launch has not made yet).
std::vector<Instance> TrustedListing(const std::vector<Instance>& listed,
                                     int64_t list_started_micros, const MonitorBooks& books,
                                     const std::map<std::string, int64_t>& booked_micros = {});

// The cloud node types of `config` as the policy sees them.
std::vector<autoscale::NodeType> PolicyTypes(const ClusterConfig& config);

// `demand_since` (kept by the caller between rounds, like `idle_since`): since when each pending
// demand (node, shape, selector, purpose) has been reported without a break; it sets
// DemandItem::since (for a type's launch_after_waiting). nullptr: since = now.
BuiltSnapshot BuildSnapshot(const ClusterConfig& config, const MonitorBooks& books,
                            const MonitorView& view, std::map<std::string, int64_t>* idle_since,
                            std::map<std::string, int64_t>* demand_since = nullptr);

}  // namespace cumulus
