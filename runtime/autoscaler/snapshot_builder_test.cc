#include "runtime/autoscaler/snapshot_builder.h"

#include <capnp/message.h>
#include <gtest/gtest.h>

#include <set>

#include "runtime/head/node_codec.h"
#include "scheduler/autoscale/policy.h"

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
      {{cpu4, 1, "", "trial asha/t0007", "waiting for CPU=4", "00112233445566778899aabbccddeeff"},
       {cpu4, 3, "site=onprem"}}));
  std::string hex = view.nodes[0].id.Hex();
  std::map<std::string, int64_t> idle_since;
  BuiltSnapshot built = BuildSnapshot(ClusterConfig(), MonitorBooks(), view, &idle_since);
  ASSERT_EQ(built.snapshot.demand.size(), 2u);
  EXPECT_EQ(built.snapshot.demand[0].id, "trial asha/t0007 {CPU=4} pinned to 00112233");
  EXPECT_EQ(built.snapshot.demand[0].count, 1);
  EXPECT_EQ(built.snapshot.demand[1].id, "node " + hex.substr(0, 8) + " {CPU=4} on site=onprem");
  EXPECT_EQ(built.snapshot.demand[1].count, 3);
  EXPECT_EQ(built.snapshot.demand[0].pinned_to, "00112233445566778899aabbccddeeff");
  EXPECT_EQ(built.snapshot.demand[1].pinned_to, "");
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

// A launched node (type "cpu", instance "i-1") as the head records it.
NodeRecord LaunchedNode() {
  NodeRecord n;
  n.id = NodeId::FromRandom();
  n.total.Set("CPU", 2);
  n.available = n.total;
  n.state = NodeState::kAlive;
  n.labels = {{kNodeTypeLabel, "cpu"}, {kInstanceIdLabel, "i-1"}, {"site", "cloud"}};
  return n;
}

ClusterConfig OneType() {
  ClusterConfig config;
  NodeTypeConfig type;
  type.name = "cpu";
  type.provider = "local";
  type.resources.Set("CPU", 2);
  type.idle_timeout_s = 2;
  config.node_types = {type};
  return config;
}

// The autoscaler drained an idle node; the head marked it ("asked to drain"), but the node's
// last heartbeat (all resources free) predates the drain, or work just sent to it. That view is
// not the node saying it is done: the node is not terminated until it has left by itself. (It
// was: a SLURM node was scancelled while it ran a task.)
TEST(SnapshotBuilderTest, ADrainingNodeIsTerminatedOnlyOnceItHasLeft) {
  ClusterConfig config = OneType();
  MonitorBooks books;
  books.instances["i-1"] = {"i-1", "cpu", "local", 0, /*draining=*/true};
  MonitorView view;
  view.now = 10'000'000;
  view.nodes.push_back(LaunchedNode());
  NodeRecord& node = view.nodes[0];
  node.draining = true;
  std::map<std::string, int64_t> idle_since = {{node.id.Hex(), 0}};  // idle for 10 s
  for (const char* note : {"asked to drain", "", "handing 2 objects to node 3f2a9c01"}) {
    node.drain_note = note;
    BuiltSnapshot built = BuildSnapshot(config, books, view, &idle_since);
    ASSERT_EQ(built.snapshot.nodes.size(), 1u);
    EXPECT_EQ(built.snapshot.nodes[0].state, autoscale::NodeState::kDraining);
    EXPECT_FALSE(built.snapshot.nodes[0].drained) << note;
    auto decided = autoscale::Decide(built.snapshot);
    ASSERT_TRUE(decided.ok()) << decided.status();
    EXPECT_TRUE(decided->terminations.empty())
        << "note '" << note << "': " << decided->terminations[0].why;
  }
  // The node's drain is done: it left the cluster. Its instance is terminated, and it is not
  // taken for a launch that never registered (no failure is recorded for it).
  node.state = NodeState::kDead;
  node.left = true;
  node.death_reason = "stopped: drained";
  BuiltSnapshot built = BuildSnapshot(config, books, view, &idle_since);
  ASSERT_EQ(built.snapshot.nodes.size(), 1u);
  EXPECT_EQ(built.snapshot.nodes[0].state, autoscale::NodeState::kDraining);
  EXPECT_TRUE(built.snapshot.nodes[0].drained);
  EXPECT_TRUE(built.registered.count("i-1"));
  auto decided = autoscale::Decide(built.snapshot);
  ASSERT_TRUE(decided.ok()) << decided.status();
  ASSERT_EQ(decided->terminations.size(), 1u);
  EXPECT_EQ(built.instance_of.at(decided->terminations[0].node), "i-1");
  // A draining node that died instead (killed, or cut off: declared dead, not left) is gone
  // too: terminated as drained, not taken for a launch that timed out (which would back its
  // type off).
  node.left = false;
  node.death_reason = "no heartbeat for 10s";
  built = BuildSnapshot(config, books, view, &idle_since);
  ASSERT_EQ(built.snapshot.nodes.size(), 1u);
  EXPECT_TRUE(built.snapshot.nodes[0].drained);
  EXPECT_TRUE(built.registered.count("i-1"));
  decided = autoscale::Decide(built.snapshot);
  ASSERT_TRUE(decided.ok()) << decided.status();
  ASSERT_EQ(decided->terminations.size(), 1u);
  EXPECT_EQ(decided->terminations[0].why, "drained, and gone from the cluster");
  // Once the instance is off the books, its record is history: nothing more to terminate.
  books.instances.clear();
  EXPECT_TRUE(BuildSnapshot(config, books, view, &idle_since).snapshot.nodes.empty());
}

