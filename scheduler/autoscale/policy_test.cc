#include "scheduler/autoscale/policy.h"

#include <gtest/gtest.h>

#include "scheduler/autoscale/idle_gaps.h"

namespace cumulus::autoscale {
namespace {

constexpr int64_t kMin = kMicrosPerMinute;

NodeType Type(const std::string& name, const std::string& resources, double price,
              const std::string& labels = "site=cloud") {
  NodeType t;
  t.name = name;
  t.resources = *ResourceSet::Parse(resources);
  t.labels = *ParseLabels(labels);
  t.price_per_hour = price;
  t.boot_micros = 3 * kMin;
  t.idle_timeout_micros = 5 * kMin;
  return t;
}

Node OnPrem(const std::string& id, const std::string& total, const std::string& free,
            const std::string& labels = "site=onprem") {
  Node n;
  n.id = id;
  n.total = *ResourceSet::Parse(total);
  n.free = *ResourceSet::Parse(free);
  n.labels = *ParseLabels(labels);
  return n;
}

Node Cloud(const std::string& id, const NodeType& type, NodeState state, int64_t since = 0) {
  Node n;
  n.id = id;
  n.type = type.name;
  n.state = state;
  n.total = type.resources;
  n.free = type.resources;
  n.labels = type.labels;
  n.since = since;
  return n;
}

DemandItem Want(const std::string& id, const std::string& resources, int count = 1,
                const std::string& labels = "") {
  DemandItem d;
  d.id = id;
  d.bundles = {*ResourceSet::Parse(resources)};
  d.labels = *ParseLabelSelector(labels);
  d.count = count;
  return d;
}

DemandItem Group(const std::string& id, const std::string& bundle, int bundles,
                 GroupStrategy strategy) {
  DemandItem d = Want(id, bundle);
  d.bundles.assign(bundles, d.bundles[0]);
  d.strategy = strategy;
  return d;
}

Decision DecideOk(const Snapshot& s, const Options& o = {}) {
  auto d = Decide(s, o);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *d : Decision{};
}

int Launched(const Decision& d, const std::string& type) {
  int n = 0;
  for (const Launch& l : d.launches) {
    if (l.type == type) n += l.count;
  }
  return n;
}

int LaunchedTotal(const Decision& d) {
  int n = 0;
  for (const Launch& l : d.launches) n += l.count;
  return n;
}

// The copies of item `id` with `reason`.
int CopiesWith(const Decision& d, const std::string& id, Reason reason) {
  int n = 0;
  for (const Verdict& v : d.verdicts) {
    if (v.id == id && v.reason == reason) n += v.count;
  }
  return n;
}

std::string DetailOf(const Decision& d, const std::string& id) {
  for (const Verdict& v : d.verdicts) {
    if (v.id == id) return v.detail;
  }
  return "";
}

class PolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    s_.now = 1000 * kMin;
    cpu4_ = Type("cpu4", "CPU=4,memory=16G", 0.20);
    cpu16_ = Type("cpu16", "CPU=16,memory=64G", 0.80);
    t4_ = Type("t4", "CPU=4,GPU=1,memory=16G", 0.53, "site=cloud,gpu_model=T4");
    a100_ = Type("a100", "CPU=12,GPU=1,memory=85G", 3.67, "site=cloud,gpu_model=A100");
    h100_ = Type("h100", "CPU=24,GPU=1,memory=200G", 6.98, "site=cloud,gpu_model=H100");
    s_.types = {cpu4_, cpu16_, t4_, a100_, h100_};
    s_.nodes = {OnPrem("onprem-1", "CPU=8,GPU=1", "CPU=8,GPU=1")};
  }
  Snapshot s_;
  NodeType cpu4_, cpu16_, t4_, a100_, h100_;
};

