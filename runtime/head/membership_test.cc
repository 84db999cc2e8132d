#include "runtime/head/membership.h"

#include <gtest/gtest.h>

#include "runtime/head/node_codec.h"

namespace cumulus {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

NodeRecord NewNode() {
  NodeRecord n;
  n.id = NodeId::FromRandom();
  n.total = *ResourceSet::Parse("CPU=4");
  n.available = n.total;
  return n;
}

class MembershipTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  Membership m_{MembershipOptions{seconds(10), seconds(2)}, clock_};
};

TEST_F(MembershipTest, AMetricsAddressThatIsNotHostPortIsDropped) {
  NodeRecord good = NewNode();
  good.metrics_address = "box-1.example:9100";
  ASSERT_TRUE(m_.Register(good).ok());
  EXPECT_EQ(m_.Find(good.id)->metrics_address, "box-1.example:9100");
  for (std::string bad : {"[::]:9100", "box:0", "box", ":9100", "box:9100/metrics", "a b:1"}) {
    NodeRecord n = NewNode();
    n.metrics_address = bad;
    ASSERT_TRUE(m_.Register(n).ok()) << bad;
    EXPECT_EQ(m_.Find(n.id)->metrics_address, "") << bad;
  }
}

// What holds a node (its heartbeat's work count) is recorded, news once when it changes, and
// cleared when the node dies (the autoscaler reads it: a node with all its resources free may
// still host actors that take none).
TEST_F(MembershipTest, WorkIsRecordedNewsOnceAndClearedAtDeath) {
  NodeRecord n = NewNode();
  ASSERT_TRUE(m_.Register(n).ok());
  uint64_t v = m_.version();
  ASSERT_TRUE(m_.Heartbeat(n.id, n.total, {}, "", 2));
  ASSERT_TRUE(m_.Heartbeat(n.id, n.total, {}, "", 2));
  EXPECT_EQ(m_.Find(n.id)->work, 2u);
  EXPECT_EQ(m_.version(), v + 1) << "a change of work is news, a repeat is not";
  m_.Disconnected(n.id);
  clock_.AdvanceTime(seconds(3));
  ASSERT_EQ(m_.Tick().size(), 1u);
  EXPECT_EQ(m_.Find(n.id)->work, 0u);
}

TEST_F(MembershipTest, HeartbeatsKeepANodeAliveAndSilenceKillsIt) {
  NodeRecord n = NewNode();
  ASSERT_TRUE(m_.Register(n).ok());
  for (int i = 0; i < 30; ++i) {
    clock_.AdvanceTime(seconds(1));
    ASSERT_TRUE(m_.Heartbeat(n.id, n.total));
    ASSERT_TRUE(m_.Tick().empty());
  }
  clock_.AdvanceTime(milliseconds(9999));
  EXPECT_TRUE(m_.Tick().empty());
  clock_.AdvanceTime(milliseconds(1));
  auto died = m_.Tick();
  ASSERT_EQ(died.size(), 1u);
  EXPECT_EQ(m_.Find(n.id)->state, NodeState::kDead);
  EXPECT_NE(m_.Find(n.id)->death_reason.find("no heartbeat"), std::string::npos);
  EXPECT_FALSE(m_.Heartbeat(n.id, n.total)) << "a dead node's heartbeat must be refused";
  EXPECT_EQ(m_.alive_count(), 0u);
}

TEST_F(MembershipTest, AClosedConnectionHasAGracePeriod) {
  NodeRecord a = NewNode(), b = NewNode();
  ASSERT_TRUE(m_.Register(a).ok());
  ASSERT_TRUE(m_.Register(b).ok());
  m_.Disconnected(a.id);
  m_.Disconnected(b.id);
  clock_.AdvanceTime(seconds(1));
  ASSERT_TRUE(m_.Register(b).ok());  // b reconnects in time
  clock_.AdvanceTime(seconds(1));
  auto died = m_.Tick();
  ASSERT_EQ(died.size(), 1u);
  EXPECT_EQ(died[0], a.id);
  EXPECT_EQ(m_.Find(b.id)->state, NodeState::kAlive);
}