// A launched node that hosts only work that takes no resources (a zero-resource actor, Ray's
// default for actors) has all its resources free. It is busy all the same: drained, it would
// wait for the actor forever (a detached one: forever), paid for and taking no work.
TEST(SnapshotBuilderTest, ANodeHoldingZeroResourceWorkIsBusy) {
  ClusterConfig config = OneType();
  MonitorBooks books;
  books.instances["i-1"] = {"i-1", "cpu", "local", 0, false, /*registered=*/true};
  MonitorView view;
  view.now = 10'000'000;
  view.nodes.push_back(LaunchedNode());
  NodeRecord& node = view.nodes[0];
  node.work = 1;  // one worker hosting an actor; available == total
  std::string hex = node.id.Hex();
  std::map<std::string, int64_t> idle_since = {{hex, 0}};  // it looked idle since 0
  BuiltSnapshot built = BuildSnapshot(config, books, view, &idle_since);
  ASSERT_EQ(built.snapshot.nodes.size(), 1u);
  EXPECT_TRUE(built.snapshot.nodes[0].busy);
  EXPECT_EQ(built.snapshot.nodes[0].idle_since, -1);
  EXPECT_FALSE(idle_since.count(hex)) << "its idle time goes on counting from before";
  auto decided = autoscale::Decide(built.snapshot);
  ASSERT_TRUE(decided.ok()) << decided.status();
  EXPECT_TRUE(decided->drains.empty()) << decided->drains[0].why;
  // The actor ended: idle from now, drained once past its type's idle timeout (2 s).
  node.work = 0;
  built = BuildSnapshot(config, books, view, &idle_since);
  EXPECT_FALSE(built.snapshot.nodes[0].busy);
  EXPECT_EQ(built.snapshot.nodes[0].idle_since, view.now);
  view.now += 3'000'000;
  built = BuildSnapshot(config, books, view, &idle_since);
  decided = autoscale::Decide(built.snapshot);
  ASSERT_TRUE(decided.ok()) << decided.status();
  ASSERT_EQ(decided->drains.size(), 1u);
  EXPECT_EQ(decided->drains[0].node, hex);
}

// The work count travels in the node record (heartbeat and control store).
TEST(SnapshotBuilderTest, WorkSurvivesTheNodeRecord) {
  NodeRecord n = LaunchedNode();
  n.work = 3;
  capnp::MallocMessageBuilder message;
  auto out = message.initRoot<proto::NodeInfo>();
  EncodeNode(n, out);
  auto back = DecodeNode(out.asReader());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->work, 3u);
}

