// Work pinned to one node (hard node affinity) where an autoscaler may launch nodes, with real
// processes (the fixture: autoscaler_fixture.h): no launch for it, it waits for its node (also
// through a head restart), and it fails at once when its node is gone, also when it was run
// again to rebuild a result lost with that node.
#include "autoscaler_fixture.h"

namespace cumulus {
namespace {

// Work with hard affinity to a full on-prem node waits for that node: the autoscaler launches
// nothing for it (a new node could not run it) and says why; it runs there once room is free.
// Work pinned to a node that is not in the cluster fails at once, even where an autoscaler may
// launch nodes: none it launches is that node.
TEST_F(AutoscalerTest, WorkPinnedToAFullNodeLaunchesNothingAndRunsThere) {
  StartCluster(WriteClusterFile());
  ExpectChecks(Driver({"--actors=hog:2"})->ReadAll(60s), {"actors"});
  auto pinned = Driver({"--cpus=1", "--pin=" + onprem_id_, "--wait_s=60"});
  EXPECT_TRUE(StatusShows("pinned to a node", 20s)) << Status();
  EXPECT_NE(Status(true).find("\"pinned_to\":\"" + onprem_id_ + "\""), std::string::npos)
      << Status(true);
  EXPECT_TRUE(Live().empty()) << Status();
  EXPECT_TRUE(CloudNodes().empty()) << Status();

  std::string gone(32, 'e');  // no node has this id
  std::string out = Driver({"--cpus=1", "--pin=" + gone, "--wait_s=60"})->ReadAll(30s);
  EXPECT_NE(out.find("CHECK ran FAIL"), std::string::npos) << out;
  EXPECT_NE(out.find("can never run"), std::string::npos) << out;
  EXPECT_NE(out.find(gone), std::string::npos) << out;

  EXPECT_EQ(Cli({"kill", "hog", "--address", address_, "--token-file", token_file_}, &out), 0)
      << out;
  out = pinned->ReadAll(60s);
  ExpectChecks(out, {"ran"});
  EXPECT_NE(out.find("WHERE " + onprem_id_), std::string::npos) << out;
  EXPECT_TRUE(Live().empty()) << Status();
}

// Work pinned to another node that the head, restarted, has not heard from yet (RECOVERING)
// waits for it, rather than failing as pinned to a node that is gone: b is SIGSTOPped across
// the head's restart, so the on-prem node, where the work waits, sees it RECOVERING.
TEST_F(AutoscalerTest, WorkPinnedToANodeWaitsForItThroughAHeadRestart) {
  StartCluster(WriteClusterFile());
  std::string b_id;
  auto b = StartNode("b", {"--resources", "CPU=2", "--labels", "site=onprem", "--wait-for-nodes"},
                     &b_id);
  ASSERT_FALSE(b_id.empty());
  ExpectChecks(StartDriver("burst_driver", {"--actors=hog:2"}, CoreSocket(b_id))->ReadAll(60s),
               {"actors"});
  // The work must wait on the on-prem node, not on b: the head shows b full, then the on-prem
  // node heartbeats once more (its reply brings that view), so it keeps the work rather than
  // forwarding it to b on a view of b with room.
  int64_t reported = 0;
  ASSERT_TRUE(WaitUntil(
      [&] {
        ClusterView v = View();
        const NodeRecord* nb = Find(v, b_id);
        if (!nb || nb->available.Get("CPU") != 0) return false;
        reported = nb->last_heartbeat_micros;
        return true;
      },
      20s));
  ASSERT_TRUE(HeartbeatAfter(onprem_id_, reported));
  auto pinned = Driver({"--cpus=1", "--pin=" + b_id, "--wait_s=120"});
  ASSERT_TRUE(WaitUntil(
      [&] {
        ClusterView v = View();
        const NodeRecord* o = Find(v, onprem_id_);
        for (const PendingDemand& d : o ? o->pending_demand : DemandList{})
          if (d.pinned_to == b_id) return true;
        return false;
      },
      20s))
      << Status();
  ASSERT_TRUE(StatusShows("pinned to a node", 20s)) << Status();
  int port = ParseHostPort(address_)->port;
  b->Kill(SIGSTOP);
  head_->Kill(SIGKILL);
  ASSERT_TRUE(head_->Wait(10s));
  // A minute before a node it has not heard from is DEAD (10 s by default): b stays RECOVERING
  // however slowly the on-prem node reconnects on a loaded machine.
  head_ = StartHead({"--no-node", "--heartbeat-timeout-ms", "60000"}, port);
  // Three heartbeats of the on-prem node (the only one that can send any) while b is RECOVERING:
  // its view has b so, and it has placed the waiting work on that view.
  auto state_of = [](const ClusterView& v, const NodeRecord* n) {
    return n ? n->state : NodeState::kDead;
  };
  uint64_t first = 0;
  ASSERT_TRUE(WaitUntil(
      [&] {
        ClusterView v = View();
        if (state_of(v, Find(v, onprem_id_)) != NodeState::kAlive) return false;
        if (first == 0) first = v.heartbeats_received;
        return v.heartbeats_received >= first + 3;
      },
      20s));
  ClusterView v = View();
  ASSERT_EQ(state_of(v, Find(v, b_id)), NodeState::kRecovering) << Status();
  b->Kill(SIGCONT);
  ASSERT_TRUE(WaitUntil(
      [&] {
        ClusterView w = View();
        return state_of(w, Find(w, b_id)) == NodeState::kAlive;
      },
      20s));
  std::string out;
  EXPECT_EQ(Cli({"kill", "hog", "--address", address_, "--token-file", token_file_}, &out), 0)
      << out;
  out = pinned->ReadAll(60s);
  ExpectChecks(out, {"ran"});
  EXPECT_NE(out.find("WHERE " + b_id), std::string::npos) << out;
}

// A launched node holding the only copy of a task's result is SIGKILLed. The task had hard
// affinity to that node, so running it again cannot rebuild the copy: the owner's read fails at
// once, saying so, instead of waiting out its timeout for a node no launch can bring back.
TEST_F(AutoscalerTest, AResultLostWithTheOnlyNodeItsTaskMayRunOnFailsAtOnce) {
  StartCluster(WriteClusterFile("", false, /*idle_timeout_s=*/120));
  auto driver = Driver({"--cpus=3", "--blob_mb=1", "--wait_s=90"});
  auto where_line = driver->WaitForLine("WHERE ", 60s);
  ASSERT_TRUE(where_line) << driver->Skipped() << Status();
  std::string where = where_line->substr(6, 32);
  ASSERT_TRUE(driver->WaitForLine("BLOB ready", 60s)) << driver->Skipped();
  ClusterView view = View();
  const NodeRecord* node = Find(view, where);
  ASSERT_TRUE(node) << Status();
  ASSERT_EQ(kill(node->pid, SIGKILL), 0);
  ASSERT_TRUE(WaitUntil([&] { return !DeathReason(where).empty(); }, 30s)) << Status();
  driver->CloseStdin();  // now it reads the value
  std::string out = driver->ReadAll(60s);
  EXPECT_NE(out.find("CHECK blob FAIL ObjectLost"), std::string::npos) << out;
  EXPECT_NE(out.find("again to rebuild it failed"), std::string::npos) << out;
  EXPECT_NE(out.find("can never run: node " + where + " is not alive"), std::string::npos) << out;
  EXPECT_EQ(out.find("timed out"), std::string::npos) << out;
}

}  // namespace
}  // namespace cumulus
