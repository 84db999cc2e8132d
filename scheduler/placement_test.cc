#include "scheduler/placement.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

namespace cumulus {
namespace {

NodeView Node(const std::string& resources, const std::string& labels = "") {
  NodeView n;
  n.id = NodeId::FromRandom();
  n.total = *ResourceSet::Parse(resources);
  n.available = n.total;
  n.labels = *ParseLabels(labels);
  return n;
}

PlacementRequest Ask(const std::string& demand, const std::string& labels = "") {
  PlacementRequest r;
  r.demand = *ResourceSet::Parse(demand);
  r.labels = *ParseLabelSelector(labels);
  return r;
}

class PlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    onprem_gpu_ = Node("CPU=8,GPU=2", "site=onprem,gpu_type=A100");
    cloud_gpu_ = Node("CPU=4,GPU=1", "site=cloud,gpu_type=A10G");
    onprem_cpu_ = Node("CPU=16,custom=4", "site=onprem");
    cluster_.nodes = {onprem_gpu_, cloud_gpu_, onprem_cpu_};
    cluster_.local_node = onprem_cpu_.id;
  }
  NodeView onprem_gpu_, cloud_gpu_, onprem_cpu_;
  ClusterSnapshot cluster_;
};

TEST_F(PlacementTest, LocalNodeFirstWhenItFits) {
  auto d = PlaceTask(cluster_, Ask("CPU=1"));
  ASSERT_EQ(d.kind, PlacementDecision::kPlace);
  EXPECT_EQ(d.node, onprem_cpu_.id);
}

TEST_F(PlacementTest, SpillsToANodeThatCanWhenLocalCannot) {
  auto d = PlaceTask(cluster_, Ask("GPU=1"));
  ASSERT_EQ(d.kind, PlacementDecision::kPlace);
  EXPECT_TRUE(d.node == onprem_gpu_.id || d.node == cloud_gpu_.id);
  EXPECT_EQ(d.node, onprem_gpu_.id) << "GPU=1 of 2 loads the on-prem node less than 1 of 1";
}

// GPU nodes are kept for GPU work: CPU-only work goes to a node without GPUs that can run it now,
// even from a GPU node (its local node); locality still comes first; with no such node free, a
// GPU node's CPUs are used. SPREAD spreads over every node (SpreadBalancesLoad).
TEST_F(PlacementTest, CpuWorkStaysOffGpuNodesWhileACpuNodeHasRoom) {
  cluster_.local_node = onprem_gpu_.id;
  auto d = PlaceTask(cluster_, Ask("CPU=1"));
  ASSERT_EQ(d.kind, PlacementDecision::kPlace);
  EXPECT_EQ(d.node, onprem_cpu_.id) << "not the local GPU node";

  PlacementRequest near_data = Ask("CPU=1");
  near_data.argument_bytes[cloud_gpu_.id] = 1 << 20;
  d = PlaceTask(cluster_, near_data);
  ASSERT_EQ(d.kind, PlacementDecision::kPlace);
  EXPECT_EQ(d.node, cloud_gpu_.id) << "the node holding its arguments comes first";

  cluster_.nodes[2].available = *ResourceSet::Parse("custom=4");  // the CPU node's CPUs busy
  d = PlaceTask(cluster_, Ask("CPU=1"));
  ASSERT_EQ(d.kind, PlacementDecision::kPlace);
  EXPECT_EQ(d.node, onprem_gpu_.id) << "no CPU node has room: the local GPU node runs it";
}

