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

}  // namespace
}  // namespace cumulus