TEST_F(PolicyTest, DemandThatFitsOnPremNowLaunchesNothing) {
  s_.demand = {Want("task-a", "CPU=4"), Want("task-b", "GPU=1")};
  Decision d = DecideOk(s_);
  EXPECT_EQ(LaunchedTotal(d), 0);
  EXPECT_EQ(CopiesWith(d, "task-a", Reason::kFitsOnPremNow), 1);
  EXPECT_EQ(CopiesWith(d, "task-b", Reason::kFitsOnPremNow), 1);
  // On-prem full: the same demand launches.
  s_.nodes[0].free = ResourceSet();
  d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "t4"), 1);
  EXPECT_EQ(Launched(d, "cpu4"), 1) << "the CPU copy gets a CPU node, not the t4's spare CPUs";
  EXPECT_EQ(CopiesWith(d, "task-a", Reason::kLaunching), 1);
}

// Ray's #20476: CPU work planned onto a GPU node keeps the dearer node busy after its GPU work
// ends. Work that a CPU type could hold is not counted onto GPU nodes that boot or are launched
// this round; what already runs is the cluster's to use.
TEST_F(PolicyTest, CpuWorkIsNotPlannedOntoGpuNodesThatBoot) {
  s_.nodes = {Cloud("t4-1", t4_, NodeState::kLaunching, s_.now - kMin)};
  s_.demand = {Want("cpu", "CPU=2")};
  Decision d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "cpu4"), 1);
  EXPECT_EQ(CopiesWith(d, "cpu", Reason::kLaunching), 1);

  // No CPU type holds CPU=20: the GPU node that boots covers it, as only a GPU type can.
  s_.nodes = {Cloud("h100-1", h100_, NodeState::kLaunching, s_.now - kMin)};
  s_.demand = {Want("wide", "CPU=20")};
  d = DecideOk(s_);
  EXPECT_EQ(LaunchedTotal(d), 0);
  EXPECT_EQ(CopiesWith(d, "wide", Reason::kBootInProgress), 1);

  // Free CPUs of a running GPU node are used: launching would add a node, not free one.
  s_.nodes = {Cloud("t4-2", t4_, NodeState::kRunning, s_.now - 10 * kMin)};
  s_.demand = {Want("cpu", "CPU=2")};
  d = DecideOk(s_);
  EXPECT_EQ(LaunchedTotal(d), 0);
  EXPECT_EQ(CopiesWith(d, "cpu", Reason::kFitsCloudNow), 1);
}

TEST_F(PolicyTest, OnlyTheRestBeyondFreeOnPremLaunches) {
  s_.demand = {Want("job", "CPU=2", 6)};  // on-prem holds 4 of them
  Decision d = DecideOk(s_);
  EXPECT_EQ(CopiesWith(d, "job", Reason::kFitsOnPremNow), 4);
  EXPECT_EQ(CopiesWith(d, "job", Reason::kLaunching), 2);
  EXPECT_EQ(Launched(d, "cpu4"), 1) << "two CPU=2 copies pack onto one cpu4";
}

TEST_F(PolicyTest, BinPacksOntoTheCheapestTypePerCopy) {
  s_.nodes.clear();
  // 16 copies of CPU=1: four cpu4 ($0.80) cost as much as one cpu16 ($0.80); 3 copies: one cpu4.
  s_.demand = {Want("many", "CPU=1", 3)};
  Decision d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "cpu4"), 1);
  EXPECT_EQ(Launched(d, "cpu16"), 0);
  // A big copy only the bigger type holds.
  s_.demand = {Want("big", "CPU=10")};
  d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "cpu16"), 1);
  EXPECT_EQ(LaunchedTotal(d), 1);
  // When cpu16 is cheaper per copy than cpu4 it is the one opened.
  s_.types[1].price_per_hour = 0.40;
  s_.demand = {Want("many", "CPU=1", 16)};
  d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "cpu16"), 1);
  EXPECT_EQ(Launched(d, "cpu4"), 0);
}

