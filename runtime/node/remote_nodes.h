// RemoteNodes: what a node knows of the other nodes — their resources and labels (from the head's
// view, corrected optimistically by what this node forwards), where to reach them, which could
// not be reached lately, and which the head declared dead. The task router places work on
// Snapshot() and books what it sends.
//
// Not thread-safe: the node's event loop owns it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "cumulus/ids.h"
#include "runtime/base/clock.h"
#include "runtime/head/membership.h"
#include "scheduler/placement.h"

namespace cumulus {

class RemoteNodes {
 public:
  // A node that could not be reached is left out of placement this long.
  static constexpr Duration kUnreachablePenalty = std::chrono::seconds(5);

  // Replaces the view with the head's (this node's own record is left out). Returns the nodes
  // the head declared dead, less this node's former ids.
  std::vector<NodeId> Update(const std::vector<NodeRecord>& nodes, const NodeId& self);
  // True the first time it is asked about a dead node: announce it to local processes.
  bool FirstNewsOfDeath(const NodeId& node) { return announced_dead_.insert(node).second; }
  // This node got a new id (it rejoined): its old one may be declared dead, which is not news.
  void Renamed(const NodeId& old_id);

  // This node (its exact free resources) and the others, less those that could not be reached
  // lately unless `include_unreachable` (to tell "never" from "not now").
  ClusterSnapshot Snapshot(const NodeView& self, TimePoint now, bool include_unreachable) const;

  // Books (`take`) or credits resources in the view of `node` (credits never above its total).
  void Book(const NodeId& node, const ResourceSet& r, bool take);
  void Unreachable(const NodeId& node, TimePoint now) {
    unreachable_until_[node] = now + kUnreachablePenalty;
  }
  // host:port of a node's core channel, or "".
  std::string CoreAddress(const NodeId& node) const;
  std::vector<NodeId> AliveNodes() const;
  // Whether the head's view marks this node itself DRAINING (as of the last Update that had
  // its record; a node stays draining once marked, even if a later view lacks its record).
  bool self_draining() const { return self_draining_; }
  // Whether `node` drained (the head's view marked it DRAINING at some time) and is gone now
  // (its record is DEAD, or it left): its objects may live on other nodes it handed them to, and
  // it can no longer forward frees to them itself (a drainer that still lives does: see
  // HandoffLedger). Nodes whose record left the head's view are forgotten (false).
  bool DrainedAndGone(const NodeId& node) const;

 private:
  std::map<NodeId, NodeView> nodes_;
  std::map<NodeId, std::string> core_addresses_;
  std::map<NodeId, TimePoint> unreachable_until_;
  std::set<NodeId> announced_dead_;  // dead nodes already announced to local processes
  std::set<NodeId> past_ids_;        // ids this node had before it rejoined
  // Nodes the view marked draining once; pruned when their record leaves the view.
  std::set<NodeId> ever_draining_;
  bool self_draining_ = false;
};

}  // namespace cumulus
