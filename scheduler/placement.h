// Placement: where a task, an actor or a gang (placement group) should run, decided from a
// snapshot of the cluster. Pure functions: no I/O, no clock, deterministic for a given snapshot,
// so the node daemons, the head and the simulator in bench/ all run the same policy.
//
// Every decision is one of
//   kPlace       run it on `node` (or the bundles on `bundle_nodes`) now;
//   kWait        it fits the cluster but not the resources free now, or only draining nodes
//                could run it: queue it (pending demand);
//   kInfeasible  no alive node could ever run it: fail at once with `reason`.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cumulus/ids.h"
#include "scheduler/resources.h"

namespace cumulus {

struct NodeView {
  NodeId id;
  ResourceSet total;
  ResourceSet available;
  Labels labels;
  bool alive = true;
  // Draining: it takes no new task, actor or bundle, but still counts for feasibility, so work
  // only it could run waits (pending demand an autoscaler can launch for) instead of failing.
  // A hard node affinity to it is still honoured (the caller pinned it; a task forwarded to it
  // before it was marked must run there).
  bool draining = false;
  // Not alive now, but expected back: the head restarted and has not heard from it yet. It runs
  // nothing new; work pinned to it by hard node affinity that it could hold (its labels match,
  // it is large enough) waits for it instead of failing.
  bool recovering = false;
};

struct ClusterSnapshot {
  std::vector<NodeView> nodes;
  NodeId local_node;  // the node deciding (nil on the head)
};

// Label constraints: every `equals` pair must be on the node, no `not_equals` pair may be; for
// every `in` key the node has the key with one of the listed values; for every `not_in` key the
// node lacks the key or has a value not listed (Kubernetes' set-based selector semantics).
struct LabelSelector {
  Labels equals;
  Labels not_equals;
  std::map<std::string, std::set<std::string>> in;      // "gpu_model in (A100,H100)"
  std::map<std::string, std::set<std::string>> not_in;  // "gpu_model notin (T4)"
  bool Matches(const Labels& labels) const;
  // "site=onprem,gpu_type!=T4,gpu_model in (A100,H100),zone notin (b)": ParseLabelSelector reads
  // it back to the same selector.
  std::string ToString() const;
  bool empty() const {
    return equals.empty() && not_equals.empty() && in.empty() && not_in.empty();
  }
  bool operator==(const LabelSelector& o) const {
    return equals == o.equals && not_equals == o.not_equals && in == o.in && not_in == o.not_in;
  }
};
// Parses a comma-separated list of terms: "KEY=VALUE", "KEY!=VALUE", "KEY in (V1,V2,...)" and
// "KEY notin (V1,V2,...)" (spaces around terms, operators and values are allowed; commas inside
// the parentheses separate values, not terms). Keys and values are label names (ParseLabels).
// InvalidArgument names the term at fault; a key repeated within one kind of term is an error.
Result<LabelSelector> ParseLabelSelector(std::string_view spec);

enum class PlacementStrategy {
  kDefault,       // the node holding most argument bytes; else, among the nodes that can run it
                  // now, those the autoscaler did not launch (no kNodeTypeLabel) if any, and of
                  // them those without GPUs for CPU-only work if any; then the local node; else
                  // the least loaded, or among rented nodes only the fullest (tightest fit)
  kSpread,        // the least loaded node; among equally loaded ones, round robin (`spread_after`)
  kNodeAffinity,  // `affinity_node` (if `affinity_soft`, elsewhere when it cannot run it)
};

struct PlacementRequest {
  ResourceSet demand;
  LabelSelector labels;
  PlacementStrategy strategy = PlacementStrategy::kDefault;
  NodeId affinity_node;
  bool affinity_soft = false;
  std::map<NodeId, uint64_t> argument_bytes;  // bytes of the task's arguments each node holds
  // kSpread: among the least loaded nodes, the first whose id follows this one (wrapping), so a
  // burst of short tasks on an idle cluster goes round the nodes rather than all to the lowest
  // id. The caller passes the node of its previous spread placement.
  NodeId spread_after;
};

// Hard affinity: only `affinity_node` may run it.
inline bool IsPinned(const PlacementRequest& r) {
  return r.strategy == PlacementStrategy::kNodeAffinity && !r.affinity_soft;
}

struct PlacementDecision {
  enum Kind { kPlace, kWait, kInfeasible };
  Kind kind = kInfeasible;
  NodeId node;                       // kPlace of a task or actor
  std::vector<NodeId> bundle_nodes;  // kPlace of a placement group, one per bundle
  std::string reason;                // kWait and kInfeasible: what is missing
};

PlacementDecision PlaceTask(const ClusterSnapshot& cluster, const PlacementRequest& request);

enum class GroupStrategy {
  kPack,          // as few nodes as possible
  kSpread,        // as many nodes as possible
  kStrictPack,    // all bundles on one node, or wait
  kStrictSpread,  // every bundle on a different node, or wait
};
const char* GroupStrategyName(GroupStrategy s);  // "STRICT_SPREAD"

// Places all bundles at once (a gang) or none of them. PACK and STRICT_PACK groups go on nodes the
// autoscaler did not launch when those can hold them now, else rented nodes are used too.
PlacementDecision PlaceGroup(const ClusterSnapshot& cluster,
                             const std::vector<ResourceSet>& bundles, GroupStrategy strategy,
                             const LabelSelector& labels = {});

}  // namespace cumulus
