#include "runtime/autoscaler/snapshot_builder.h"

#include <capnp/message.h>
#include <gtest/gtest.h>

#include "runtime/head/node_codec.h"

namespace cumulus {
namespace {

NodeRecord NodeWithDemand(DemandList demand) {
  NodeRecord n;
  n.id = NodeId::FromRandom();
  n.total.Set("CPU", 2);
  n.state = NodeState::kAlive;
  n.pending_demand = std::move(demand);
  return n;
}

// A demand item is named for who waits when the work says (a trial's purpose), so the policy's
// verdicts (`cumulus status`, `cumulus describe task`) name the trial; else for its node.
TEST(SnapshotBuilderTest, DemandItemsAreNamedForTheirPurpose) {
  ResourceSet cpu4;
  cpu4.Set("CPU", 4);
  MonitorView view;
  view.now = 1000;
  view.nodes.push_back(NodeWithDemand(
      {{cpu4, 1, "", "trial asha/t0007", "waiting for CPU=4"}, {cpu4, 3, "site=onprem"}}));
  std::string hex = view.nodes[0].id.Hex();
  std::map<std::string, int64_t> idle_since;
  BuiltSnapshot built = BuildSnapshot(ClusterConfig(), MonitorBooks(), view, &idle_since);
  ASSERT_EQ(built.snapshot.demand.size(), 2u);
  EXPECT_EQ(built.snapshot.demand[0].id, "trial asha/t0007 {CPU=4}");
  EXPECT_EQ(built.snapshot.demand[0].count, 1);
  EXPECT_EQ(built.snapshot.demand[1].id, "node " + hex.substr(0, 8) + " {CPU=4} on site=onprem");
  EXPECT_EQ(built.snapshot.demand[1].count, 3);
}

// A demand's `since` is when it was first reported without a break (a type's
// launch_after_waiting counts from it); demand no longer reported starts again.
TEST(SnapshotBuilderTest, DemandIsDatedFromWhenItWasFirstReported) {
  ResourceSet cpu4;
  cpu4.Set("CPU", 4);
  MonitorView view;
  view.now = 1000;
  view.nodes.push_back(NodeWithDemand({{cpu4, 2, ""}}));
  std::map<std::string, int64_t> idle_since, demand_since;
  auto since = [&] {
    BuiltSnapshot b =
        BuildSnapshot(ClusterConfig(), MonitorBooks(), view, &idle_since, &demand_since);
    return b.snapshot.demand.empty() ? int64_t{-1} : b.snapshot.demand[0].since;
  };
  EXPECT_EQ(since(), 1000);
  view.now = 5000;
  EXPECT_EQ(since(), 1000) << "still waiting: dated from its first report";
  view.demand_settled = false;  // a node just joined: demand is not read, nor forgotten
  view.now = 6000;
  EXPECT_EQ(since(), -1);
  view.demand_settled = true;
  view.now = 7000;
  EXPECT_EQ(since(), 1000);
  auto demand = view.nodes[0].pending_demand;
  view.nodes[0].pending_demand.clear();  // placed
  EXPECT_EQ(since(), -1);
  view.nodes[0].pending_demand = demand;  // waits again: a new wait
  view.now = 9000;
  EXPECT_EQ(since(), 9000);
  // Without a map (as before): dated now.
  EXPECT_EQ(
      BuildSnapshot(ClusterConfig(), MonitorBooks(), view, &idle_since).snapshot.demand[0].since,
      9000);
}

// The purpose and the reason travel in the node record (heartbeat and control store).
TEST(SnapshotBuilderTest, DemandPurposeAndReasonSurviveTheNodeRecord) {
  ResourceSet cpu2;
  cpu2.Set("CPU", 2);
  NodeRecord n = NodeWithDemand({{cpu2, 2, "", "trial gang/t0001", "waiting for room"}});
  capnp::MallocMessageBuilder message;
  auto out = message.initRoot<proto::NodeInfo>();
  EncodeNode(n, out);
  auto back = DecodeNode(out.asReader());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->pending_demand, n.pending_demand);
  ASSERT_EQ(back->pending_demand.size(), 1u);
  EXPECT_EQ(back->pending_demand[0].purpose, "trial gang/t0001");
  EXPECT_EQ(back->pending_demand[0].reason, "waiting for room");
}

}  // namespace
}  // namespace cumulus