// Nodes the autoscaler launched (label cumulus.node_type) cost money while they live and go once
// idle: work goes to the other nodes first, even from a rented local node and even when a rented
// node is emptier; among rented nodes it packs onto the fullest that fits (then the smaller), so
// an idle one can be removed. Locality still comes first; SPREAD still spreads.
TEST_F(PlacementTest, RentedNodesComeLastAndArePacked) {
  NodeView onprem = Node("CPU=4", "site=onprem");
  onprem.available = *ResourceSet::Parse("CPU=1");  // 3 of 4 busy
  NodeView busy = Node("CPU=8", "site=cloud,cumulus.node_type=cpu8");
  busy.available = *ResourceSet::Parse("CPU=2");
  NodeView idle = Node("CPU=8", "site=cloud,cumulus.node_type=cpu8");
  NodeView small = Node("CPU=2", "site=cloud,cumulus.node_type=cpu2");
  ClusterSnapshot c;
  c.nodes = {onprem, busy, idle, small};
  c.local_node = idle.id;
  auto d = PlaceTask(c, Ask("CPU=1"));
  ASSERT_EQ(d.kind, PlacementDecision::kPlace);
  EXPECT_EQ(d.node, onprem.id) << "the on-prem node has room: not the (local, idle) rented one";

  c.nodes[0].available = ResourceSet();  // on-prem full
  d = PlaceTask(c, Ask("CPU=1"));
  ASSERT_EQ(d.kind, PlacementDecision::kPlace);
  EXPECT_EQ(d.node, idle.id) << "the local node, rented like every node with room";
  c.local_node = onprem.id;
  d = PlaceTask(c, Ask("CPU=1"));
  ASSERT_EQ(d.kind, PlacementDecision::kPlace);
  EXPECT_EQ(d.node, busy.id) << "the fullest rented node, not the least loaded";
  c.nodes[1].available = *ResourceSet::Parse("CPU=1");  // both full once it runs
  c.nodes[3].available = *ResourceSet::Parse("CPU=1");
  d = PlaceTask(c, Ask("CPU=1"));
  ASSERT_EQ(d.kind, PlacementDecision::kPlace);
  EXPECT_EQ(d.node, small.id) << "equally full after it: the smaller node";
  c.nodes[1].available = *ResourceSet::Parse("CPU=2");
  c.nodes[3].available = small.total;

  PlacementRequest near_data = Ask("CPU=1");
  near_data.argument_bytes[idle.id] = 1 << 20;
  c.nodes[0].available = onprem.total;
  d = PlaceTask(c, near_data);
  ASSERT_EQ(d.kind, PlacementDecision::kPlace);
  EXPECT_EQ(d.node, idle.id) << "the node holding its arguments comes first";

  PlacementRequest spread = Ask("CPU=1");
  spread.strategy = PlacementStrategy::kSpread;
  d = PlaceTask(c, spread);
  ASSERT_EQ(d.kind, PlacementDecision::kPlace);
  EXPECT_EQ(d.node, idle.id) << "SPREAD: the least loaded of every node";

  // Groups: PACK on the on-prem node while it can hold them, else packed onto rented nodes.
  std::vector<ResourceSet> two(2, *ResourceSet::Parse("CPU=2"));
  auto g = PlaceGroup(c, two, GroupStrategy::kStrictPack);
  ASSERT_EQ(g.kind, PlacementDecision::kPlace) << g.reason;
  EXPECT_EQ(g.bundle_nodes, std::vector<NodeId>(2, onprem.id));
  c.nodes[0].available = ResourceSet();
  c.nodes[1].available = *ResourceSet::Parse("CPU=4");  // half of busy free: both fit there
  g = PlaceGroup(c, two, GroupStrategy::kStrictPack);
  ASSERT_EQ(g.kind, PlacementDecision::kPlace) << g.reason;
  EXPECT_EQ(g.bundle_nodes, std::vector<NodeId>(2, busy.id)) << "the fullest that holds both";
  g = PlaceGroup(c, two, GroupStrategy::kPack);
  ASSERT_EQ(g.kind, PlacementDecision::kPlace) << g.reason;
  EXPECT_EQ(g.bundle_nodes, std::vector<NodeId>(2, busy.id));
  // PACK does not split a group over two on-prem nodes that one rented node holds whole.
  NodeView onprem2 = Node("CPU=4", "site=onprem");
  onprem2.available = *ResourceSet::Parse("CPU=2");
  c.nodes[0].available = *ResourceSet::Parse("CPU=2");
  c.nodes.push_back(onprem2);
  g = PlaceGroup(c, two, GroupStrategy::kPack);
  ASSERT_EQ(g.kind, PlacementDecision::kPlace) << g.reason;
  EXPECT_EQ(g.bundle_nodes, std::vector<NodeId>(2, busy.id)) << "kept together";
  c.nodes[0].available = onprem.total;
  g = PlaceGroup(c, two, GroupStrategy::kPack);
  ASSERT_EQ(g.kind, PlacementDecision::kPlace) << g.reason;
  EXPECT_EQ(g.bundle_nodes, std::vector<NodeId>(2, onprem.id)) << "together on-prem";
}