TEST_F(PolicyTest, LeastWasteBreaksATieInPrice) {
  s_.nodes.clear();
  s_.types = {Type("roomy", "CPU=8,memory=64G", 1.0), Type("snug", "CPU=8,memory=16G", 1.0)};
  s_.demand = {Want("w", "CPU=8,memory=16G")};
  Decision d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "snug"), 1);
  EXPECT_EQ(Launched(d, "roomy"), 0);
}

TEST_F(PolicyTest, CpuWorkNeverOpensAGpuTypeWhileACpuTypeFits) {
  s_.nodes.clear();
  // Per copy a t4 ($0.53, CPU=4) is cheaper than a quarter of a pricey cpu16 ($3.00): still cpu16.
  cpu16_.price_per_hour = 3.0;
  s_.types = {cpu16_, t4_, a100_};
  s_.demand = {Want("cpu-work", "CPU=4", 4)};
  Decision d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "cpu16"), 1);
  EXPECT_EQ(Launched(d, "t4"), 0);
  EXPECT_EQ(Launched(d, "a100"), 0);
  // With no CPU type, a GPU type may carry CPU work.
  s_.types = {t4_, a100_};
  d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "t4"), 4);
}

TEST_F(PolicyTest, OnlyGpuModelsTheDemandAcceptsLaunch) {
  s_.nodes.clear();
  s_.demand = {Want("trial-1", "GPU=1", 1, "gpu_model in (A100,H100)")};
  Decision d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "t4"), 0) << "the cheapest GPU type is not an accepted model";
  EXPECT_EQ(Launched(d, "a100"), 1);
  s_.demand = {Want("trial-2", "GPU=1", 1, "gpu_model in (V100)")};
  d = DecideOk(s_);
  EXPECT_EQ(LaunchedTotal(d), 0);
  EXPECT_EQ(CopiesWith(d, "trial-2", Reason::kGpuModelNotAccepted), 1);
  s_.demand = {Want("trial-3", "GPU=1", 1, "gpu_model notin (T4)")};
  d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "a100"), 1);
}

TEST_F(PolicyTest, WorkLabelledOnPremNeverLaunches) {
  s_.nodes[0].free = ResourceSet();
  s_.demand = {Want("private", "CPU=1", 3, "site=onprem")};
  Decision d = DecideOk(s_);
  EXPECT_EQ(LaunchedTotal(d), 0);
  EXPECT_EQ(CopiesWith(d, "private", Reason::kLabelsExcludeCloud), 3);
  EXPECT_NE(DetailOf(d, "private").find("site=onprem"), std::string::npos);
}

// Work with hard affinity to one node waits for that node: nothing is launched for it (a new
// node could not run it), it takes no free room others could use, and the reason names the node.
TEST_F(PolicyTest, WorkPinnedToANodeLaunchesNothing) {
  s_.nodes[0].free = ResourceSet();
  DemandItem pinned = Want("pinned", "CPU=2", 3);
  pinned.pinned_to = "0123456789abcdef0123456789abcdef";
  s_.demand = {pinned};
  Decision d = DecideOk(s_);
  EXPECT_EQ(LaunchedTotal(d), 0);
  EXPECT_EQ(CopiesWith(d, "pinned", Reason::kPinnedToNode), 3);
  EXPECT_NE(DetailOf(d, "pinned").find("01234567"), std::string::npos) << DetailOf(d, "pinned");
  // With room free on-prem, the pinned copies take none of it from work that may go anywhere.
  s_.nodes[0].free = *ResourceSet::Parse("CPU=2");
  s_.demand = {pinned, Want("free", "CPU=2")};
  d = DecideOk(s_);
  EXPECT_EQ(LaunchedTotal(d), 0);
  EXPECT_EQ(CopiesWith(d, "free", Reason::kFitsOnPremNow), 1);
  EXPECT_EQ(CopiesWith(d, "pinned", Reason::kPinnedToNode), 3);
}