// A launched node registered, ran, then died without a drain (SIGKILL, a crash, cut off; its
// provider may still list the machine as running). It is not "launching": counted so, it
// covered the demand it no longer serves (no replacement) until the launch timeout, which then
// backed its type off as a failed launch. It is gone: terminated, no failure, and the demand
// launches a replacement.
TEST(SnapshotBuilderTest, ANodeThatDiedWithoutADrainIsGoneNotLaunching) {
  ClusterConfig config = OneType();
  MonitorBooks books;
  books.instances["i-1"] = {"i-1", "cpu", "local", 0, false, /*registered=*/true};
  ResourceSet cpu2;
  cpu2.Set("CPU", 2);
  MonitorView view;
  view.now = 20 * 60'000'000LL;  // 20 minutes after its launch: past any launch timeout
  view.dead_grace_micros = 5'000'000;
  view.nodes.push_back(NodeWithDemand({{cpu2, 1, ""}}));  // on-prem, full, work waiting
  view.nodes.push_back(LaunchedNode());
  NodeRecord& node = view.nodes[1];
  node.state = NodeState::kDead;
  node.death_reason = "its connection to the head closed and it did not reconnect";
  node.death_micros = view.now - 1'000'000;  // within the grace
  Instance running;
  running.id = "i-1";
  running.state = InstanceState::kRunning;  // the machine is up; its node daemon is not
  view.listed["local"] = {running};
  std::map<std::string, int64_t> idle_since;

  auto launching = [](const BuiltSnapshot& b) {
    int n = 0;
    for (auto& node : b.snapshot.nodes) n += node.state == autoscale::NodeState::kLaunching;
    return n;
  };
  // Dead a moment ago: it may rejoin (under a new id), so it is not terminated yet; but it is
  // no launch either, and the demand it served launches a replacement.
  BuiltSnapshot built = BuildSnapshot(config, books, view, &idle_since);
  EXPECT_EQ(launching(built), 0);
  EXPECT_TRUE(built.registered.count("i-1"));
  EXPECT_TRUE(built.gone.empty());
  auto decided = autoscale::Decide(built.snapshot);
  ASSERT_TRUE(decided.ok()) << decided.status();
  EXPECT_TRUE(decided->terminations.empty()) << decided->terminations[0].why;
  ASSERT_EQ(decided->launches.size(), 1u) << "the dead node still covers the demand";
  EXPECT_EQ(decided->launches[0].type, "cpu");

  // Past the grace: gone, its instance terminated (as a node that is done, not a launch that
  // timed out: the monitor counts no failure for an instance in `registered`).
  node.death_micros = view.now - 6'000'000;
  built = BuildSnapshot(config, books, view, &idle_since);
  EXPECT_EQ(launching(built), 0);
  EXPECT_TRUE(built.registered.count("i-1"));
  EXPECT_EQ(built.gone.at("i-1"), node.death_reason);
  decided = autoscale::Decide(built.snapshot);
  ASSERT_TRUE(decided.ok()) << decided.status();
  ASSERT_EQ(decided->terminations.size(), 1u);
  EXPECT_EQ(built.instance_of.at(decided->terminations[0].node), "i-1");
  EXPECT_EQ(decided->launches.size(), 1u);

  // Stopped on purpose without a drain (`cumulus stop` on it): gone the same way.
  node.left = true;
  node.death_reason = "stopped: cumulus stop or a signal";
  built = BuildSnapshot(config, books, view, &idle_since);
  EXPECT_EQ(built.gone.at("i-1"), node.death_reason);

  // A head restarted and waiting to hear from the node again (RECOVERING): not gone, not
  // launching either.
  node.left = false;
  NodeRecord recovering = LaunchedNode();
  recovering.state = NodeState::kRecovering;
  view.nodes.push_back(recovering);
  built = BuildSnapshot(config, books, view, &idle_since);
  EXPECT_EQ(launching(built), 0);
  EXPECT_TRUE(built.gone.empty());
  view.nodes.pop_back();

  // It rejoined under a new id (it was cut off, not dead): running, nothing terminated.
  view.nodes.push_back(LaunchedNode());
  built = BuildSnapshot(config, books, view, &idle_since);
  EXPECT_TRUE(built.gone.empty());
  decided = autoscale::Decide(built.snapshot);
  ASSERT_TRUE(decided.ok()) << decided.status();
  EXPECT_TRUE(decided->terminations.empty()) << decided->terminations[0].why;
  view.nodes.pop_back();

  // It had been cut off once before (an older DEAD record, long past the grace), rejoined under
  // a new id, and that node has just died: the grace holds for the instance, whichever of its
  // records is read first.
  NodeRecord rejoined = LaunchedNode();
  rejoined.state = NodeState::kDead;
  rejoined.death_reason = "its connection to the head closed and it did not reconnect";
  rejoined.death_micros = view.now - 1'000'000;  // within the grace
  for (bool newer_first : {false, true}) {
    if (newer_first) {
      view.nodes.insert(view.nodes.begin() + 1, rejoined);
    } else {
      view.nodes.push_back(rejoined);
    }
    built = BuildSnapshot(config, books, view, &idle_since);
    EXPECT_EQ(launching(built), 0);
    EXPECT_TRUE(built.gone.empty()) << "terminated within the grace of its newest record";
    decided = autoscale::Decide(built.snapshot);
    ASSERT_TRUE(decided.ok()) << decided.status();
    EXPECT_TRUE(decided->terminations.empty()) << decided->terminations[0].why;
    if (newer_first) {
      view.nodes.erase(view.nodes.begin() + 1);
    } else {
      view.nodes.pop_back();
    }
  }

  // An instance that never registered is still a launch (its dead record is another's).
  books.instances["i-1"].registered = false;
  built = BuildSnapshot(config, books, view, &idle_since);
  EXPECT_EQ(launching(built), 1);
  EXPECT_TRUE(built.gone.empty());
}

