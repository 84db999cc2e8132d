// The autoscaler with real processes (the fixture, autoscaler_fixture.h: a head, one small
// on-prem node, the monitor, the local provider launching "cloud" nodes as processes here):
// launches, scale-down, budgets, backoff, restarts, drains, tuning trials. Work pinned to one node
// is in autoscaler_pinned_test.cc. Short idle timeouts and boot delays keep each test to seconds
// (the one with 30 s heartbeats, to a minute).
#include "autoscaler_fixture.h"

namespace cumulus {
namespace {

// Work larger than the on-prem node launches a cloud node, runs there, and the node, busy for
// longer than its idle timeout, is not terminated under it; once idle it is drained and goes.
TEST_F(AutoscalerTest, LaunchesOnDemandKeepsBusyNodeAndRemovesItWhenIdle) {
  StartCluster(WriteClusterFile());
  auto driver = Driver({"--cpus=3", "--hold_ms=5000"});
  ASSERT_TRUE(WaitUntil([&] { return CloudNodes().size() == 1; }, 30s))
      << "no cloud node came up:\n"
      << Status();
  EXPECT_TRUE(StatusShows("cpu-small", 5s));
  std::string out = driver->ReadAll(60s);
  ExpectChecks(out, {"ran"});
  std::string where = out.substr(out.find("WHERE ") + 6, 32);
  EXPECT_NE(where, onprem_id_) << "the work ran on-prem, which cannot hold it";
  EXPECT_EQ(Live().size(), 1u) << "one launch, not one per round";
  // Idle (timeout 2 s): drained, then terminated.
  EXPECT_TRUE(WaitUntil([&] { return CloudNodes().empty() && Live().empty(); }, 30s)) << Status();
  // It left by itself once its drain was done; the monitor did not stop it while it drained
  // (its instance is terminated only after that).
  EXPECT_EQ(DeathReason(where), "stopped: drained");
}

// A launched node that hosts only an actor asking for no resources (all its resources free) is
// busy: not drained past its idle timeout while the actor lives (it was: its drain then waited
// for the detached actor forever, the node paid for and taking no work). Once the actor is
// killed, the node is idle, drained, leaves and is terminated.
TEST_F(AutoscalerTest, NodeHostingOnlyAZeroResourceActorIsNotDrained) {
  const double idle_timeout_s = 3;
  StartCluster(WriteClusterFile("", false, idle_timeout_s));
  auto driver = Driver({"--cpus=3", "--actor=keeper"});
  std::string out = driver->ReadAll(60s);
  ExpectChecks(out, {"ran", "actor"});
  ASSERT_NE(out.find("ACTOR "), std::string::npos) << out;
  std::string hex = out.substr(out.find("ACTOR ") + 6, 32);
  auto record = [&] {
    ClusterView v = View();
    const NodeRecord* n = Find(v, hex);
    return n ? std::optional<NodeRecord>(*n) : std::nullopt;
  };
  auto node = record();
  ASSERT_TRUE(node && node->labels.count("cumulus.node_type")) << "not a launched node: " << hex;
  // The node reports the actor as work (its heartbeat), while its resources are all free. (A
  // heartbeat may still show the 3-CPU task's lease, let go just after: wait for both.)
  ASSERT_TRUE(WaitUntil(
      [&] {
        node = record();
        return node && node->work > 0;
      },
      10s))
      << "the node never reported the actor";
  EXPECT_TRUE(WaitUntil(
      [&] {
        node = record();
        return node && node->work > 0 && node->available == node->total;
      },
      10s))
      << "the actor holds resources: a weaker test";
  // The monitor's rounds go on (each publishes its time) well past the idle timeout: the node
  // stays alive and is never marked draining.
  auto published = [&] {
    std::string json = Status(true);
    size_t at = json.find("\"updated_micros\":");
    return at == std::string::npos ? int64_t{0} : std::stoll(json.substr(at + 17));
  };
  int64_t until = SystemClock::Get().WallMicros() + static_cast<int64_t>(idle_timeout_s * 2e6);
  bool drained = false;
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto n = record();
        drained = !n || n->state != NodeState::kAlive || n->draining;
        return drained || published() >= until;
      },
      30s))
      << Status();
  ASSERT_FALSE(drained) << "a node hosting an actor was drained:\n" << Status();
  // The actor killed: the node is idle, drained, leaves by itself and its instance goes.
  EXPECT_EQ(Cli({"kill", "keeper", "--address", address_, "--token-file", token_file_}, &out), 0)
      << out;
  EXPECT_TRUE(WaitUntil([&] { return CloudNodes().empty() && Live().empty(); }, 30s)) << Status();
  EXPECT_EQ(DeathReason(hex), "stopped: drained");
}

