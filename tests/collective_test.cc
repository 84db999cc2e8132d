// Collective groups of real processes (collective_probe) on loopback, meeting through a real
// head's key-value store: every operation and dtype checked against what each rank computes on
// its own, uneven sizes, a 256 MiB allreduce, ranks issuing different operations, and a rank
// SIGKILLed mid-group.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cluster_fixture.h"
#include "runtime/core/messages.h"

namespace cumulus {
namespace {

class CollectiveTest : public ClusterTest {
 protected:
  // Starts `world` members of group `name`; returns their outputs once all have ended.
  std::vector<std::string> RunGroup(const std::string& name, int world,
                                    std::vector<std::string> extra = {}) {
    std::vector<std::unique_ptr<Subprocess>> ranks;
    for (int r = 0; r < world; ++r) {
      std::vector<std::string> argv = {std::string(CUMULUS_BIN_DIR) + "/collective_probe",
                                       "--address=" + address_,
                                       "--token-file=" + token_file_,
                                       "--name=" + name,
                                       "--world=" + std::to_string(world),
                                       "--rank=" + std::to_string(r)};
      argv.insert(argv.end(), extra.begin(), extra.end());
      ranks.push_back(std::make_unique<Subprocess>(argv, /*merge_stderr=*/true));
    }
    std::vector<std::string> out;
    for (auto& p : ranks) out.push_back(p->ReadAll(180s));
    return out;
  }
};

TEST_F(CollectiveTest, EveryOperationAndDtypeMatchesTheReferenceWithTwoToFourRanks) {
  auto head = StartHead({"--no-node"});
  for (int world : {2, 3, 4}) {
    auto outs = RunGroup("ops" + std::to_string(world), world);
    for (int r = 0; r < world; ++r) {
      SCOPED_TRACE("world " + std::to_string(world) + " rank " + std::to_string(r));
      ExpectChecks(outs[r], {"joined",
                             "allreduce_sum_float32_1",
                             "allreduce_avg_int64_7919",
                             "allreduce_max_int32_7919",
                             "allreduce_min_float64_7919",
                             "broadcast_float32",
                             "broadcast_int64",
                             "allgather_int32",
                             "allgather_float64",
                             "barrier",
                             "broadcast_bad_root_refused",
                             "allreduce_avg_float16",
                             "allreduce_sum_bfloat16",
                             "allreduce_max_bfloat16",
                             "async_allreduce_and_broadcast",
                             "reducescatter_sum_float32_1",
                             "reducescatter_max_int64_7919",
                             "reducescatter_avg_float64_7919",
                             "send_recv_ring",
                             "send_to_self_refused",
                             "gradient_buckets",
                             "reducescatter_sum_float16",
                             "reducescatter_sum_bfloat16"});
    }
  }
}

TEST_F(CollectiveTest, AllReduceOf256MiB) {
  auto head = StartHead({"--no-node"});
  auto outs = RunGroup("big", 2, {"--big=1"});
  for (auto& out : outs) ExpectChecks(out, {"allreduce_sum_float32_67108864"});
}

// The survivors fail within the timeout (at once, usually: their connections break) and form
// generation 1 without the dead rank.
TEST_F(CollectiveTest, ARankKilledMidGroupFailsTheOthersAndTheGroupCanBeFormedAgain) {
  auto head = StartHead({"--no-node"});
  auto outs = RunGroup("die", 3, {"--case=die", "--timeout-ms=5000"});
  // Ranks 0 and 1 survive; rank 2 killed itself.
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ExpectChecks(outs[r],
                 {"joined", "barrier_before", "peer_death_fails_the_others",
                  "group_refuses_after_failure", "reformed", "allreduce_sum_float32_7919"});
  }
  EXPECT_EQ(outs[2].find("DONE"), std::string::npos) << outs[2];
}

TEST_F(CollectiveTest, AHungRankFailsTheOthersWithinTheTimeout) {
  auto head = StartHead({"--no-node"});
  std::vector<std::unique_ptr<Subprocess>> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{std::string(CUMULUS_BIN_DIR) + "/collective_probe",
                                 "--address=" + address_, "--token-file=" + token_file_,
                                 "--name=hang", "--world=3", "--rank=" + std::to_string(r),
                                 "--case=hang", "--timeout-ms=3000"},
        /*merge_stderr=*/true));
  }
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ExpectChecks(ranks[r]->ReadAll(120s),
                 {"joined", "barrier_before", "hung_peer_fails_the_others"});
  }
  ranks[2]->Kill(SIGKILL);  // it is stopped, and would stay so
}

TEST_F(CollectiveTest, TheWatchdogFailsAnOperationThatNeverEnds) {
  auto head = StartHead({"--no-node"});
  setenv("CUMULUS_COLLECTIVE_FAILPOINT", "stall", 1);
  Subprocess p({std::string(CUMULUS_BIN_DIR) + "/collective_probe", "--address=" + address_,
                "--token-file=" + token_file_, "--name=stuck", "--world=1", "--rank=0",
                "--case=watchdog", "--timeout-ms=1000"},
               /*merge_stderr=*/true);
  unsetenv("CUMULUS_COLLECTIVE_FAILPOINT");
  ExpectChecks(p.ReadAll(60s),
               {"joined", "watchdog_fails_a_stuck_operation", "group_refuses_after_watchdog"});
}

TEST_F(CollectiveTest, RanksIssuingDifferentOperationsFailSayingSo) {
  auto head = StartHead({"--no-node"});
  // Found by the watchdog's comparison after about a second, not at the 8 s timeout (the probes
  // then wait for their given-up operations to end before they exit). That time is the behaviour
  // checked: the probe's bound (5 s) stays below the timeout.
  auto outs = RunGroup("mismatch", 3, {"--case=mismatch", "--timeout-ms=8000"});
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ExpectChecks(outs[r], {"joined", "barrier_before", "mismatch_fails_clearly"});
  }
}