TEST_F(PlacementTest, LabelsKeepWorkOffNodesThatDoNotMatch) {
  auto d = PlaceTask(cluster_, Ask("GPU=1", "site=cloud"));
  ASSERT_EQ(d.kind, PlacementDecision::kPlace);
  EXPECT_EQ(d.node, cloud_gpu_.id);
  cluster_.nodes[0].available = *ResourceSet::Parse("CPU=8");  // on-prem GPUs busy
  auto onprem_only = PlaceTask(cluster_, Ask("GPU=1", "site=onprem"));
  EXPECT_EQ(onprem_only.kind, PlacementDecision::kWait)
      << "data-sovereign work must not go to the cloud";
  auto not_a10 = PlaceTask(cluster_, Ask("GPU=1", "gpu_type!=A10G"));
  EXPECT_EQ(not_a10.kind, PlacementDecision::kWait);
}

TEST(LabelSelectorTest, SetTermsSelectAmongValues) {
  auto sel = ParseLabelSelector("site=cloud, gpu_model in (A100, H100),zone notin (b,c)");
  ASSERT_TRUE(sel.ok()) << sel.status();
  EXPECT_EQ(sel->equals.at("site"), "cloud");
  EXPECT_EQ(sel->in.at("gpu_model"), (std::set<std::string>{"A100", "H100"}));
  EXPECT_EQ(sel->not_in.at("zone"), (std::set<std::string>{"b", "c"}));
  EXPECT_TRUE(sel->Matches(*ParseLabels("site=cloud,gpu_model=H100,zone=a")));
  EXPECT_TRUE(sel->Matches(*ParseLabels("site=cloud,gpu_model=A100"))) << "notin: key absent";
  EXPECT_FALSE(sel->Matches(*ParseLabels("site=cloud,gpu_model=T4,zone=a")));
  EXPECT_FALSE(sel->Matches(*ParseLabels("site=cloud,zone=a"))) << "in: the key must be there";
  EXPECT_FALSE(sel->Matches(*ParseLabels("site=cloud,gpu_model=A100,zone=c")));
  // ToString reads back to the same selector.
  EXPECT_EQ(sel->ToString(), "site=cloud,gpu_model in (A100,H100),zone notin (b,c)");
  auto again = ParseLabelSelector(sel->ToString());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(*again == *sel);
  // The old forms read as before.
  auto old = ParseLabelSelector("site=onprem,gpu_type!=T4");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->ToString(), "site=onprem,gpu_type!=T4");
  EXPECT_TRUE(old->in.empty() && old->not_in.empty());
}