// Work only on-prem nodes may run launches nothing, and status says why.
TEST_F(AutoscalerTest, OnPremOnlyWorkLaunchesNothing) {
  StartCluster(WriteClusterFile());
  auto driver = Driver({"--cpus=3", "--selector=site=onprem", "--wait_s=30"});
  EXPECT_TRUE(StatusShows("labels exclude the cloud", 20s)) << Status();
  EXPECT_TRUE(Live().empty());
  EXPECT_TRUE(CloudNodes().empty());
}

// A total budget for one launch: the first actor's node is launched, the second actor's is not,
// with the budget shown as the reason. (A budget below one launch of every type is an error in
// the file: ClusterConfig.ATotalBudgetBelowOneLaunchOfATypeIsAnError.)
TEST_F(AutoscalerTest, BudgetStopsLaunches) {
  // cpu-small: $1/h for its 1 s boot and 2 s idle timeout is $0.00083 a launch; two are $0.00167.
  StartCluster(WriteClusterFile("budget:\n  total: 0.001\n"));
  auto driver = Driver({"--actors=first:3,second:3", "--wait_s=60"});
  EXPECT_TRUE(StatusShows("budget total", 30s)) << Status();
  EXPECT_EQ(CloudNodes().size(), 1u) << Status();
  EXPECT_EQ(Live().size(), 1u) << Status();
}

// Demand that waits, with its reason, is news once: the heartbeats that repeat it do not move
// the view's version (which every node's heartbeat would then fetch as a delta). The reason is
// part of the demand's equality, so words that changed from one heartbeat to the next would.
TEST_F(AutoscalerTest, WaitingDemandDoesNotMoveTheViewVersion) {
  StartCluster(WriteClusterFile());
  auto driver = Driver({"--cpus=3", "--selector=site=onprem", "--wait_s=30"});
  ASSERT_TRUE(StatusShows("labels exclude the cloud", 20s)) << Status();
  // What the driver's arrival set in motion settles first (in CI once, under load, one change of
  // the node's record came after the reason was shown): the version unchanged over two
  // heartbeats. Words that changed at every heartbeat would never settle, and fail here.
  ClusterView before = View();
  ASSERT_TRUE(WaitUntil(
      [&] {
        ClusterView now = View();
        if (now.view_version != before.view_version) before = now;
        return now.heartbeats_received >= before.heartbeats_received + 2;
      },
      20s))
      << "the view's version moved at every heartbeat:\n"
      << Status(true);
  ASSERT_FALSE(before.nodes.empty());
  std::string before_status = Status(true);  // (what moved, if the version does)
  // Four more heartbeats of the on-prem node (one a second), the demand waiting all along.
  ASSERT_TRUE(
      WaitUntil([&] { return View().heartbeats_received >= before.heartbeats_received + 4; }, 20s));
  ClusterView after = View();
  EXPECT_EQ(after.view_version, before.view_version) << "before:\n"
                                                     << before_status << "\nafter:\n"
                                                     << Status(true);
  EXPECT_NE(Status().find("CPU=3"), std::string::npos) << "the demand stopped waiting?";
}

// The cheapest type fails to launch: it is backed off (shown) and the next type runs the work.
TEST_F(AutoscalerTest, FailingTypeBacksOffAndTheNextIsUsed) {
  StartCluster(WriteClusterFile("", /*flaky_type=*/true));
  auto driver = Driver({"--cpus=3"});
  std::string out = driver->ReadAll(60s);
  ExpectChecks(out, {"ran"});
  std::string json = Status(true);
  EXPECT_NE(json.find("\"type\":\"cpu-flaky\""), std::string::npos) << json;
  EXPECT_EQ(json.find("\"type\":\"cpu-flaky\",\"running\":0,\"launching\":0,\"idle\":0,"
                      "\"draining\":0,\"failed_launches\":0"),
            std::string::npos)
      << "cpu-flaky shows no failed launch: " << json;
  bool on_small = false;
  for (auto& n : View().nodes) {
    if (out.find(n.id.Hex()) != std::string::npos)
      on_small = n.labels["cumulus.node_type"] == "cpu-small";
  }
  EXPECT_TRUE(on_small) << out;
}

