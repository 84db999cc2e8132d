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

// Frees towards a drained node chase its moves at the head only once it is gone (while it lives
// it forwards them itself), and a node whose record left the head's view is forgotten.
TEST(RemoteNodesTest, DrainedAndGoneOnlyOnceTheDrainerIsGoneAndForgottenWithItsRecord) {
  RemoteNodes remote;
  NodeId self = NodeId::FromRandom();
  NodeId drainer = NodeId::FromRandom();
  NodeId other = NodeId::FromRandom();
  remote.Update(
      {Record(drainer, NodeState::kAlive, false), Record(other, NodeState::kAlive, false)}, self);
  EXPECT_FALSE(remote.DrainedAndGone(drainer));
  remote.Update({Record(drainer, NodeState::kAlive, true), Record(other, NodeState::kAlive, false)},
                self);
  EXPECT_FALSE(remote.DrainedAndGone(drainer)) << "a live drainer forwards frees itself";
  remote.Update({Record(drainer, NodeState::kDead, false), Record(other, NodeState::kDead, false)},
                self);
  EXPECT_TRUE(remote.DrainedAndGone(drainer)) << "it left: its moves are looked up";
  EXPECT_FALSE(remote.DrainedAndGone(other)) << "it never drained: it handed nothing on";
  remote.Update({Record(other, NodeState::kDead, false)}, self);
  EXPECT_FALSE(remote.DrainedAndGone(drainer)) << "its record is gone: forgotten";
  // Its record shows up again (not draining): forgotten means forgotten.
  remote.Update({Record(drainer, NodeState::kDead, false)}, self);
  EXPECT_FALSE(remote.DrainedAndGone(drainer));
}

}  // namespace
}  // namespace cumulus