TEST_F(PolicyTest, NoTypeLargeEnoughIsSaid) {
  s_.demand = {Want("huge", "CPU=64")};
  Decision d = DecideOk(s_);
  EXPECT_EQ(LaunchedTotal(d), 0);
  EXPECT_EQ(CopiesWith(d, "huge", Reason::kNoTypeFits), 1);
}

TEST_F(PolicyTest, TheHourlyBudgetStopsLaunches) {
  s_.nodes.clear();
  s_.types = {a100_};
  s_.budget_per_hour = 8.0;  // two a100 nodes
  s_.demand = {Want("trials", "GPU=1", 3)};
  Decision d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "a100"), 2);
  EXPECT_EQ(CopiesWith(d, "trials", Reason::kBudgetPerHour), 1);
  // A running node counts against it too.
  s_.nodes = {Cloud("c1", a100_, NodeState::kRunning)};
  s_.nodes[0].free = ResourceSet();
  d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "a100"), 1);
  EXPECT_EQ(CopiesWith(d, "trials", Reason::kBudgetPerHour), 2);
}

TEST_F(PolicyTest, TheTotalBudgetStopsLaunches) {
  s_.nodes.clear();
  s_.types = {a100_};
  s_.budget_total = 100;
  s_.spend = 99.8;  // an a100 costs at least $0.49 (3m boot + 5m idle timeout)
  s_.demand = {Want("trial", "GPU=1")};
  Decision d = DecideOk(s_);
  EXPECT_EQ(LaunchedTotal(d), 0);
  EXPECT_EQ(CopiesWith(d, "trial", Reason::kBudgetTotal), 1);
  s_.spend = 10;
  EXPECT_EQ(LaunchedTotal(DecideOk(s_)), 1);
}

TEST_F(PolicyTest, ATypeAtItsMaxLaunchesNoMore) {
  s_.nodes.clear();
  s_.types = {a100_};
  s_.types[0].max_count = 2;
  s_.nodes = {Cloud("c1", a100_, NodeState::kRunning)};
  s_.nodes[0].free = ResourceSet();
  s_.demand = {Want("trials", "GPU=1", 3)};
  Decision d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "a100"), 1);
  EXPECT_EQ(CopiesWith(d, "trials", Reason::kTypeMaxReached), 2);
}

TEST_F(PolicyTest, NodesLaunchingCountAsCapacity) {
  s_.nodes = {Cloud("booting", cpu4_, NodeState::kLaunching, s_.now - kMin)};
  s_.demand = {Want("job", "CPU=3")};
  Decision d = DecideOk(s_);
  EXPECT_EQ(LaunchedTotal(d), 0) << "no stacking while a node boots";
  EXPECT_EQ(CopiesWith(d, "job", Reason::kBootInProgress), 1);
  // Counted once: a second copy does not fit the same booting node, so it launches one more.
  s_.demand = {Want("job", "CPU=3", 2)};
  d = DecideOk(s_);
  EXPECT_EQ(CopiesWith(d, "job", Reason::kBootInProgress), 1);
  EXPECT_EQ(Launched(d, "cpu4"), 1);
}