// A monitor killed and started again finds its nodes (books in the head, provider's list): no
// duplicate launch for the same demand.
TEST_F(AutoscalerTest, RestartedMonitorLaunchesNoDuplicates) {
  StartCluster(WriteClusterFile("", false, /*idle_timeout_s=*/60));
  auto driver = Driver({"--cpus=3", "--hold_ms=8000"});
  ASSERT_TRUE(WaitUntil([&] { return CloudNodes().size() == 1; }, 30s)) << Status();
  // A second monitor while this one runs is refused: both would launch for the same work.
  std::string out;
  EXPECT_EQ(Cli({"up", dir_.path() + "/cluster.yaml", "--address", address_, "--token-file",
                 token_file_, "--block"},
                &out),
            1)
      << out;
  EXPECT_NE(out.find("an autoscaler already runs on this cluster"), std::string::npos) << out;
  monitor_->Kill(SIGKILL);
  monitor_->Wait(10s);
  // Once it is dead (killed: it could not say so), the next one takes over.
  StartMonitor(dir_.path() + "/cluster.yaml");
  // Several rounds (200 ms each) while the work still runs.
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Live().size(), 1u);
    usleep(200'000);
  }
  ExpectChecks(driver->ReadAll(60s), {"ran"});
  EXPECT_EQ(Live().size(), 1u);
}

