#include "scheduler/node_policy.h"

#include <gtest/gtest.h>

namespace cumulus {
namespace {

NodeId Node(uint8_t n) {
  std::string bytes(NodeId::kSize, '\0');
  bytes[0] = static_cast<char>(n);
  return NodeId::FromBinary(bytes);
}

NodeView View(uint8_t n, const char* total, const char* available) {
  NodeView v;
  v.id = Node(n);
  v.total = *ResourceSet::Parse(total);
  v.available = *ResourceSet::Parse(available);
  return v;
}

TEST(NodePolicyTest, AForwardedTaskRunsOrWaitsWhereItIs) {
  ClusterSnapshot snap;
  snap.local_node = Node(1);
  snap.nodes = {View(1, "CPU=1", "CPU=0"), View(2, "CPU=1", "CPU=1")};
  PlacementRequest req;
  req.demand = *ResourceSet::Parse("CPU=1");
  EXPECT_EQ(PlaceTask(snap, RequestAtNode(req, 0, Node(1))).node, Node(2)) << "spills back";
  PlacementDecision d = PlaceTask(snap, RequestAtNode(req, 1, Node(1)));
  EXPECT_EQ(d.kind, PlacementDecision::kWait) << "hopped once: placed only here";
}

TEST(NodePolicyTest, InfeasibleOnlyIfNoNodeEvenUnreachableFits) {
  ClusterSnapshot reachable;
  reachable.local_node = Node(1);
  reachable.nodes = {View(1, "CPU=1", "CPU=1")};
  ClusterSnapshot everyone = reachable;
  everyone.nodes.push_back(View(2, "CPU=1,GPU=1", "CPU=1,GPU=1"));
  PlacementRequest gpu;
  gpu.demand = *ResourceSet::Parse("GPU=1");
  EXPECT_EQ(PlaceOrWait(reachable, everyone, gpu).kind, PlacementDecision::kWait);
  EXPECT_EQ(PlaceOrWait(reachable, reachable, gpu).kind, PlacementDecision::kInfeasible);
  std::vector<ResourceSet> bundles = {gpu.demand};
  EXPECT_EQ(PlaceGroupOrWait(reachable, everyone, bundles, GroupStrategy::kPack).kind,
            PlacementDecision::kWait);
  EXPECT_EQ(PlaceGroupOrWait(reachable, reachable, bundles, GroupStrategy::kPack).kind,
            PlacementDecision::kInfeasible);
}

TEST(NodePolicyTest, RetriesBackOffUpToFiveSeconds) {
  using std::chrono::milliseconds;
  EXPECT_EQ(RetryBackoff(1), milliseconds(100));
  EXPECT_EQ(RetryBackoff(2), milliseconds(200));
  EXPECT_EQ(RetryBackoff(6), milliseconds(3200));
  EXPECT_EQ(RetryBackoff(7), milliseconds(5000));
  EXPECT_EQ(RetryBackoff(1000), milliseconds(5000));
  EXPECT_TRUE(MayRetry(3, 2));
  EXPECT_FALSE(MayRetry(3, 3));
  EXPECT_FALSE(MayRetry(0, 0));
  EXPECT_TRUE(MayRetry(-1, 1000000)) << "negative: retry forever";
}

TEST(NodePolicyTest, WhatBecomesOfALostTask) {
  LostTask running;
  running.max_retries = 1;
  EXPECT_EQ(AfterWorkerDied(running), LossOutcome::kRetryLater);
  running.attempt = 1;
  EXPECT_EQ(AfterWorkerDied(running), LossOutcome::kFailNoRetries);
  LostTask queued_behind = running;
  queued_behind.started = false;
  EXPECT_EQ(AfterWorkerDied(queued_behind), LossOutcome::kRequeue) << "not an attempt";
  LostTask cancelled = running;
  cancelled.cancelled = true;
  EXPECT_EQ(AfterWorkerDied(cancelled), LossOutcome::kFailCancelled);
  LostTask actor;
  actor.actor_creation = true;
  EXPECT_EQ(AfterWorkerDied(actor), LossOutcome::kFailActorDied)
      << "its owner decides about restarts";
  EXPECT_EQ(AfterNodeLost(actor), LossOutcome::kRequeue) << "placed again elsewhere";
  actor.cancelled = true;
  EXPECT_EQ(AfterNodeLost(actor), LossOutcome::kRequeue);
  EXPECT_EQ(AfterNodeLost(cancelled), LossOutcome::kFailCancelled);
  LostTask forwarded;
  EXPECT_EQ(AfterNodeLost(forwarded), LossOutcome::kRetryLater);
  LostTask undelivered;
  undelivered.started = false;
  EXPECT_EQ(AfterNodeLost(undelivered), LossOutcome::kRequeue)
      << "a connection that never connected delivered nothing: not an attempt";
}

TEST(NodePolicyTest, TheMemoryVictimIsTheNewestRetriableTask) {
  auto at = [&](int ms) { return TimePoint{} + std::chrono::milliseconds(ms); };
  EXPECT_FALSE(ChooseMemoryVictim({}).has_value());
  std::vector<RunningTask> tasks = {{true, at(1)}, {false, at(3)}, {true, at(2)}};
  EXPECT_EQ(ChooseMemoryVictim(tasks), 2u) << "the newest that can be retried";
  tasks = {{false, at(1)}, {false, at(3)}, {false, at(2)}};
  EXPECT_EQ(ChooseMemoryVictim(tasks), 1u) << "none retriable: the newest";
}

}  // namespace
}  // namespace cumulus
