// Tasks and actors on a real cluster: a head and three nodes (`cumulus start` processes) on
// loopback with different resources and labels, and a driver program (core_driver.cc) that
// checks where its work lands and what comes back; and a task sent to a node that filled
// meanwhile (burst_driver.cc).
#include <gtest/gtest.h>

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cluster_fixture.h"

namespace cumulus {
namespace {

class CoreTest : public ClusterTest {
 protected:
  // Starts core_driver with `args` against this cluster.
  std::unique_ptr<Subprocess> Driver(std::vector<std::string> args) {
    setenv("CUMULUS_ADDRESS", address_.c_str(), 1);
    setenv("CUMULUS_TOKEN_FILE", token_file_.c_str(), 1);
    args.insert(args.begin(), std::string(CUMULUS_BIN_DIR) + "/core_driver");
    auto p = std::make_unique<Subprocess>(args, /*merge_stderr=*/true);
    unsetenv("CUMULUS_ADDRESS");
    unsetenv("CUMULUS_TOKEN_FILE");
    return p;
  }
  // A head and three nodes: a (GPUs, in the cloud), b (GPUs, on-prem), c (one CPU and a custom
  // resource, on-prem). Sets the --head/--a/--b/--c arguments of the driver.
  // The head's store holds the driver's program (tens of MB with its debug information): the
  // driver attaches to it. The nodes pull the program straight to disk.
  void StartCluster(const std::string& store_memory = "128M",
                    const std::string& node_store_memory = "") {
    head_store_memory_ = store_memory;
    node_store_memory_ = node_store_memory.empty() ? store_memory : node_store_memory;
    auto head = StartHead({"--resources", "CPU=2", "--labels", "site=onprem"});
    std::string head_id = View().nodes.empty() ? "" : View().nodes[0].id.Hex();
    nodes_.push_back(StartNode("a", {"--resources", "CPU=2,GPU=2", "--labels", "site=cloud"}, &a_));
    nodes_.push_back(
        StartNode("b", {"--resources", "CPU=2,GPU=2", "--labels", "site=onprem"}, &b_));
    nodes_.push_back(
        StartNode("c", {"--resources", "CPU=1,special=1", "--labels", "site=onprem"}, &c_));
    nodes_.push_back(std::move(head));
    ASSERT_FALSE(head_id.empty() || a_.empty() || b_.empty() || c_.empty());
    ids_ = {"--head=" + head_id, "--a=" + a_, "--b=" + b_, "--c=" + c_};
  }
  std::vector<std::string> Scenario(const std::string& name) {
    std::vector<std::string> args = ids_;
    args.insert(args.begin(), "--scenario=" + name);
    return args;
  }