// The head killed and restarted under the monitor: the monitor connects again, its books come
// back from the head's store, and the node it launched is not launched twice.
TEST_F(AutoscalerTest, RestartedHeadLaunchesNoDuplicates) {
  StartCluster(WriteClusterFile("", false, /*idle_timeout_s=*/60));
  auto driver = Driver({"--cpus=3", "--hold_ms=12000", "--wait_s=90"});
  ASSERT_TRUE(WaitUntil([&] { return CloudNodes().size() == 1; }, 30s)) << Status();
  int port = ParseHostPort(address_)->port;
  head_->Kill(SIGKILL);
  ASSERT_TRUE(head_->Wait(10s));
  head_ = StartHead({"--no-node"}, port);
  ASSERT_TRUE(WaitUntil([&] { return CloudNodes().size() == 1; }, 30s)) << Status();
  // The monitor publishes again (it reconnected), and launches nothing more.
  ASSERT_TRUE(StatusShows("Autoscaler (cluster test)", 20s)) << Status();
  for (int i = 0; i < 15; ++i) {
    EXPECT_EQ(Live().size(), 1u);
    usleep(200'000);
  }
  ExpectChecks(driver->ReadAll(90s), {"ran"});
  EXPECT_EQ(Live().size(), 1u);
}

// A node that starts while its head is down (a launch that boots across a head restart) waits
// for the head, up to --join-timeout (launched nodes get 60 s), instead of failing the launch.
TEST_F(AutoscalerTest, ANodeStartedWhileItsHeadRestartsJoinsWhenItIsBack) {
  head_ = StartHead({"--no-node"});
  int port = ParseHostPort(address_)->port;
  head_->Kill(SIGKILL);
  ASSERT_TRUE(head_->Wait(10s));
  Subprocess node(
      {kCumulus, "start", "--address", address_, "--token-file", token_file_, "--block",
       "--data-dir", dir_.path() + "/late", "--resources", "CPU=1,GPU=0", "--join-timeout", "60"},
      /*merge_stderr=*/true);
  auto waits = node.WaitForLine("W ", 20s);
  ASSERT_TRUE(waits.has_value()) << "it did not say it waits: " << node.Skipped();
  EXPECT_NE(waits->find("cannot reach the head at " + address_ + " yet"), std::string::npos)
      << *waits;
  head_ = StartHead({"--no-node"}, port);
  auto ready = node.WaitForLine("cumulus node ready", 60s);
  ASSERT_TRUE(ready.has_value()) << node.Skipped();
  std::string id = Field(*ready, "node_id");
  ASSERT_TRUE(WaitUntil([&] { return Find(View(), id) != nullptr; }, 20s)) << Status();
  // Without --join-timeout (one try), a head that is down fails the start at once.
  head_->Kill(SIGKILL);
  ASSERT_TRUE(head_->Wait(10s));
  std::string out;
  EXPECT_EQ(Cli({"start", "--address", address_, "--token-file", token_file_, "--data-dir",
                 dir_.path() + "/once", "--resources", "CPU=1,GPU=0"},
                &out),
            1)
      << out;
  EXPECT_NE(out.find("cannot join the cluster"), std::string::npos) << out;
}

// A launched node killed with SIGKILL under work: the work is retried, a replacement launched.
TEST_F(AutoscalerTest, KilledNodeIsReplaced) {
  StartCluster(WriteClusterFile("", false, /*idle_timeout_s=*/60));
  auto driver = Driver({"--cpus=3", "--hold_ms=4000", "--wait_s=90"});
  ASSERT_TRUE(WaitUntil([&] { return CloudNodes().size() == 1; }, 30s)) << Status();
  auto first = CloudNodes()[0];
  ASSERT_TRUE(WaitUntil([&] { return !(CloudNodes()[0].available == first.total); }, 20s))
      << "the work never started on the cloud node" << Status() << monitor_->ReadAll(1s);
  ASSERT_EQ(kill(first.pid, SIGKILL), 0);
  std::string out = driver->ReadAll(90s);
  ExpectChecks(out, {"ran"});
  EXPECT_EQ(out.find(first.id.Hex()), std::string::npos) << "it ran on the killed node?\n" << out;
  // A node that died is not a failed launch: its type is not backed off.
  ExpectNoFailedLaunch();
}

// The same with the monitor restarted after the kill, once the head shows the node dead: the
// monitor's books say the instance registered, so its end (the provider lists it failed) is no
// failed launch, and while the provider has not said so it is not "launching" (covering the
// retried work). It was both: the type was backed off and the work waited for no node.
TEST_F(AutoscalerTest, KilledNodeIsNoFailedLaunchForARestartedMonitor) {
  StartCluster(WriteClusterFile("", false, /*idle_timeout_s=*/60));
  auto driver = Driver({"--cpus=3", "--hold_ms=3000", "--wait_s=40"});
  ASSERT_TRUE(WaitUntil([&] { return CloudNodes().size() == 1; }, 30s)) << Status();
  auto first = CloudNodes()[0];
  ASSERT_TRUE(WaitUntil([&] { return !(CloudNodes()[0].available == first.total); }, 20s))
      << "the work never started on the cloud node" << Status();
  // The monitor booked it running (its books, saved before the status it publishes).
  ASSERT_TRUE(StatusShows("\"type\":\"cpu-small\",\"running\":1", 10s, true)) << Status(true);
  monitor_->Kill(SIGKILL);
  ASSERT_TRUE(monitor_->Wait(10s));
  ASSERT_EQ(kill(first.pid, SIGKILL), 0);
  ASSERT_TRUE(WaitUntil([&] { return !DeathReason(first.id.Hex()).empty(); }, 20s));
  StartMonitor(dir_.path() + "/cluster.yaml");
  std::string out = driver->ReadAll(60s);
  ExpectChecks(out, {"ran"});
  EXPECT_EQ(out.find(first.id.Hex()), std::string::npos) << "it ran on the killed node?\n" << out;
  ExpectNoFailedLaunch();
}

// Work packs onto launched nodes: actor pa fills the on-prem node, pb (CPU=2) and pc (CPU=3) each
// launch a node; a 1-CPU task then runs on pc's node, the fuller (the least loaded, pb's, is what
// placement chose before), so once pb ends its node is idle, drained and terminated while pc's
// keeps running. (On-prem first, PACK groups and ties:
// PlacementTest.RentedNodesComeLastAndArePacked.)
TEST_F(AutoscalerTest, WorkPacksOntoTheFullerLaunchedNodeSoTheOtherGoes) {
  StartCluster(WriteClusterFile());
  std::string out = Driver({"--actors=pa:2,pb:2,pc:3"})->ReadAll(90s);
  ExpectChecks(out, {"actors"});
  if (out.find("CHECK actors ok") == std::string::npos) FAIL() << Status();
  auto node_of = [&](const std::string& name) {
    size_t at = out.find("ACTOR " + name + " ");
    return at == std::string::npos ? std::string() : out.substr(at + name.size() + 7, 32);
  };
  std::string a = node_of("pa"), b = node_of("pb"), c = node_of("pc");
  ASSERT_EQ(a, onprem_id_) << out;
  ASSERT_TRUE(b != c && b != a && c != a) << out;
  // The on-prem node places the task on its view of the others, a heartbeat behind the head's:
  // wait until the head has the reports of pb and pc running, then for an on-prem heartbeat
  // after them (its reply brings them to the on-prem node).
  int64_t reported = 0;
  auto cpus_free = [](const NodeRecord* n) { return n ? n->available.Get("CPU") : -1.0; };
  ASSERT_TRUE(WaitUntil(
      [&] {
        ClusterView v = View();
        const NodeRecord *nb = Find(v, b), *nc = Find(v, c);
        if (cpus_free(nb) != 2 || cpus_free(nc) != 1) return false;
        reported = std::max(nb->last_heartbeat_micros, nc->last_heartbeat_micros);
        return true;
      },
      20s))
      << Status();
  ASSERT_TRUE(HeartbeatAfter(onprem_id_, reported));
  out = Driver({"--cpus=1"})->ReadAll(60s);
  ExpectChecks(out, {"ran"});
  ASSERT_NE(out.find("WHERE "), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.find("WHERE ") + 6, 32), c) << "not the fuller launched node";
  EXPECT_EQ(Cli({"kill", "pb", "--address", address_, "--token-file", token_file_}, &out), 0)
      << out;
  EXPECT_TRUE(WaitUntil([&] { return DeathReason(b) == "stopped: drained"; }, 30s)) << Status();
  auto cloud = CloudNodes();
  ASSERT_EQ(cloud.size(), 1u) << Status();
  EXPECT_EQ(cloud[0].id.Hex(), c) << "pc's node, still busy, is the one left";
  for (const char* name : {"pa", "pc"}) {
    EXPECT_EQ(Cli({"kill", name, "--address", address_, "--token-file", token_file_}, &out), 0)
        << out;
  }
}