TEST_F(MembershipTest, ANodeThatLeavesIsStoppedNotFailed) {
  NodeRecord n = NewNode();
  ASSERT_TRUE(m_.Register(n).ok());
  uint64_t before = m_.version();
  // It says it is leaving, then its connection closes: stopped on purpose, at once.
  ASSERT_TRUE(m_.Left(n.id, "cumulus stop"));
  m_.Disconnected(n.id);
  const NodeRecord* r = m_.Find(n.id);
  EXPECT_EQ(r->state, NodeState::kDead);
  EXPECT_TRUE(r->left);
  EXPECT_STREQ(NodeStateName(*r), "STOPPED");
  EXPECT_EQ(r->death_reason, "stopped: cumulus stop");
  EXPECT_TRUE(r->available.units().empty());
  EXPECT_GT(m_.version(), before) << "the other nodes must hear that it left";
  EXPECT_EQ(m_.alive_count(), 0u);
  // The grace for a closed connection does not turn it into a node that did not reconnect.
  clock_.AdvanceTime(seconds(30));
  EXPECT_TRUE(m_.Tick().empty());
  EXPECT_EQ(m_.Find(n.id)->death_reason, "stopped: cumulus stop");
  EXPECT_FALSE(m_.Heartbeat(n.id, n.total));
  EXPECT_FALSE(m_.Left(n.id, "again")) << "a dead node cannot leave again";
  // Started again under its id (the head's own node keeps its id): it is back.
  ASSERT_TRUE(m_.Register(n).ok());
  EXPECT_EQ(m_.Find(n.id)->state, NodeState::kAlive);
  EXPECT_FALSE(m_.Find(n.id)->left);
  EXPECT_STREQ(NodeStateName(*m_.Find(n.id)), "ALIVE");
  EXPECT_FALSE(m_.Left(NodeId::FromRandom(), "unknown"));
}

TEST_F(MembershipTest, ADeadNodeMustRejoinWithANewId) {
  NodeRecord n = NewNode();
  ASSERT_TRUE(m_.Register(n).ok());
  clock_.AdvanceTime(seconds(11));
  ASSERT_EQ(m_.Tick().size(), 1u);
  Status st = m_.Register(n);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("new node id"), std::string::npos);
  n.id = NodeId::FromRandom();
  EXPECT_TRUE(m_.Register(n).ok());
  EXPECT_EQ(m_.nodes().size(), 2u);
  EXPECT_EQ(m_.alive_count(), 1u);
}

TEST_F(MembershipTest, RecoveredNodesGetAFullTimeoutToReconnect) {
  NodeRecord alive = NewNode(), dead = NewNode();
  dead.state = NodeState::kDead;
  m_.Recover(alive);
  m_.Recover(dead);
  EXPECT_EQ(m_.alive_count(), 0u) << "not alive until it is heard from";
  EXPECT_EQ(m_.Find(alive.id)->state, NodeState::kRecovering);
  clock_.AdvanceTime(seconds(5));
  EXPECT_TRUE(m_.Tick().empty());
  ASSERT_TRUE(m_.Register(alive).ok());  // re-registers with the same id: no duplicate
  EXPECT_EQ(m_.alive_count(), 1u);
  EXPECT_EQ(m_.nodes().size(), 2u);
  EXPECT_EQ(m_.Register(dead).code(), StatusCode::kNotFound);
}

TEST_F(MembershipTest, RecoveredNodesThatNeverReturnDie) {
  NodeRecord gone = NewNode();
  m_.Recover(gone);
  clock_.AdvanceTime(seconds(10));
  ASSERT_EQ(m_.Tick().size(), 1u);
  EXPECT_EQ(m_.Find(gone.id)->state, NodeState::kDead);
}

TEST_F(MembershipTest, TheHeadsOwnStallIsForgiven) {
  NodeRecord n = NewNode();
  ASSERT_TRUE(m_.Register(n).ok());
  clock_.AdvanceTime(seconds(30));  // the head was paused, not the node
  m_.ForgiveStall(seconds(30));
  EXPECT_TRUE(m_.Tick().empty());
  EXPECT_TRUE(m_.Heartbeat(n.id, n.total));
}