TEST_F(PolicyTest, AFailedTypeIsBackedOffAndTheNextTypeTried) {
  s_.nodes.clear();
  s_.demand = {Want("trial", "GPU=1", 1, "gpu_model in (A100,H100)")};
  s_.launch_history["a100"] = {1, s_.now - kMin, "no capacity in zone"};
  Decision d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "a100"), 0);
  EXPECT_EQ(Launched(d, "h100"), 1);
  EXPECT_EQ(d.recheck_at, s_.now + kMin) << "the backoff (2m) ends in a minute";
  // With the next type failing too, nothing launches and the reason names the backoff.
  s_.launch_history["h100"] = {3, s_.now - kMin, "quota exceeded"};
  d = DecideOk(s_);
  EXPECT_EQ(LaunchedTotal(d), 0);
  EXPECT_EQ(CopiesWith(d, "trial", Reason::kBackoff), 1);
  EXPECT_NE(DetailOf(d, "trial").find("backoff of type"), std::string::npos);
  // Each type that could hold it says why not, not only the first.
  EXPECT_NE(DetailOf(d, "trial").find("a100"), std::string::npos) << DetailOf(d, "trial");
  EXPECT_NE(DetailOf(d, "trial").find("h100"), std::string::npos) << DetailOf(d, "trial");
  // Backoff is exponential, capped, and ends.
  Options o;
  EXPECT_EQ(BackoffUntil({1, 0, ""}, o), 2 * kMin);
  EXPECT_EQ(BackoffUntil({2, 0, ""}, o), 4 * kMin);
  EXPECT_EQ(BackoffUntil({3, 0, ""}, o), 8 * kMin);
  EXPECT_EQ(BackoffUntil({20, 0, ""}, o), 30 * kMin);
  s_.now += 31 * kMin;
  EXPECT_EQ(Launched(DecideOk(s_), "a100"), 1);
}

TEST_F(PolicyTest, ALaunchThatTimesOutIsTerminatedAndItsTypeBackedOff) {
  s_.nodes = {Cloud("stuck", a100_, NodeState::kLaunching, s_.now - 11 * kMin)};
  s_.demand = {Want("trial", "GPU=1", 1, "gpu_model in (A100,H100)")};
  Decision d = DecideOk(s_);
  ASSERT_EQ(d.terminations.size(), 1u);
  EXPECT_EQ(d.terminations[0].node, "stuck");
  EXPECT_NE(d.terminations[0].why.find("timed out"), std::string::npos);
  EXPECT_EQ(Launched(d, "a100"), 0) << "not the type that just timed out";
  EXPECT_EQ(Launched(d, "h100"), 1);
}

TEST_F(PolicyTest, StrictPackGroupsGoOnOneNodeOrNone) {
  s_.nodes.clear();
  s_.types = {Type("g1", "CPU=4,GPU=1", 1.0), Type("g4", "CPU=16,GPU=4", 4.5)};
  s_.demand = {Group("pg", "GPU=1", 4, GroupStrategy::kStrictPack)};
  Decision d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "g4"), 1);
  EXPECT_EQ(Launched(d, "g1"), 0) << "four g1 nodes are cheaper but STRICT_PACK needs one node";
  // Without a type large enough: nothing, said so.
  s_.types = {Type("g1", "CPU=4,GPU=1", 1.0)};
  d = DecideOk(s_);
  EXPECT_EQ(LaunchedTotal(d), 0);
  EXPECT_EQ(CopiesWith(d, "pg", Reason::kNoTypeFits), 1);
  // PACK is best effort: four g1 nodes do.
  s_.demand = {Group("pg", "GPU=1", 4, GroupStrategy::kPack)};
  EXPECT_EQ(Launched(DecideOk(s_), "g1"), 4);
}

TEST_F(PolicyTest, StrictSpreadGroupsGetDistinctNodesAsAWhole) {
  s_.nodes.clear();
  s_.types = {Type("g4", "CPU=16,GPU=4", 4.0)};
  s_.demand = {Group("pg", "GPU=1", 3, GroupStrategy::kStrictSpread)};
  Decision d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "g4"), 3) << "one bundle per node";
  // Max 2: the group cannot be placed whole, so nothing launches for it.
  s_.types[0].max_count = 2;
  d = DecideOk(s_);
  EXPECT_EQ(LaunchedTotal(d), 0);
  EXPECT_EQ(CopiesWith(d, "pg", Reason::kTypeMaxReached), 1);
}

