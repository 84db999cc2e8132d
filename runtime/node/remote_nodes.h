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
  // Whether `node` was announced dead (FirstNewsOfDeath said so once).
  bool AnnouncedDead(const NodeId& node) const { return announced_dead_.count(node) > 0; }
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
  // Whether the head's view marked `node` DRAINING once, alive or gone: its objects may have
  // been handed on to other nodes. (While it lives it forwards frees itself, but a view is up to
  // a heartbeat old: a drainer may have exited, with frees unread in its socket.) Forgotten with
  // the node's record.
  bool Drained(const NodeId& node) const { return ever_draining_.count(node) > 0; }

 private:
  std::map<NodeId, NodeView> nodes_;
  std::map<NodeId, std::string> core_addresses_;
  std::map<NodeId, TimePoint> unreachable_until_;
  std::set<NodeId> announced_dead_;  // dead nodes already announced to local processes
  std::set<NodeId> past_ids_;        // ids this node had before it rejoined
  std::set<NodeId> ever_draining_;   // nodes the view marked draining once, while in it
  bool self_draining_ = false;
};

}  // namespace cumulus