// A registered instance whose node is not alive now (dead for less than the grace, RECOVERING
// after a head restart, or missing from the view) is still a machine the provider bills: it
// counts against its type's max. A type at max 1 launches no second machine for the demand
// meanwhile; once the first is gone (past the grace) it is terminated.
TEST(SnapshotBuilderTest, ARegisteredNodeNotAliveNowStillCountsAgainstItsTypesMax) {
  ClusterConfig config = OneType();
  config.node_types[0].max_count = 1;
  MonitorBooks books;
  books.instances["i-1"] = {"i-1", "cpu", "local", 0, false, /*registered=*/true};
  ResourceSet cpu2;
  cpu2.Set("CPU", 2);
  MonitorView view;
  view.now = 20 * 60'000'000LL;
  view.dead_grace_micros = 5'000'000;
  view.nodes.push_back(NodeWithDemand({{cpu2, 1, ""}}));  // on-prem, full, work waiting
  std::map<std::string, int64_t> idle_since;
  auto launches = [&] {
    BuiltSnapshot built = BuildSnapshot(config, books, view, &idle_since);
    EXPECT_TRUE(built.registered.count("i-1"));
    auto decided = autoscale::Decide(built.snapshot);
    EXPECT_TRUE(decided.ok()) << decided.status();
    if (!decided.ok()) return size_t{99};
    EXPECT_TRUE(decided->terminations.empty());
    return decided->launches.size();
  };
  // Missing from the view.
  EXPECT_EQ(launches(), 0u) << "a second machine of a type at its max";
  // RECOVERING.
  view.nodes.push_back(LaunchedNode());
  view.nodes[1].state = NodeState::kRecovering;
  EXPECT_EQ(launches(), 0u) << "a second machine of a type at its max";
  // Dead a moment ago.
  view.nodes[1].state = NodeState::kDead;
  view.nodes[1].death_reason = "its connection to the head closed and it did not reconnect";
  view.nodes[1].death_micros = view.now - 1'000'000;
  EXPECT_EQ(launches(), 0u) << "a second machine of a type at its max";
  // Past the grace: gone, terminated.
  view.nodes[1].death_micros = view.now - 6'000'000;
  BuiltSnapshot built = BuildSnapshot(config, books, view, &idle_since);
  auto decided = autoscale::Decide(built.snapshot);
  ASSERT_TRUE(decided.ok()) << decided.status();
  EXPECT_EQ(decided->terminations.size(), 1u);
}