TEST_F(PolicyTest, UpscalingSpeedBoundsNodesLaunchingAtOnce) {
  s_.nodes.clear();
  s_.types = {a100_};
  s_.upscaling_speed = 1.0;
  s_.demand = {Want("trials", "GPU=1", 8)};
  Options o;
  o.min_launch_batch = 5;
  Decision d = DecideOk(s_, o);
  EXPECT_EQ(Launched(d, "a100"), 5);
  EXPECT_EQ(CopiesWith(d, "trials", Reason::kUpscalingSpeed), 3);
}

TEST_F(PolicyTest, AnIdleCloudNodeIsDrainedThenTerminated) {
  Node idle = Cloud("c1", cpu4_, NodeState::kRunning);
  idle.idle_since = s_.now - 6 * kMin;
  s_.nodes = {OnPrem("onprem-1", "CPU=8", "CPU=8"), idle};
  s_.nodes[0].idle_since = s_.now - 600 * kMin;
  Decision d = DecideOk(s_);
  ASSERT_EQ(d.drains.size(), 1u) << "the on-prem node is never drained";
  EXPECT_EQ(d.drains[0].node, "c1");
  EXPECT_TRUE(d.terminations.empty()) << "drained first";
  // Not yet past its timeout: kept, and the policy says when to look again.
  s_.nodes[1].idle_since = s_.now - 2 * kMin;
  d = DecideOk(s_);
  EXPECT_TRUE(d.drains.empty());
  EXPECT_EQ(d.recheck_at, s_.now + 3 * kMin);
  // Draining: kept until the node itself says it is done (it left), then terminated.
  s_.nodes[1].state = NodeState::kDraining;
  d = DecideOk(s_);
  EXPECT_TRUE(d.terminations.empty()) << "draining, not yet drained";
  s_.nodes[1].drained = true;
  d = DecideOk(s_);
  ASSERT_EQ(d.terminations.size(), 1u);
  EXPECT_EQ(d.terminations[0].node, "c1");
}

// The autoscaler drained a node from a view in which it was idle; work reached it meanwhile (or
// its heartbeat since the drain has not come yet). Its last report still says quiet and the head
// only says "asked to drain": it is not terminated until the node reports itself drained. (It
// was: a SLURM node was scancelled while it ran a task.)
TEST_F(PolicyTest, ADrainingNodeIsNotTerminatedOnAViewOlderThanTheDrain) {
  Node draining = Cloud("c1", cpu4_, NodeState::kDraining);
  draining.idle_since = s_.now - 10 * kMin;  // from the heartbeat before the drain
  draining.busy = false;
  draining.holds_sole_copy = false;
  draining.free = ResourceSet();  // draining: no capacity for demand
  s_.nodes = {draining};
  for (int round = 0; round < 3; ++round) {
    s_.now += kMin;
    Decision d = DecideOk(s_);
    EXPECT_TRUE(d.terminations.empty()) << "round " << round << ": " << d.terminations[0].why;
    EXPECT_TRUE(d.drains.empty()) << "drained once is enough";
  }
  s_.nodes[0].drained = true;  // the node finished, handed its objects on and left
  Decision d = DecideOk(s_);
  ASSERT_EQ(d.terminations.size(), 1u);
  EXPECT_EQ(d.terminations[0].node, "c1");
}

TEST_F(PolicyTest, ABusyNodeOrOneHoldingASoleCopyIsNeverTerminated) {
  Node busy = Cloud("busy", cpu4_, NodeState::kRunning);
  busy.idle_since = s_.now - 60 * kMin;  // a stale idle mark
  busy.busy = true;
  Node holder = Cloud("holder", cpu4_, NodeState::kRunning);
  holder.idle_since = s_.now - 60 * kMin;
  holder.holds_sole_copy = true;
  s_.nodes = {busy, holder};
  Decision d = DecideOk(s_);
  EXPECT_TRUE(d.drains.empty());
  s_.nodes[0].state = s_.nodes[1].state = NodeState::kDraining;
  d = DecideOk(s_);
  EXPECT_TRUE(d.terminations.empty()) << "draining, busy or holding a sole copy";
  s_.nodes[0].drained = s_.nodes[1].drained = true;  // (inconsistent, but never a kill)
  d = DecideOk(s_);
  EXPECT_TRUE(d.terminations.empty()) << "drained, but still busy or holding a sole copy";
}