// One rank per visible GPU would need several GPUs; one GPU allows a one-rank NCCL group, whose
// device results are checked against the same operations on host buffers.
TEST_F(CollectiveTest, DeviceBuffersGoThroughNcclAndAgreeWithHostBuffers) {
  auto head = StartHead({"--no-node"});
  auto outs = RunGroup("gpu", 1, {"--case=gpu"});
  // Skipped only where GPU detection found no GPU (NcclComm::Available: "no GPU is visible to
  // this process: ...") or the build has no NCCL; any other SKIP, error or crash fails the test.
  if (outs[0].rfind("SKIP ", 0) == 0) {
    std::string why = outs[0].substr(5);
    ASSERT_TRUE(why.rfind("no GPU is visible to this process", 0) == 0 ||
                why.rfind("this build of Cumulus has no NCCL", 0) == 0)
        << "skipped for a reason that is not GPU detection: " << outs[0];
    GTEST_SKIP() << "no GPU path here: " << why;
  }
  ExpectChecks(outs[0],
               {"joined", "nccl_communicator", "gpu_allreduce_sum_float32_16777216",
                "gpu_allreduce_max_float64_7919", "gpu_allreduce_min_int64_7919",
                "gpu_allreduce_avg_float32_7919", "gpu_allgather_float32",
                "gpu_reducescatter_float32", "gpu_broadcast_float32", "gpu_mixed_buffers_refused"});
}

// Actors spread over two nodes form a group the driver declares; one member's process is
// SIGKILLed, the survivors' next allreduce fails, the actor restarts, and the driver declares
// the group again (a new generation), which works.
TEST_F(CollectiveTest, ADeclaredGroupOfActorsOnTwoNodesIsFormedAgainAfterAMemberDies) {
  head_store_memory_ = "256M";  // the driver program is shipped through the stores
  node_store_memory_ = "256M";
  auto head = StartHead({"--resources", "CPU=2"});
  std::string b;
  auto node_b = StartNode("b", {"--resources", "CPU=2"}, &b);
  ASSERT_FALSE(b.empty());
  setenv("CUMULUS_ADDRESS", address_.c_str(), 1);
  setenv("CUMULUS_TOKEN_FILE", token_file_.c_str(), 1);
  Subprocess driver({std::string(CUMULUS_BIN_DIR) + "/collective_driver"}, /*merge_stderr=*/true);
  unsetenv("CUMULUS_ADDRESS");
  unsetenv("CUMULUS_TOKEN_FILE");
  ExpectChecks(driver.ReadAll(180s),
               {"members_on_two_nodes", "duplicate_member_refused",
                "join_by_name_outside_an_actor_refused", "undeclared_group_times_out", "declared",
                "joined", "allreduce_across_nodes", "survivors_fail", "member_restarted",
                "declared_again", "rejoined", "allreduce_after_reforming"});
  // Once the driver is gone, its node deletes the job's rendezvous entries and declarations.
  auto head_client = Client();
  ASSERT_NE(head_client, nullptr);
  auto empty = [&](const char* ns) {
    auto page = head_client->KvList(ns, "", "", 10, /*keys_only=*/true);
    return page.ok() && page->entries.empty();
  };
  EXPECT_TRUE(
      WaitUntil([&] { return empty(kCollectiveNamespace) && empty(kCollectiveGroupsNamespace); },
                std::chrono::seconds(20)))
      << "the job's collective entries are still in the head's store";
}

// Gloo is a module loaded by the first group a process joins (runtime/collective/gloo_module.h):
// a member that cannot load it fails to join with the places it looked, and what to set.
TEST_F(CollectiveTest, AMemberWithoutItsGlooModuleSaysWhereItLooked) {
  auto head = StartHead({"--no-node"});
  Subprocess p({"/usr/bin/env", "CUMULUS_GLOO_MODULE=/nonexistent/libcumulus_gloo.so",
                std::string(CUMULUS_BIN_DIR) + "/collective_probe", "--address=" + address_,
                "--token-file=" + token_file_, "--name=no-gloo", "--world=1", "--rank=0",
                "--timeout-ms=2000"},
               /*merge_stderr=*/true);
  std::string out = p.ReadAll(60s);
  EXPECT_NE(out.find("CHECK joined FAIL"), std::string::npos) << out;
  EXPECT_NE(out.find("could not join group 'no-gloo'"), std::string::npos) << out;
  EXPECT_NE(out.find("cannot load Gloo's module libcumulus_gloo.so (tried "
                     "/nonexistent/libcumulus_gloo.so)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("set CUMULUS_GLOO_MODULE to its path"), std::string::npos) << out;
}

TEST_F(CollectiveTest, AMissingRankMakesJoiningTimeOut) {
  auto head = StartHead({"--no-node"});
  std::vector<std::string> argv = {std::string(CUMULUS_BIN_DIR) + "/collective_probe",
                                   "--address=" + address_,
                                   "--token-file=" + token_file_,
                                   "--name=alone",
                                   "--world=2",
                                   "--rank=0",
                                   "--timeout-ms=2000"};
  Subprocess p(argv, /*merge_stderr=*/true);
  std::string out = p.ReadAll(60s);
  EXPECT_NE(out.find("CHECK joined FAIL"), std::string::npos) << out;
  EXPECT_NE(out.find("could not join group 'alone'"), std::string::npos) << out;
}

}  // namespace
}  // namespace cumulus