TEST(LabelSelectorTest, RejectsMalformedSetTermsNamingThem) {
  for (const char* bad :
       {"gpu_model in (A100,H100", "gpu_model in A100,H100)", "gpu_model in ()",
        "gpu_model within (A100)", "in (A100)", "gpu_model in (A100,A100)", "gpu_model in (A 100)",
        "g in (a),g in (b)", "gpu_model in (A100)x", "=oops", "site=a,"}) {
    auto sel = ParseLabelSelector(bad);
    EXPECT_EQ(sel.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(ParseLabelSelector("gpu_model within (A100)").status().message().find("within"),
            std::string::npos);
}

TEST_F(PlacementTest, SetTermsPlaceOnlyOnAcceptedModels) {
  auto d = PlaceTask(cluster_, Ask("GPU=1", "gpu_type in (A10G,H100)"));
  ASSERT_EQ(d.kind, PlacementDecision::kPlace);
  EXPECT_EQ(d.node, cloud_gpu_.id);
  auto not_a10 = PlaceTask(cluster_, Ask("GPU=1", "gpu_type notin (A10G)"));
  ASSERT_EQ(not_a10.kind, PlacementDecision::kPlace);
  EXPECT_EQ(not_a10.node, onprem_gpu_.id);
  EXPECT_EQ(PlaceTask(cluster_, Ask("GPU=1", "gpu_type in (T4)")).kind,
            PlacementDecision::kInfeasible);
}

TEST_F(PlacementTest, InfeasibleAtOnceWithTheReason) {
  auto d = PlaceTask(cluster_, Ask("GPU=4"));
  EXPECT_EQ(d.kind, PlacementDecision::kInfeasible);
  EXPECT_NE(d.reason.find("asks for GPU=4 but the largest matching node has GPU=2"),
            std::string::npos)
      << d.reason;
  auto labels = PlaceTask(cluster_, Ask("CPU=1", "site=mars"));
  EXPECT_EQ(labels.kind, PlacementDecision::kInfeasible);
  EXPECT_NE(labels.reason.find("site=mars"), std::string::npos);
  auto custom = PlaceTask(cluster_, Ask("custom=1", "site=cloud"));
  EXPECT_EQ(custom.kind, PlacementDecision::kInfeasible);
  EXPECT_NE(custom.reason.find("no custom"), std::string::npos) << custom.reason;
  cluster_.nodes[1].alive = false;
  EXPECT_EQ(PlaceTask(cluster_, Ask("GPU=1", "site=cloud")).kind, PlacementDecision::kInfeasible)
      << "a dead node can run nothing";
}

TEST_F(PlacementTest, FitsTheClusterButNotNowWaits) {
  for (auto& n : cluster_.nodes) n.available = ResourceSet();
  auto d = PlaceTask(cluster_, Ask("CPU=2"));
  EXPECT_EQ(d.kind, PlacementDecision::kWait);
  EXPECT_NE(d.reason.find("3 node(s) could run it"), std::string::npos) << d.reason;
}

TEST_F(PlacementTest, PrefersTheNodeHoldingTheArguments) {
  auto r = Ask("CPU=1");
  r.argument_bytes[onprem_gpu_.id] = 256u << 20;
  r.argument_bytes[cloud_gpu_.id] = 1u << 20;
  EXPECT_EQ(PlaceTask(cluster_, r).node, onprem_gpu_.id);
  r.strategy = PlacementStrategy::kSpread;
  EXPECT_EQ(PlaceTask(cluster_, r).node, onprem_cpu_.id)
      << "spread ignores locality: least loaded wins";
}

TEST_F(PlacementTest, SpreadBalancesLoad) {
  std::map<NodeId, int> count;
  for (int i = 0; i < 12; ++i) {
    auto r = Ask("CPU=1");
    r.strategy = PlacementStrategy::kSpread;
    auto d = PlaceTask(cluster_, r);
    ASSERT_EQ(d.kind, PlacementDecision::kPlace);
    count[d.node]++;
    for (auto& n : cluster_.nodes) {
      if (n.id == d.node) n.available.Subtract(r.demand);
    }
  }
  EXPECT_EQ(count.size(), 3u) << "spread must use every node";
}

// Short tasks end before the next is placed, so every node looks idle each time: the ties go
// round the nodes from the last spread placement rather than all to the lowest id.
TEST_F(PlacementTest, SpreadGoesRoundEquallyLoadedNodes) {
  ClusterSnapshot idle;
  for (int i = 0; i < 4; ++i) idle.nodes.push_back(Node("CPU=2"));
  idle.local_node = idle.nodes[0].id;
  std::vector<NodeId> order;
  NodeId last;
  for (int i = 0; i < 8; ++i) {
    auto r = Ask("CPU=1");
    r.strategy = PlacementStrategy::kSpread;
    r.spread_after = last;
    auto d = PlaceTask(idle, r);
    ASSERT_EQ(d.kind, PlacementDecision::kPlace);
    order.push_back(last = d.node);
  }
  EXPECT_EQ(std::set<NodeId>(order.begin(), order.begin() + 4).size(), 4u)
      << "four idle nodes, four spread tasks: one each";
  for (int i = 4; i < 8; ++i) EXPECT_EQ(order[i], order[i - 4]) << "then round again";
  // A less loaded node still comes first, whatever the round.
  idle.nodes[2].available = *ResourceSet::Parse("CPU=1");
  idle.nodes[3].available = *ResourceSet::Parse("CPU=1");
  idle.nodes[1].available = *ResourceSet::Parse("CPU=1");
  auto r = Ask("CPU=1");
  r.strategy = PlacementStrategy::kSpread;
  r.spread_after = idle.nodes[0].id;
  EXPECT_EQ(PlaceTask(idle, r).node, idle.nodes[0].id);
}

TEST_F(PlacementTest, NodeAffinityHardAndSoft) {
  auto r = Ask("CPU=1");
  r.strategy = PlacementStrategy::kNodeAffinity;
  r.affinity_node = cloud_gpu_.id;
  EXPECT_EQ(PlaceTask(cluster_, r).node, cloud_gpu_.id);
  cluster_.nodes[1].available = ResourceSet();
  EXPECT_EQ(PlaceTask(cluster_, r).kind, PlacementDecision::kWait);
  r.affinity_soft = true;
  EXPECT_EQ(PlaceTask(cluster_, r).node, onprem_cpu_.id);
  r.affinity_soft = false;
  r.affinity_node = NodeId::FromRandom();
  EXPECT_EQ(PlaceTask(cluster_, r).kind, PlacementDecision::kInfeasible);
  // Pinned to a node the head expects back (it restarted and has not heard from the node yet):
  // the work waits for it; a dead one is infeasible.
  r.affinity_node = cloud_gpu_.id;
  cluster_.nodes[1].alive = false;
  cluster_.nodes[1].recovering = true;
  auto back = PlaceTask(cluster_, r);
  EXPECT_EQ(back.kind, PlacementDecision::kWait);
  EXPECT_NE(back.reason.find("since the head restarted"), std::string::npos) << back.reason;
  auto too_big = r;  // more than it has: it could never run there, back or not
  too_big.demand = *ResourceSet::Parse("CPU=64");
  EXPECT_EQ(PlaceTask(cluster_, too_big).kind, PlacementDecision::kInfeasible);
  cluster_.nodes[1].recovering = false;
  EXPECT_EQ(PlaceTask(cluster_, r).kind, PlacementDecision::kInfeasible);
}

TEST_F(PlacementTest, GroupStrategies) {
  std::vector<ResourceSet> four(4, *ResourceSet::Parse("CPU=2"));
  auto pack = PlaceGroup(cluster_, four, GroupStrategy::kStrictPack);
  ASSERT_EQ(pack.kind, PlacementDecision::kPlace);
  EXPECT_EQ(std::set<NodeId>(pack.bundle_nodes.begin(), pack.bundle_nodes.end()).size(), 1u);

  std::vector<ResourceSet> three(3, *ResourceSet::Parse("CPU=1"));
  auto spread = PlaceGroup(cluster_, three, GroupStrategy::kStrictSpread);
  ASSERT_EQ(spread.kind, PlacementDecision::kPlace);
  EXPECT_EQ(std::set<NodeId>(spread.bundle_nodes.begin(), spread.bundle_nodes.end()).size(), 3u);

  std::vector<ResourceSet> five(5, *ResourceSet::Parse("CPU=1"));
  auto too_many = PlaceGroup(cluster_, five, GroupStrategy::kStrictSpread);
  EXPECT_EQ(too_many.kind, PlacementDecision::kInfeasible);
  EXPECT_NE(too_many.reason.find("needs 5 distinct nodes, the cluster has 3"), std::string::npos)
      << too_many.reason;
  EXPECT_EQ(PlaceGroup(cluster_, five, GroupStrategy::kSpread).kind, PlacementDecision::kPlace);

  std::vector<ResourceSet> gpus(3, *ResourceSet::Parse("GPU=1"));
  auto gpu_pack = PlaceGroup(cluster_, gpus, GroupStrategy::kPack);
  ASSERT_EQ(gpu_pack.kind, PlacementDecision::kPlace) << gpu_pack.reason;
  EXPECT_EQ(PlaceGroup(cluster_, gpus, GroupStrategy::kStrictPack).kind,
            PlacementDecision::kInfeasible);

  for (auto& n : cluster_.nodes) n.available = ResourceSet();
  EXPECT_EQ(PlaceGroup(cluster_, four, GroupStrategy::kStrictPack).kind, PlacementDecision::kWait);
}

// A PACK or SPREAD group that the matching nodes could not hold even empty is infeasible at
// once, not a wait for room that never comes (a gang of 5 x CPU=1 on a 2-CPU cluster).
TEST_F(PlacementTest, AGroupLargerThanTheClusterIsInfeasible) {
  for (auto& n : cluster_.nodes) n.available = ResourceSet();  // all busy now
  // Nodes of CPU=8, 4 and 16 hold 1 + 0 + 2 bundles of CPU=6: 3 wait, 4 never fit (their sum,
  // 24 CPUs, is less than the 28 the nodes have: the count is per node).
  std::vector<ResourceSet> three(3, *ResourceSet::Parse("CPU=6"));
  std::vector<ResourceSet> four(4, *ResourceSet::Parse("CPU=6"));
  for (GroupStrategy s : {GroupStrategy::kPack, GroupStrategy::kSpread}) {
    EXPECT_EQ(PlaceGroup(cluster_, three, s).kind, PlacementDecision::kWait);
    auto never = PlaceGroup(cluster_, four, s);
    EXPECT_EQ(never.kind, PlacementDecision::kInfeasible);
    EXPECT_NE(never.reason.find("the matching nodes can ever hold 3 of its 4 bundles of CPU=6"),
              std::string::npos)
        << never.reason;
  }
  std::vector<ResourceSet> gpus(4, *ResourceSet::Parse("GPU=1"));
  EXPECT_EQ(PlaceGroup(cluster_, gpus, GroupStrategy::kSpread).kind,
            PlacementDecision::kInfeasible);
  // Different bundles: their sum against the nodes' totals summed.
  std::vector<ResourceSet> mixed = {*ResourceSet::Parse("CPU=14"), *ResourceSet::Parse("CPU=15")};
  auto over = PlaceGroup(cluster_, mixed, GroupStrategy::kPack);
  EXPECT_EQ(over.kind, PlacementDecision::kInfeasible);
  EXPECT_NE(over.reason.find("it needs CPU=29 in all"), std::string::npos) << over.reason;
  mixed[1] = *ResourceSet::Parse("CPU=8");
  EXPECT_EQ(PlaceGroup(cluster_, mixed, GroupStrategy::kPack).kind, PlacementDecision::kWait);
}

// Whatever the cluster, a placed task fits the node's free resources, and a task is infeasible
// exactly when no alive matching node's total could hold it.
// A draining node takes no new task, actor or bundle, but still counts for feasibility: what
// only it could run waits (pending demand) instead of failing as infeasible.
TEST_F(PlacementTest, DrainingNodeGetsNoNewWorkButCountsForFeasibility) {
  cluster_.nodes[2].draining = true;  // onprem_cpu_, the local node
  auto d = PlaceTask(cluster_, Ask("CPU=1"));
  ASSERT_EQ(d.kind, PlacementDecision::kPlace);
  EXPECT_NE(d.node, onprem_cpu_.id) << "the local node drains: its new work goes elsewhere";
  PlacementRequest spread = Ask("CPU=1");
  spread.strategy = PlacementStrategy::kSpread;
  EXPECT_NE(PlaceTask(cluster_, spread).node, onprem_cpu_.id) << "the least loaded, but draining";
  spread.argument_bytes[onprem_cpu_.id] = 1 << 20;
  spread.strategy = PlacementStrategy::kDefault;
  EXPECT_NE(PlaceTask(cluster_, spread).node, onprem_cpu_.id) << "holds the arguments, but drains";

  // Only the draining node has `custom`: the task waits, saying why; it is not infeasible.
  auto only = PlaceTask(cluster_, Ask("custom=1"));
  EXPECT_EQ(only.kind, PlacementDecision::kWait);
  EXPECT_NE(only.reason.find("only draining node"), std::string::npos) << only.reason;
  // What no node could run, draining or not, is still infeasible.
  EXPECT_EQ(PlaceTask(cluster_, Ask("custom=5")).kind, PlacementDecision::kInfeasible);

  // A soft affinity to it goes elsewhere; a hard one (pinned by the caller, or a task forwarded
  // to it before the mark arrived) is still honoured.
  PlacementRequest soft = Ask("CPU=1");
  soft.strategy = PlacementStrategy::kNodeAffinity;
  soft.affinity_node = onprem_cpu_.id;
  soft.affinity_soft = true;
  auto s = PlaceTask(cluster_, soft);
  ASSERT_EQ(s.kind, PlacementDecision::kPlace);
  EXPECT_NE(s.node, onprem_cpu_.id);
  soft.affinity_soft = false;
  auto hard = PlaceTask(cluster_, soft);
  ASSERT_EQ(hard.kind, PlacementDecision::kPlace);
  EXPECT_EQ(hard.node, onprem_cpu_.id);

  // Every node draining: everything that fits waits.
  for (auto& n : cluster_.nodes) n.draining = true;
  EXPECT_EQ(PlaceTask(cluster_, Ask("CPU=1")).kind, PlacementDecision::kWait);
}

TEST_F(PlacementTest, DrainingNodeGetsNoNewBundles) {
  cluster_.nodes[2].draining = true;  // onprem_cpu_: the only node with 16 CPUs
  auto spread = PlaceGroup(cluster_, {*ResourceSet::Parse("CPU=1"), *ResourceSet::Parse("CPU=1")},
                           GroupStrategy::kSpread);
  ASSERT_EQ(spread.kind, PlacementDecision::kPlace);
  for (auto& n : spread.bundle_nodes) EXPECT_NE(n, onprem_cpu_.id);
  // Only the draining node could hold it: it waits, it is not infeasible.
  auto big = PlaceGroup(cluster_, {*ResourceSet::Parse("CPU=12")}, GroupStrategy::kStrictPack);
  EXPECT_EQ(big.kind, PlacementDecision::kWait) << big.reason;
  // STRICT_SPREAD over 3 nodes, one of them draining: waits (the cluster has 3 nodes).
  auto three = PlaceGroup(cluster_, std::vector<ResourceSet>(3, *ResourceSet::Parse("CPU=1")),
                          GroupStrategy::kStrictSpread);
  EXPECT_EQ(three.kind, PlacementDecision::kWait) << three.reason;
  cluster_.nodes[2].draining = false;
  EXPECT_EQ(PlaceGroup(cluster_, std::vector<ResourceSet>(3, *ResourceSet::Parse("CPU=1")),
                       GroupStrategy::kStrictSpread)
                .kind,
            PlacementDecision::kPlace);
}

TEST(PlacementPropertyTest, NeverOvercommitsAndInfeasibleMeansImpossible) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int round = 0; round < 2000; ++round) {
    ClusterSnapshot c;
    int nodes = 1 + rng() % 6;
    for (int i = 0; i < nodes; ++i) {
      NodeView n =
          Node("CPU=" + std::to_string(1 + rng() % 8) + ",GPU=" + std::to_string(rng() % 3),
               rng() % 2 ? "site=onprem" : "site=cloud");
      n.available.SetUnits("CPU", n.total.GetUnits("CPU") * (rng() % 3) / 2);
      n.alive = rng() % 8 != 0;
      c.nodes.push_back(n);
    }
    c.local_node = c.nodes[rng() % c.nodes.size()].id;
    PlacementRequest r = Ask("CPU=" + std::to_string(1 + rng() % 6) + (rng() % 2 ? ",GPU=1" : ""),
                             rng() % 3 ? "" : "site=onprem");
    r.strategy = static_cast<PlacementStrategy>(rng() % 2);
    PlacementDecision d = PlaceTask(c, r);
    bool possible = false;
    for (auto& n : c.nodes)
      possible |= n.alive && r.labels.Matches(n.labels) && n.total.Contains(r.demand);
    ASSERT_EQ(d.kind == PlacementDecision::kInfeasible, !possible) << d.reason;
    if (d.kind == PlacementDecision::kPlace) {
      auto it = std::find_if(c.nodes.begin(), c.nodes.end(),
                             [&](const NodeView& n) { return n.id == d.node; });
      ASSERT_NE(it, c.nodes.end());
      EXPECT_TRUE(it->alive && it->available.Contains(r.demand) && r.labels.Matches(it->labels));
    }
  }
}