TEST_F(MembershipTest, TheViewVersionMovesOnlyWhenTheViewChanges) {
  NodeRecord a = NewNode(), b = NewNode();
  ASSERT_TRUE(m_.Register(a).ok());
  ASSERT_TRUE(m_.Register(b).ok());
  uint64_t v = m_.version();
  EXPECT_EQ(m_.ChangedSince(0).size(), 2u);
  // Ten idle heartbeats of each: nothing a node's view shows has changed.
  for (int i = 0; i < 10; ++i) {
    clock_.AdvanceTime(milliseconds(500));
    ASSERT_TRUE(m_.Heartbeat(a.id, a.total));
    ASSERT_TRUE(m_.Heartbeat(b.id, b.total));
  }
  EXPECT_EQ(m_.version(), v);
  EXPECT_TRUE(m_.ChangedSince(v).empty());
  // b gets busy: only b is news, once.
  ASSERT_TRUE(m_.Heartbeat(b.id, *ResourceSet::Parse("CPU=1")));
  ASSERT_TRUE(m_.Heartbeat(b.id, *ResourceSet::Parse("CPU=1")));
  auto changed = m_.ChangedSince(v);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0]->id, b.id);
  EXPECT_EQ(changed[0]->available.GetUnits("CPU"), ResourceSet::kUnit);
  // Pending demand is news too; then a's death.
  uint64_t v2 = m_.version();
  ASSERT_TRUE(m_.Heartbeat(a.id, a.total, {{*ResourceSet::Parse("GPU=1"), 2}}));
  m_.Disconnected(a.id);
  clock_.AdvanceTime(seconds(3));
  ASSERT_TRUE(m_.Heartbeat(b.id, *ResourceSet::Parse("CPU=1")));
  ASSERT_EQ(m_.Tick().size(), 1u);
  changed = m_.ChangedSince(v2);
  ASSERT_EQ(changed.size(), 1u) << "a changed twice: listed once, as it is now";
  EXPECT_EQ(changed[0]->state, NodeState::kDead);
  EXPECT_EQ(m_.ChangedSince(0).size(), 2u);
}

// The head marks a node DRAINING; the mark stays when the node registers again (it reconnected,
// or the head restarted and read the record back) and the node's heartbeats say what it waits for.
TEST_F(MembershipTest, DrainMarkIsKeptAcrossRegistrationAndRecovery) {
  NodeRecord n = NewNode();
  ASSERT_TRUE(m_.Register(n).ok());
  EXPECT_EQ(m_.Drain(NodeId::FromRandom()).code(), StatusCode::kNotFound);
  uint64_t before = m_.version();
  ASSERT_TRUE(m_.Drain(n.id).ok());
  EXPECT_GT(m_.version(), before) << "nodes learn the mark through the view's versions";
  EXPECT_STREQ(NodeStateName(*m_.Find(n.id)), "DRAINING");
  ASSERT_TRUE(m_.Drain(n.id).ok()) << "draining again is not an error";
  ASSERT_TRUE(m_.Heartbeat(n.id, n.total, {}, "waiting for 1 task"));
  EXPECT_EQ(m_.Find(n.id)->drain_note, "waiting for 1 task");
  ASSERT_TRUE(m_.Register(n).ok());  // n (as the node sends it) has no mark
  EXPECT_TRUE(m_.Find(n.id)->draining);

  // A restarted head reads the record back (as stored) and keeps the mark when it registers.
  auto stored = NodeFromBytes(NodeToBytes(*m_.Find(n.id)));
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_TRUE(stored->draining);
  EXPECT_EQ(stored->drain_note, "waiting for 1 task");
  Membership after{MembershipOptions{seconds(10), seconds(2)}, clock_};
  after.Recover(*stored);
  ASSERT_TRUE(after.Register(n).ok());
  EXPECT_TRUE(after.Find(n.id)->draining);

  ASSERT_TRUE(m_.Left(n.id, "drained"));
  EXPECT_STREQ(NodeStateName(*m_.Find(n.id)), "STOPPED");
  EXPECT_EQ(m_.Drain(n.id).code(), StatusCode::kInvalidArgument) << "it is gone already";
}

}  // namespace
}  // namespace cumulus
