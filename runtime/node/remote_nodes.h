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

  // What this node sends a node stays booked in its view of that node until the head's view
  // reports other free resources for that node (taken as its own account counting the work:
  // usually so, though work ending there at the same time can leave the figure unchanged, and
  // the booking then counts twice until its result comes back or its life ends), or this long at
  // most. A booking used to end with the next view; a view that predated the work (the node had
  // reported holding a queued task, not yet its resources) sent the next task to the same full
  // node, where it waited while the autoscaler launched nodes for it again and again.
  static constexpr Duration kBookingLife = std::chrono::seconds(10);

  // Replaces the view with the head's (this node's own record is left out); bookings on a node
  // whose reported free resources changed end. Returns the nodes the head declared dead, less
  // this node's former ids.
  std::vector<NodeId> Update(const std::vector<NodeRecord>& nodes, const NodeId& self);
  // True the first time it is asked about a dead node: announce it to local processes.
  bool FirstNewsOfDeath(const NodeId& node) { return announced_dead_.insert(node).second; }
  // Whether `node` was announced dead (FirstNewsOfDeath said so once).
  bool AnnouncedDead(const NodeId& node) const { return announced_dead_.count(node) > 0; }
  // This node got a new id (it rejoined): its old one may be declared dead, which is not news.
  void Renamed(const NodeId& old_id);

  // This node (its exact free resources) and the others, less what is booked on them, less those
  // that could not be reached lately unless `include_unreachable` (to tell "never" from "not now").
  ClusterSnapshot Snapshot(const NodeView& self, TimePoint now, bool include_unreachable) const;

  // Books (`take`, at `now`) or credits resources in the view of `node`. A credit ends a booking
  // of the same resources, or else adds to the view until the next Update (never above the
  // node's total).
  void Book(const NodeId& node, const ResourceSet& r, bool take, TimePoint now);
  // `node` itself said it has only `free` (it returned a task it had no room for): what the view
  // shows above that is booked, as a booking made now, so the node looks no freer than it said.
  void Saw(const NodeId& node, const ResourceSet& free, TimePoint now);
  // Forgets bookings past kBookingLife; true if one ended (room may have come back: schedule).
  bool EndBookings(TimePoint now);
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
  // `view`'s free resources less the live bookings on `node` (down to nothing, never below).
  ResourceSet FreeAfterBookings(const NodeId& node, const NodeView& view, TimePoint now) const;
  struct Booking {
    ResourceSet resources;
    ResourceSet reported;  // the node's free resources in the head's view when it was booked
    TimePoint until;
  };
  std::map<NodeId, NodeView> nodes_;               // the head's view (and credits)
  std::map<NodeId, ResourceSet> reported_;         // free resources as the head's view has them
  std::map<NodeId, std::vector<Booking>> booked_;  // per node, oldest first
  std::map<NodeId, std::string> core_addresses_;
  std::map<NodeId, TimePoint> unreachable_until_;
  std::set<NodeId> announced_dead_;  // dead nodes already announced to local processes
  std::set<NodeId> past_ids_;        // ids this node had before it rejoined
  std::set<NodeId> ever_draining_;   // nodes the view marked draining once, while in it
  bool self_draining_ = false;
};

}  // namespace cumulus