// A task sent to a node that filled meanwhile goes back to its sender, waits there as pending
// demand, and runs on the one node the autoscaler launches for it. The sender is the head's node
// (no CPUs) with heartbeats every 30 s, so its view of b stays what b registered with (2 CPUs
// free) after a detached actor takes them; that view sends the task to b, which returns it.
// Before returns, the task waited on b, where no launched node could take it: the autoscaler
// launched for it, saw the node idle, removed it, and launched again.
TEST_F(AutoscalerTest, ATaskReturnedByAFullNodeRunsOnTheNodeLaunchedForIt) {
  head_store_memory_ = node_store_memory_;
  head_ = StartHead({"--resources", "CPU=0", "--heartbeat-interval-ms", "30000",
                     "--heartbeat-timeout-ms", "100000"});
  std::string head_id = HeadNodeId();
  onprem_ = StartNode("b", {"--resources", "CPU=2", "--labels", "site=onprem,pool=b"}, &onprem_id_);
  ASSERT_FALSE(head_id.empty() || onprem_id_.empty());
  StartMonitor(WriteClusterFile("", false, /*idle_timeout_s=*/120, "site=cloud,pool=b"));
  auto hog = StartDriver("burst_driver", {"--actors=hog:2"}, CoreSocket(onprem_id_));
  ExpectChecks(hog->ReadAll(60s), {"actors"});

  auto task = StartDriver("burst_driver", {"--cpus=1", "--selector=pool=b", "--wait_s=150"},
                          CoreSocket(head_id));
  std::string out = task->ReadAll(160s);
  ExpectChecks(out, {"ran"});
  ASSERT_NE(out.find("WHERE "), std::string::npos) << out;
  std::string where = out.substr(out.find("WHERE ") + 6, 32);
  std::vector<NodeRecord> cloud = CloudNodes();
  ASSERT_EQ(cloud.size(), 1u) << Status();
  EXPECT_EQ(where, cloud[0].id.Hex()) << "it did not run on the launched node:\n" << out;
  EXPECT_EQ(Live().size(), 1u) << "one launch for one task\n" << Status();
  ExpectNoFailedLaunch();
}