// ... but it keeps no min count: with min 1, a healthy node idle past its timeout is the one
// that keeps the min, so it is not drained on account of a machine that may never come back.
TEST(SnapshotBuilderTest, ARegisteredNodeNotAliveNowKeepsNoMinCount) {
  ClusterConfig config = OneType();  // idle timeout 2 s
  config.node_types[0].min_count = 1;
  MonitorBooks books;
  books.instances["i-1"] = {"i-1", "cpu", "local", 0, false, /*registered=*/true};
  books.instances["i-2"] = {"i-2", "cpu", "local", 0, false, /*registered=*/true};
  MonitorView view;
  view.now = 20 * 60'000'000LL;
  view.dead_grace_micros = 5'000'000;
  view.nodes.push_back(LaunchedNode());  // i-1: died a moment ago
  view.nodes[0].state = NodeState::kDead;
  view.nodes[0].death_reason = "its connection to the head closed and it did not reconnect";
  view.nodes[0].death_micros = view.now - 1'000'000;
  view.nodes.push_back(LaunchedNode());  // i-2: alive and idle
  view.nodes[1].labels[kInstanceIdLabel] = "i-2";
  std::map<std::string, int64_t> idle_since;
  (void)BuildSnapshot(config, books, view, &idle_since);  // i-2 idle from now
  view.now += 3'000'000;                                  // past its idle timeout
  view.nodes[0].death_micros = view.now - 1'000'000;      // still within the grace
  BuiltSnapshot built = BuildSnapshot(config, books, view, &idle_since);
  auto decided = autoscale::Decide(built.snapshot);
  ASSERT_TRUE(decided.ok()) << decided.status();
  EXPECT_TRUE(decided->drains.empty()) << "drained " << decided->drains[0].node;
  EXPECT_TRUE(decided->terminations.empty());
  ASSERT_EQ(decided->types.size(), 1u);
  EXPECT_EQ(decided->types[0].unreachable, 1);
  EXPECT_EQ(decided->types[0].running, 1);
}

// The purpose, the reason and the node it is pinned to travel in the node record (heartbeat and
// control store).
TEST(SnapshotBuilderTest, DemandPurposeAndReasonSurviveTheNodeRecord) {
  ResourceSet cpu2;
  cpu2.Set("CPU", 2);
  const std::string pin = "00112233445566778899aabbccddeeff";
  NodeRecord n = NodeWithDemand({{cpu2, 2, "", "trial gang/t0001", "waiting for room", pin}});
  capnp::MallocMessageBuilder message;
  auto out = message.initRoot<proto::NodeInfo>();
  EncodeNode(n, out);
  auto back = DecodeNode(out.asReader());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->pending_demand, n.pending_demand);
  ASSERT_EQ(back->pending_demand.size(), 1u);
  EXPECT_EQ(back->pending_demand[0].purpose, "trial gang/t0001");
  EXPECT_EQ(back->pending_demand[0].reason, "waiting for room");
  EXPECT_EQ(back->pending_demand[0].pinned_to, pin);
}

// A provider's List() that began before an instance was booked cannot say it ended: not before
// its Launch began, nor while that Launch had not answered yet (a slow launch call).
TEST(SnapshotBuilderTest, AListingMayEndOnlyInstancesBookedBeforeItBegan) {
  MonitorBooks books;
  books.instances["old"] = {"old", "cpu", "local", 1'000, false};
  books.instances["slow"] = {"slow", "cpu", "local", 1'000, false};
  books.instances["new"] = {"new", "cpu", "local", 6'000, false};
  std::vector<Instance> listed;
  for (const char* id : {"old", "slow", "new", "unknown"}) {
    Instance in;
    in.id = id;
    in.state = InstanceState::kTerminated;
    listed.push_back(in);
  }
  // The List began at 5,000: "slow" began launching at 1,000 but was booked at 7,000.
  auto trusted = TrustedListing(listed, 5'000, books, {{"old", 2'000}, {"slow", 7'000}});
  std::set<std::string> ids;
  for (auto& in : trusted) ids.insert(in.id);
  EXPECT_EQ(ids, (std::set<std::string>{"old", "unknown"}));
  // Without the booking times (a monitor restarted from its books), the launch times count.
  trusted = TrustedListing(listed, 5'000, books);
  ids.clear();
  for (auto& in : trusted) ids.insert(in.id);
  EXPECT_EQ(ids, (std::set<std::string>{"old", "slow", "unknown"}));
}

}  // namespace
}  // namespace cumulus
