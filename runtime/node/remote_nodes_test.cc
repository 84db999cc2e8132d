#include "runtime/node/remote_nodes.h"

#include <gtest/gtest.h>

namespace cumulus {
namespace {

NodeRecord Record(const NodeId& id, NodeState state, bool draining) {
  NodeRecord n;
  n.id = id;
  n.state = state;
  n.draining = draining;
  n.left = state == NodeState::kDead;
  return n;
}

// `resource` free on `node` in the snapshot this node places on at `now` (-1 if not in it).
double FreeIn(const RemoteNodes& remote, const NodeId& node, TimePoint now,
              const std::string& resource = "CPU") {
  NodeView self;
  self.id = NodeId::FromRandom();
  for (const NodeView& n : remote.Snapshot(self, now, true).nodes) {
    if (n.id == node) return n.available.Get(resource);
  }
  return -1.0;
}

// Frees towards a node that drained also chase its moves at the head (it may have exited with
// frees unread), and a node whose record left the head's view is forgotten.
TEST(RemoteNodesTest, DrainedOnceMarkedDrainingAndForgottenWithItsRecord) {
  RemoteNodes remote;
  NodeId self = NodeId::FromRandom();
  NodeId drainer = NodeId::FromRandom();
  NodeId other = NodeId::FromRandom();
  remote.Update(
      {Record(drainer, NodeState::kAlive, false), Record(other, NodeState::kAlive, false)}, self);
  EXPECT_FALSE(remote.Drained(drainer)) << "not draining yet: it handed nothing on";
  remote.Update({Record(drainer, NodeState::kAlive, true), Record(other, NodeState::kAlive, false)},
                self);
  EXPECT_TRUE(remote.Drained(drainer)) << "draining: it may be handing objects on";
  remote.Update({Record(drainer, NodeState::kDead, false), Record(other, NodeState::kDead, false)},
                self);
  EXPECT_TRUE(remote.Drained(drainer)) << "it left: its moves are looked up";
  EXPECT_FALSE(remote.Drained(other)) << "it never drained: it handed nothing on";
  remote.Update({Record(other, NodeState::kDead, false)}, self);
  EXPECT_FALSE(remote.Drained(drainer)) << "its record is gone: forgotten";
  // Its record shows up again (not draining): forgotten means forgotten.
  remote.Update({Record(drainer, NodeState::kDead, false)}, self);
  EXPECT_FALSE(remote.Drained(drainer));
}

// What this node forwarded stays booked in its view until the node's own report of its free
// resources moves: a view that reports the same free resources as when it was booked (a record
// changed for another reason, e.g. the node holds the task queued, not yet its resources) does not
// undo it (the next task went to the same full node, and waited there); a report that moved ends
// it; so does kBookingLife, or the work's result coming back (a credit).
TEST(RemoteNodesTest, BookingsLastUntilTheNodesReportMoves) {
  RemoteNodes remote;
  NodeId self = NodeId::FromRandom();
  NodeRecord peer = Record(NodeId::FromRandom(), NodeState::kAlive, false);
  peer.total = peer.available = *ResourceSet::Parse("CPU=4");
  TimePoint t0;
  auto free_cpus = [&](TimePoint now) { return FreeIn(remote, peer.id, now); };
  remote.Update({peer}, self);
  remote.Book(peer.id, *ResourceSet::Parse("CPU=3"), true, t0);
  EXPECT_EQ(free_cpus(t0), 1);
  peer.work = 1;  // it reports holding the task, not yet its resources
  remote.Update({peer}, self);
  EXPECT_EQ(free_cpus(t0), 1) << "a view that does not count it yet undid the booking";
  peer.available = *ResourceSet::Parse("CPU=1");  // its report counts the work now
  remote.Update({peer}, self);
  EXPECT_EQ(free_cpus(t0), 1) << "counted twice";

  peer.available = peer.total;
  remote.Update({peer}, self);
  remote.Book(peer.id, *ResourceSet::Parse("CPU=2"), true, t0);
  TimePoint end = t0 + RemoteNodes::kBookingLife;
  EXPECT_EQ(free_cpus(end - std::chrono::milliseconds(1)), 2);
  EXPECT_EQ(free_cpus(end), 4) << "a booking no report ever counted ends";
  EXPECT_FALSE(remote.EndBookings(end - std::chrono::milliseconds(1)));
  EXPECT_TRUE(remote.EndBookings(end)) << "its end is news: schedule again";
  EXPECT_FALSE(remote.EndBookings(end));

  remote.Book(peer.id, *ResourceSet::Parse("CPU=3"), true, t0);
  remote.Book(peer.id, *ResourceSet::Parse("CPU=2"), true, t0);
  EXPECT_EQ(free_cpus(t0), 0) << "bookings past what is free take it to nothing, not less";
  remote.Book(peer.id, *ResourceSet::Parse("CPU=3"), false, t0);
  remote.Book(peer.id, *ResourceSet::Parse("CPU=2"), false, t0);  // their results came back
  EXPECT_EQ(free_cpus(t0), 4);
  remote.Update({peer}, self);
  EXPECT_EQ(free_cpus(t0), 4) << "a credited booking came back with the view";
}

// A node that returned a task said what it has free: the view shows it no freer than that, on top
// of what is booked, until its report moves (or kBookingLife), so the task does not go back to it
// as many times as the stale view had room for copies of it.
TEST(RemoteNodesTest, ANodeIsNoFreerThanItSaidUntilItsReportMoves) {
  RemoteNodes remote;
  NodeId self = NodeId::FromRandom();
  NodeRecord peer = Record(NodeId::FromRandom(), NodeState::kAlive, false);
  peer.total = peer.available = *ResourceSet::Parse("CPU=4,b=4");
  TimePoint t0;
  auto free_of = [&](TimePoint now, const std::string& name) {
    return FreeIn(remote, peer.id, now, name);
  };
  remote.Update({peer}, self);
  remote.Book(peer.id, *ResourceSet::Parse("CPU=1,b=1"), true, t0);  // forwarded
  EXPECT_EQ(free_of(t0, "CPU"), 3);
  remote.Saw(peer.id, *ResourceSet::Parse("b=4"), t0);  // returned: its CPUs are taken
  EXPECT_EQ(free_of(t0, "CPU"), 0);
  EXPECT_EQ(free_of(t0, "b"), 3) << "where it said more than the view shows, the view stands";
  remote.Saw(peer.id, *ResourceSet::Parse("CPU=2,b=4"), t0);  // more than the view: no change
  EXPECT_EQ(free_of(t0, "CPU"), 0);
  EXPECT_EQ(free_of(t0 + RemoteNodes::kBookingLife, "CPU"), 4) << "bookings end with their life";
  peer.available = *ResourceSet::Parse("CPU=2,b=4");  // its report moved
  remote.Update({peer}, self);
  EXPECT_EQ(free_of(t0, "CPU"), 2);
  EXPECT_EQ(free_of(t0, "b"), 4);
  remote.Saw(NodeId::FromRandom(), ResourceSet(), t0);  // a node not in the view: nothing
}

}  // namespace
}  // namespace cumulus