// An idle launched node that holds the only copy of a live object is drained, not just removed:
// its drain hands the copy to the on-prem node before it leaves, and the object's owner reads
// it after the node and its instance are gone.
TEST_F(AutoscalerTest, AnIdleNodeHandsTheOnlyCopyOfAnObjectOnBeforeItGoes) {
  StartCluster(WriteClusterFile());  // idle timeout 2 s
  auto driver = Driver({"--cpus=3", "--blob_mb=8", "--wait_s=90"});
  auto where_line = driver->WaitForLine("WHERE ", 60s);
  ASSERT_TRUE(where_line) << driver->Skipped() << Status();
  std::string where = where_line->substr(6, 32);
  ASSERT_TRUE(driver->WaitForLine("BLOB ready", 60s)) << driver->Skipped();
  EXPECT_TRUE(WaitUntil([&] { return CloudNodes().empty() && Live().empty(); }, 60s)) << Status();
  EXPECT_EQ(DeathReason(where), "stopped: drained");
  driver->CloseStdin();  // now it reads the value
  std::string out = driver->ReadAll(120s);
  ExpectChecks(out, {"blob"});
}

// `cumulus drain` on a busy launched node: the work finishes there, then the node goes, long
// before its idle timeout. An on-prem node drains and leaves too.
TEST_F(AutoscalerTest, DrainedNodeFinishesItsWorkThenLeaves) {
  StartCluster(WriteClusterFile("", false, /*idle_timeout_s=*/600));
  auto driver = Driver({"--cpus=3", "--hold_ms=3000"});
  ASSERT_TRUE(WaitUntil([&] { return CloudNodes().size() == 1; }, 30s)) << Status();
  std::string hex = CloudNodes()[0].id.Hex(), out;
  ASSERT_TRUE(
      WaitUntil([&] { return !(CloudNodes()[0].available == CloudNodes()[0].total); }, 20s));
  EXPECT_EQ(
      Cli({"drain", hex.substr(0, 8), "--address", address_, "--token-file", token_file_}, &out), 0)
      << out;
  ExpectChecks(driver->ReadAll(60s), {"ran"});
  EXPECT_TRUE(WaitUntil([&] { return CloudNodes().empty() && Live().empty(); }, 20s)) << Status();
  EXPECT_EQ(DeathReason(hex), "stopped: drained") << "the monitor stopped a draining node";
  // An on-prem node drains too: it leaves by itself once idle (STOPPED, not failed).
  EXPECT_EQ(Cli({"drain", onprem_id_, "--wait", "--timeout", "30", "--address", address_,
                 "--token-file", token_file_},
                &out),
            0)
      << out;
  EXPECT_NE(out.find("left the cluster (stopped: drained)"), std::string::npos) << out;
}

// A tuning run by itself bursts: with max_concurrent_trials = 0 the tuner keeps trials beyond
// what the on-prem node holds (CPU=2, trials of CPU=1) waiting as pending demand named by trial
// (max_pending_trials, default 4); the autoscaler launches a cloud node for them, trials run
// there and finish, and the node goes once idle. (With max_pending_trials = 0 the tuner would
// start two trials at a time and nothing would be launched.)
TEST_F(AutoscalerTest, TuningRunsPendingTrialsLaunchACloudNode) {
  StartCluster(WriteClusterFile());
  auto driver = StartDriver("tune_driver",
                            {"--scenario=run", "--name=burst", "--samples=6", "--iters=20",
                             "--step-ms=200", "--scheduler=fifo"},
                            CoreSocket(onprem_id_));
  // The trials that wait are pending demand, by trial id (on the node, and in the verdicts).
  EXPECT_TRUE(StatusShows("trial burst/t", 20s)) << Status();
  ASSERT_TRUE(WaitUntil([&] { return CloudNodes().size() >= 1; }, 30s))
      << "no cloud node came up for the pending trials:\n"
      << Status();
  std::set<std::string> cloud;
  for (auto& n : CloudNodes()) cloud.insert(n.id.Hex());
  std::string out = driver->ReadAll(60s);
  ASSERT_NE(out.find("RESULT trials=6 finished=6 "), std::string::npos) << out;
  int on_cloud = 0;
  for (size_t at = out.find("TRIAL t"); at != std::string::npos; at = out.find("TRIAL t", at + 1)) {
    std::string line = out.substr(at, out.find('\n', at) - at);
    for (auto& n : CloudNodes()) cloud.insert(n.id.Hex());
    on_cloud += cloud.count(Field(line, "node")) > 0;
  }
  EXPECT_GE(on_cloud, 1) << "no trial ran on the launched node:\n" << out;
  // Idle (timeout 2 s): drained, then terminated.
  EXPECT_TRUE(WaitUntil([&] { return CloudNodes().empty() && Live().empty(); }, 30s)) << Status();
}