TEST_F(PolicyTest, DrainsPerRoundAreCappedAndMinCountsKept) {
  s_.nodes.clear();
  for (int i = 0; i < 8; ++i) {
    Node n = Cloud("c" + std::to_string(i), cpu4_, NodeState::kRunning);
    n.idle_since = s_.now - (10 + i) * kMin;
    s_.nodes.push_back(n);
  }
  Options o;
  o.max_drains_per_round = 3;
  Decision d = DecideOk(s_, o);
  ASSERT_EQ(d.drains.size(), 3u);
  EXPECT_EQ(d.drains[0].node, "c7") << "longest idle first";
  s_.types[0].min_count = 6;
  o.max_drains_per_round = 10;
  d = DecideOk(s_, o);
  EXPECT_EQ(d.drains.size(), 2u) << "min count 6 of 8";
  // Below min: launched up to it.
  s_.nodes.clear();
  s_.types[0].min_count = 2;
  d = DecideOk(s_, o);
  EXPECT_EQ(Launched(d, "cpu4"), 2);
}

TEST_F(PolicyTest, AnIdleNodePendingWorkFitsIsNotDrained) {
  Node idle = Cloud("c1", cpu4_, NodeState::kRunning);
  idle.idle_since = s_.now - 60 * kMin;
  s_.nodes = {idle};
  s_.demand = {Want("job", "CPU=2")};
  Decision d = DecideOk(s_);
  EXPECT_TRUE(d.drains.empty());
  EXPECT_EQ(CopiesWith(d, "job", Reason::kFitsCloudNow), 1);
}

TEST_F(PolicyTest, DemandWaitsItsTypesLaunchAfterWaitingBeforeALaunch) {
  s_.nodes[0].free = ResourceSet();                           // on-prem full
  s_.types[2].launch_after_waiting_micros = t4_.boot_micros;  // t4: wait a boot first
  DemandItem young = Want("young", "GPU=1");
  young.since = s_.now - 1 * kMin;
  DemandItem cpu = Want("cpu", "CPU=4");  // cpu4 launches at once
  cpu.since = s_.now;
  s_.demand = {young, cpu};
  Decision d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "t4"), 0);
  EXPECT_EQ(CopiesWith(d, "young", Reason::kWaitingBriefly), 1);
  EXPECT_EQ(DetailOf(d, "young"), "waited 60s of the 3m before a t4 node is launched");
  EXPECT_EQ(Launched(d, "cpu4"), 1) << "a type without the setting launches at once";
  EXPECT_EQ(d.recheck_at, young.since + t4_.boot_micros) << "looked at again when it is due";
  // Waited as long as the setting: launched.
  s_.now = young.since + t4_.boot_micros;
  d = DecideOk(s_);
  EXPECT_EQ(Launched(d, "t4"), 1);
  EXPECT_EQ(CopiesWith(d, "young", Reason::kLaunching), 1);
  // On-prem freed room meanwhile: nothing launches, whatever the wait.
  s_.nodes[0].free = *ResourceSet::Parse("CPU=8,GPU=1");
  d = DecideOk(s_);
  EXPECT_EQ(LaunchedTotal(d), 0);
}