TEST_F(PlacementTest, UnequalBundlesAreOrderedBySizeNotByText) {
  ClusterSnapshot c;
  NodeView a = Node("CPU=10"), b = Node("CPU=9");
  c.nodes = {a, b};
  std::vector<ResourceSet> bundles = {*ResourceSet::Parse("CPU=10"), *ResourceSet::Parse("CPU=9")};
  for (GroupStrategy s :
       {GroupStrategy::kSpread, GroupStrategy::kStrictSpread, GroupStrategy::kPack}) {
    auto d = PlaceGroup(c, bundles, s);
    ASSERT_EQ(d.kind, PlacementDecision::kPlace) << d.reason;
    EXPECT_EQ(d.bundle_nodes[0], a.id);
    EXPECT_EQ(d.bundle_nodes[1], b.id);
  }
}

// On small clusters, compare with brute force over every assignment of bundles to nodes: a group
// that some assignment fits (on total resources) is never called infeasible, and a placed group
// respects its strategy and the free resources.
TEST(PlacementPropertyTest, GroupsAgreeWithBruteForce) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int round = 0; round < 3000; ++round) {
    ClusterSnapshot c;
    int nodes = 1 + rng() % 3;
    for (int i = 0; i < nodes; ++i) {
      NodeView n =
          Node("CPU=" + std::to_string(1 + rng() % 8) + ",GPU=" + std::to_string(rng() % 3));
      n.available.SetUnits("CPU", n.total.GetUnits("CPU") * (rng() % 3) / 2);
      c.nodes.push_back(n);
    }
    std::vector<ResourceSet> bundles;
    int count = 1 + rng() % 3;
    for (int i = 0; i < count; ++i) {
      bundles.push_back(*ResourceSet::Parse("CPU=" + std::to_string(1 + rng() % 6) +
                                            (rng() % 3 ? "" : ",GPU=1")));
    }
    auto strategy = static_cast<GroupStrategy>(rng() % 4);
    // Brute force on totals.
    bool possible = false;
    std::vector<int> assign(count, 0);
    while (true) {
      std::vector<ResourceSet> room;
      for (auto& n : c.nodes) room.push_back(n.total);
      bool ok = true;
      std::set<int> distinct(assign.begin(), assign.end());
      if (strategy == GroupStrategy::kStrictPack && distinct.size() > 1) ok = false;
      if (strategy == GroupStrategy::kStrictSpread && static_cast<int>(distinct.size()) < count)
        ok = false;
      for (int i = 0; ok && i < count; ++i) {
        if (!room[assign[i]].Contains(bundles[i]))
          ok = false;
        else
          room[assign[i]].Subtract(bundles[i]);
      }
      possible |= ok;
      int k = 0;
      while (k < count && ++assign[k] == nodes) assign[k++] = 0;
      if (k == count) break;
    }
    PlacementDecision d = PlaceGroup(c, bundles, strategy);
    if (possible) {
      ASSERT_NE(d.kind, PlacementDecision::kInfeasible) << d.reason;
    }
    if (d.kind == PlacementDecision::kPlace) {
      ASSERT_EQ(d.bundle_nodes.size(), bundles.size());
      std::map<NodeId, ResourceSet> free;
      for (auto& n : c.nodes) free[n.id] = n.available;
      for (size_t i = 0; i < bundles.size(); ++i) {
        ASSERT_TRUE(free[d.bundle_nodes[i]].Contains(bundles[i])) << "overcommitted";
        free[d.bundle_nodes[i]].Subtract(bundles[i]);
      }
      std::set<NodeId> used(d.bundle_nodes.begin(), d.bundle_nodes.end());
      if (strategy == GroupStrategy::kStrictPack) {
        EXPECT_EQ(used.size(), 1u);
      }
      if (strategy == GroupStrategy::kStrictSpread) {
        EXPECT_EQ(used.size(), bundles.size());
      }
    }
  }
}

}  // namespace
}  // namespace cumulus