// Trials no node has room for and no node type can hold (CPU=8: on-prem CPU=2, cpu-small CPU=4)
// are refused at once with the reason, although the nodes let such work wait for the
// autoscaler (--wait-for-nodes); nothing is launched for them.
TEST_F(AutoscalerTest, TrialsNoNodeTypeCanHoldAreRefused) {
  StartCluster(WriteClusterFile());
  auto driver = StartDriver(
      "tune_driver",
      {"--scenario=run", "--name=huge", "--samples=2", "--iters=3", "--cpus=8", "--scheduler=fifo"},
      CoreSocket(onprem_id_));
  std::string out = driver->ReadAll(30s);
  ASSERT_NE(out.find("RESULT trials=2 finished=0 stopped=0 failed=2 "), std::string::npos)
      << out << Status();
  EXPECT_NE(out.find("reason=its resources can never be had on this cluster: no node has them "
                     "and the autoscaler can launch none that has (no cloud type can hold"),
            std::string::npos)
      << out;
  EXPECT_TRUE(Live().empty());
}

TEST_F(AutoscalerTest, BadArgumentsAreOneLineAndExit2) {
  std::string out;
  EXPECT_EQ(Cli({"up"}, &out), 2) << out;
  EXPECT_EQ(Cli({"up", dir_.path() + "/missing.yaml"}, &out), 2) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;
  EXPECT_EQ(Cli({"drain"}, &out), 2) << out;
  std::string path = dir_.path() + "/cloud.yaml";
  std::ofstream(path) << "providers:\n  aws:\n    kind: command\n    launch: [/bin/true]\n"
                         "    list: [/bin/true]\n    terminate: [/bin/true]\n"
                         "node_types:\n  - name: c\n    provider: aws\n    resources: CPU=4\n";
  EXPECT_EQ(Cli({"up", path}, &out), 2) << out;
  EXPECT_NE(out.find("--insecure"), std::string::npos) << out;
  EXPECT_NE(out.find("not encrypted"), std::string::npos) << out;
  // The head its nodes would reach is the one --address names, not the file's head.host.
  std::string slurm = dir_.path() + "/slurm.yaml";
  std::ofstream(slurm) << "head:\n  host: 127.0.0.1\nproviders:\n  hpc:\n    kind: slurm\n"
                          "node_types:\n  - name: c\n    provider: hpc\n    resources: CPU=4\n";
  EXPECT_EQ(Cli({"up", slurm, "--address", "192.0.2.2:6380", "--token-file", token_file_}, &out), 2)
      << out;
  EXPECT_NE(out.find("the head's address 192.0.2.2 is not loopback or a private network"),
            std::string::npos)
      << out;
  // A name is resolved: localhost is loopback (nothing listens at port 1: it fails to connect).
  EXPECT_EQ(Cli({"up", slurm, "--address", "localhost:1", "--token-file", token_file_}, &out), 1)
      << out;
  EXPECT_EQ(out.find("--insecure"), std::string::npos) << out;
  // A flag before the file is a flag; the file is still the one argument that is not.
  EXPECT_EQ(Cli({"up", "--insecure", path, "extra.yaml"}, &out), 2) << out;
  EXPECT_NE(out.find("up takes one cluster file, got 2: 'extra.yaml'"), std::string::npos) << out;
  // A directory, and a file with no node types, start nothing.
  EXPECT_EQ(Cli({"up", dir_.path()}, &out), 2) << out;
  EXPECT_NE(out.find("it is a directory"), std::string::npos) << out;
  std::string empty = dir_.path() + "/empty.yaml";
  std::ofstream(empty) << "# nothing yet\n";
  EXPECT_EQ(Cli({"up", empty}, &out), 2) << out;
  EXPECT_NE(out.find("no node_types: the autoscaler would have nothing to launch"),
            std::string::npos)
      << out;
  EXPECT_EQ(Cli({"down", "--force", "--timeout", "5"}, &out), 2) << out;
}