TEST_F(PolicyTest, ATypeThatLearnsItsIdleTimeoutUsesTheGapsItWasGiven) {
  Node idle = Cloud("c1", cpu4_, NodeState::kRunning);
  idle.idle_since = s_.now - 2 * kMin;  // under the configured 5 minutes
  s_.nodes = {idle};
  s_.types[0].learn_idle_timeout = true;
  // Work never came back within the horizon: the learned timeout is 0, drained now.
  s_.idle_gaps["cpu4"] = std::vector<int64_t>(20, kNeverCameBack);
  Decision d = DecideOk(s_);
  ASSERT_EQ(d.drains.size(), 1u);
  EXPECT_EQ(d.drains[0].why, "idle for 2m, timeout 0s (learned)");
  // Work always came back after 10 minutes, longer than a boot (3 minutes): still 0.
  s_.idle_gaps["cpu4"] = std::vector<int64_t>(20, 10 * kMin);
  EXPECT_EQ(DecideOk(s_).drains.size(), 1u);
  // Work came back within a minute every time: kept a minute, so not drained at 2 minutes...
  s_.idle_gaps["cpu4"] = std::vector<int64_t>(20, 1 * kMin);
  EXPECT_EQ(DecideOk(s_).drains.size(), 1u) << "idle 2 minutes is past the learned 1 minute";
  s_.nodes[0].idle_since = s_.now - 30 * kMicrosPerSecond;
  d = DecideOk(s_);
  EXPECT_TRUE(d.drains.empty());
  EXPECT_EQ(d.recheck_at, s_.now + 30 * kMicrosPerSecond);
  // Too few gaps: the configured timeout (5 minutes) holds, and is not called learned.
  s_.idle_gaps["cpu4"] = {kNeverCameBack};
  s_.nodes[0].idle_since = s_.now - 2 * kMin;
  EXPECT_TRUE(DecideOk(s_).drains.empty());
  s_.nodes[0].idle_since = s_.now - 6 * kMin;
  d = DecideOk(s_);
  ASSERT_EQ(d.drains.size(), 1u);
  EXPECT_EQ(d.drains[0].why, "idle for 6m, timeout 5m");
  s_.nodes[0].idle_since = s_.now - 2 * kMin;
  s_.types[0].learn_idle_timeout = false;
  s_.idle_gaps["cpu4"] = std::vector<int64_t>(20, kNeverCameBack);
  EXPECT_TRUE(DecideOk(s_).drains.empty()) << "gaps are ignored by a type that does not learn";
}

TEST_F(PolicyTest, SameSnapshotSameDecision) {
  s_.nodes[0].free = ResourceSet();
  s_.demand = {Want("a", "CPU=1", 5), Want("b", "GPU=1", 2, "gpu_model in (A100,H100)"),
               Group("pg", "CPU=2", 3, GroupStrategy::kStrictSpread),
               Want("c", "CPU=1", 1, "site=onprem")};
  Decision one = DecideOk(s_), two = DecideOk(s_);
  ASSERT_EQ(one.launches.size(), two.launches.size());
  for (size_t i = 0; i < one.launches.size(); ++i) {
    EXPECT_EQ(one.launches[i].type, two.launches[i].type);
    EXPECT_EQ(one.launches[i].count, two.launches[i].count);
  }
  ASSERT_EQ(one.verdicts.size(), two.verdicts.size());
  int copies = 0;
  for (size_t i = 0; i < one.verdicts.size(); ++i) {
    EXPECT_EQ(one.verdicts[i].detail, two.verdicts[i].detail);
    copies += one.verdicts[i].count;
  }
  EXPECT_EQ(copies, 5 + 2 + 1 + 1) << "every copy gets a verdict";
}

TEST_F(PolicyTest, RefusesASnapshotItCannotRead) {
  s_.version = kSnapshotVersion + 1;
  EXPECT_EQ(Decide(s_).status().code(), StatusCode::kInvalidArgument);
  s_.version = kSnapshotVersion;
  Node n = Cloud("x", cpu4_, NodeState::kRunning);
  n.type = "nope";
  s_.nodes.push_back(n);
  EXPECT_NE(Decide(s_).status().message().find("unknown type 'nope'"), std::string::npos);
}

}  // namespace
}  // namespace cumulus::autoscale