  std::vector<std::unique_ptr<Subprocess>> nodes_;
  std::string a_, b_, c_;
  std::vector<std::string> ids_;
};

TEST_F(CoreTest, TasksAndActorsLandWhereResourcesAndLabelsAllow) {
  StartCluster();
  ExpectChecks(Driver(Scenario("placement"))->ReadAll(180s),
               {"gpu_tasks_on_gpu_nodes", "label_site_cloud", "label_not_cloud", "custom_resource",
                "gpu_and_label", "spread_uses_several_nodes", "node_affinity",
                "gpu_actors_disjoint_devices"});
}

// Nodes whose stores (16 MiB) are smaller than the driver's program run its tasks and actors: a
// node pulls a job's program straight into its file, not through its store's memory tier (which
// refused it before: "larger than the object store's whole memory tier"). The driver attaches to
// the head, whose store holds its program.
TEST_F(CoreTest, NodesWhoseStoreIsSmallerThanTheProgramRunItsWork) {
  StartCluster("128M", "16M");
  std::string head_socket = CoreSocket(HeadNodeId());
  ASSERT_FALSE(head_socket.empty());
  setenv("CUMULUS_NODE_SOCKET", head_socket.c_str(), 1);
  auto driver = Driver(Scenario("placement"));
  unsetenv("CUMULUS_NODE_SOCKET");
  ExpectChecks(driver->ReadAll(180s),
               {"gpu_tasks_on_gpu_nodes", "label_site_cloud", "custom_resource", "node_affinity"});
}

TEST_F(CoreTest, ImpossibleRequestsAndRemoteExceptionsFailWithTheReason) {
  StartCluster();
  ExpectChecks(Driver(Scenario("failures"))->ReadAll(120s),
               {"infeasible_fails_fast", "infeasible_label", "absurd_amounts_refused",
                "cancel_ends_the_task", "workers_start_with_stop_signals_unblocked",
                "workers_do_not_load_rocksdb_gloo_or_cuda", "remote_exception"});
}

TEST_F(CoreTest, ManyTasksChainsAndNestedTasksOnAFullNode) {
  StartCluster();
  ExpectChecks(Driver(Scenario("work"))->ReadAll(240s),
               {"ten_thousand_tasks", "chain_across_nodes", "nested_tasks_on_a_full_node"});
}

TEST_F(CoreTest, ALargeObjectIsReadOnAnotherNodeAndInTheDriver) {
  // The driver attaches to whichever node's socket it finds first, and it reads a 256 MiB object:
  // every store must hold one (memfd memory is only used when written).
  StartCluster("600M");
  ExpectChecks(Driver(Scenario("objects"))->ReadAll(180s),
               {"large_object_other_node", "large_object_driver", "large_argument_by_value"});
}

TEST_F(CoreTest, WorkThatFitsTheClusterButNotNowIsPendingDemand) {
  StartCluster();
  // An actor that fits the cluster but not now shows in `cumulus status`.
  auto pending_driver = Driver({"--scenario=pending", "--c=" + c_});
  Subprocess& pending = *pending_driver;
  ASSERT_TRUE(pending.WaitForLine("WAITING", 60s)) << pending.ReadAll(1s);
  std::string status;
  bool seen = WaitUntil(
      [&] {
        Cli({"status", "--json", "--address", address_, "--token-file", token_file_}, &status);
        return status.find(
                   "\"pending_demand\":[{\"resources\":\"special=1\",\"count\":1,"
                   "\"purpose\":\"\",\"pinned_to\":\"\",\"reason\":\"") != std::string::npos;
      },
      10s);
  EXPECT_TRUE(seen) << status;
  // The demand may move between nodes (forwarded) between two heartbeats: wait for it here too.
  std::string text;
  EXPECT_TRUE(WaitUntil(
      [&] {
        Cli({"status", "--address", address_, "--token-file", token_file_}, &text);
        return text.find("1 x {special=1}") != std::string::npos;
      },
      10s))
      << text;
  pending.CloseStdin();
  std::string rest = pending.ReadAll(60s);
  EXPECT_NE(rest.find("CHECK pending_runs_after_room ok"), std::string::npos) << rest;
  EXPECT_NE(rest.find("DONE failures=0"), std::string::npos) << rest;
}

TEST_F(CoreTest, PlacementGroupsReserveReleaseAndPlaceTheirWork) {
  StartCluster();
  ExpectChecks(
      Driver(Scenario("groups"))->ReadAll(180s),
      {"group_strict_spread_created", "group_strict_spread_distinct_nodes",
       "group_actors_on_their_bundles", "group_reservation_excludes_others",
       "group_task_larger_than_bundle", "group_bundle_index_out_of_range",
       "group_task_on_bundle_node", "group_removed", "group_removal_frees_resources",
       "group_removal_stops_actors", "group_removed_task_fails", "group_infeasible_fails_fast",
       "group_empty_bundle_rejected", "group_gpu_pack_created", "group_gpu_actors_disjoint",
       "group_timeout", "group_gpu_removed", "group_fits_after_removal"});
}

TEST_F(CoreTest, ActorsRestartAndTheirCallsAreRetried) {
  StartCluster();
  ExpectChecks(
      Driver(Scenario("restarts"))->ReadAll(180s),
      {"restart_actor_runs", "restart_crash_fails_the_call", "restart_new_process_fresh_state",
       "restart_limit_reached", "restart_call_retried_on_new_actor",
       "restart_call_without_retries_fails", "restart_not_after_kill"});
}

// A task forwarded on a view older than the work that filled the node it went to comes back to
// its sender and waits there (where a node that joins could take it), then runs once room is
// back. Real processes; heartbeats every 30 s keep the head's view of node b what b registered
// with for the whole test, as a view a heartbeat old is. Before, it waited on b (FORWARDED at
// the head's node) for as long as b stayed full.
TEST_F(CoreTest, ATaskSentToANodeThatFilledMeanwhileWaitsAtItsSender) {
  head_store_memory_ = node_store_memory_ = "128M";  // each holds a driver's program
  auto head = StartHead({"--resources", "CPU=0", "--heartbeat-interval-ms", "30000",
                         "--heartbeat-timeout-ms", "100000"});
  std::string head_id = HeadNodeId(), b;
  auto node_b = StartNode("b", {"--resources", "CPU=2", "--labels", "pool=b"}, &b);
  ASSERT_FALSE(head_id.empty() || b.empty());
  // b's CPUs go to a detached actor started from b.
  auto hog = StartDriver("burst_driver", {"--actors=hog:2"}, CoreSocket(b));
  std::string out = hog->ReadAll(60s);
  ExpectChecks(out, {"actors"});
  EXPECT_NE(out.find("ACTOR hog " + b), std::string::npos) << out;

  // A CPU on pool=b, asked from the head's node (no CPUs): sent to b, which is full.
  auto task = StartDriver("burst_driver", {"--cpus=1", "--selector=pool=b", "--wait_s=120"},
                          CoreSocket(head_id));
  std::string rows;
  auto held_where = [&](const std::string& state, const std::string& node) {
    rows.clear();
    return Cli({"list", "tasks", "--filter", "state=" + state, "--filter", "node=" + node,
                "--address", address_, "--token-file", token_file_},
               &rows) == 0 &&
           rows.find("HoldThenWhere") != std::string::npos;
  };
  EXPECT_TRUE(WaitUntil([&] { return held_where("QUEUED", head_id); }, 30s))
      << "the task is not queued at its sender:\n"
      << rows;
  EXPECT_FALSE(held_where("QUEUED", b)) << "the task waits on the full node:\n" << rows;
  EXPECT_FALSE(held_where("FORWARDED", head_id)) << rows;

  // b's CPUs come back: the task runs there.
  std::string killed;
  EXPECT_EQ(Cli({"kill", "hog", "--address", address_, "--token-file", token_file_}, &killed), 0)
      << killed;
  out = task->ReadAll(150s);
  ExpectChecks(out, {"ran"});
  EXPECT_NE(out.find("WHERE " + b), std::string::npos) << out;
}

}  // namespace
}  // namespace cumulus