// `cumulus down` drains the launched nodes, so that what runs there finishes, then terminates
// them and stops the cluster. It parses the cluster file as `up` read it: the file is gone here.
TEST_F(AutoscalerTest, DownLetsWorkOnLaunchedNodesFinishThenTerminatesThem) {
  std::string file = WriteClusterFile("", false, /*idle_timeout_s=*/600);
  StartCluster(file);
  auto driver = Driver({"--cpus=3", "--hold_ms=4000"});
  ASSERT_TRUE(WaitUntil([&] { return CloudNodes().size() == 1; }, 30s)) << Status();
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto nodes = CloudNodes();
        return !nodes.empty() && !(nodes[0].available == nodes[0].total);
      },
      20s))
      << "the work did not start on the launched node: " << Status();
  std::filesystem::remove(file);
  Subprocess down({kCumulus, "down", "--address", address_, "--token-file", token_file_},
                  /*merge_stderr=*/true);
  std::string out = down.ReadAll(90s);
  auto st = down.Wait(10s);
  ASSERT_TRUE(st && WIFEXITED(*st)) << out;
  EXPECT_EQ(WEXITSTATUS(*st), 0) << out;
  EXPECT_NE(out.find("Draining 1 launched node(s)"), std::string::npos) << out;
  EXPECT_NE(out.find("Their work ended after"), std::string::npos) << out;
  EXPECT_NE(out.find("Terminated the autoscaler's nodes (1 in its books)"), std::string::npos)
      << out;
  ExpectChecks(driver->ReadAll(30s), {"ran"});
  EXPECT_TRUE(Live().empty());
}

// A provider that cannot list its instances does not stop `down` from terminating the others'
// instances; `down` names it and leaves the head up, so that it can be run again once the
// provider answers.
TEST_F(AutoscalerTest, DownWithAFailingProviderTerminatesTheRestAndKeepsTheHead) {
  std::string list = dir_.path() + "/list.sh";
  std::ofstream(list) << "#!/bin/sh\necho 'cloud API unreachable' >&2\nexit 3\n";
  std::filesystem::permissions(list, std::filesystem::perms::owner_all);
  std::string file = WriteClusterFile("", false, /*idle_timeout_s=*/600);
  {
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text.replace(text.find("providers:\n"), 11,
                 "providers:\n  broken:\n    kind: command\n    launch: [/bin/false]\n"
                 "    list: [" +
                     list + "]\n    terminate: [/bin/true]\n");
    std::ofstream(file) << text;
  }
  head_ = StartHead({"--no-node"});
  onprem_ =
      StartNode("onprem", {"--resources", "CPU=2", "--labels", "site=onprem", "--wait-for-nodes"},
                &onprem_id_);
  StartMonitor(file, {"--insecure"});
  auto driver = Driver({"--cpus=3", "--hold_ms=500"});
  ExpectChecks(driver->ReadAll(60s), {"ran"});
  ASSERT_EQ(Live().size(), 1u) << Status();

  std::string out;
  std::vector<std::string> down = {"down",   "--force",      "--address",
                                   address_, "--token-file", token_file_};
  EXPECT_EQ(Cli(down, &out), 1) << out;
  EXPECT_NE(out.find("provider 'broken' could not list its instances"), std::string::npos) << out;
  EXPECT_NE(out.find("cloud API unreachable"), std::string::npos) << out;
  EXPECT_NE(out.find("stay up"), std::string::npos) << out;
  EXPECT_TRUE(WaitUntil([&] { return Live().empty(); }, 20s)) << "the local instance still runs";
  EXPECT_TRUE(Client() != nullptr) << "the head was stopped";
  // The provider answers again: `down` finishes.
  std::ofstream(list) << "#!/bin/sh\nexit 0\n";
  EXPECT_EQ(Cli(down, &out), 0) << out;
}

}  // namespace
}  // namespace cumulus
