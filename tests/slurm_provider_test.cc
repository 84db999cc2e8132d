// The slurm provider against a real SLURM (Debian slurm-wlm 22.05) started by the test on this
// machine: a private munged, slurmctld and slurmd with their own ports, socket, spool and state
// in the test's directory (docs/cluster_file.md, "Testing the slurm provider"). A node launched as
// a SLURM job joins a real head (ClusterTest) and leaves it when the job is cancelled.
//
// Where SLURM cannot run here (not root, a program missing, a daemon that does not come up) the
// test is SKIPPED with the reason, never passed silently.
#include "runtime/autoscaler/slurm_provider.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "cluster_fixture.h"
#include "private_slurm.h"

namespace cumulus {
namespace {

using namespace slurm_test;

class SlurmProviderTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    slurm_ = std::make_unique<PrivateSlurm>(dir_.path());
    std::string why = slurm_->Start();
    if (!why.empty()) GTEST_SKIP() << "SLURM cannot run here: " << why;
    SlurmProviderOptions o;
    o.name = "hpc";
    o.cluster_name = "test";
    o.cumulus_binary = kCumulus;
    o.settings.output_dir = dir_.path() + "/jobs";
    o.settings.node_data_dir = dir_.path();
    o.settings.object_store_memory = "32M";
    o.settings.slurm_conf = slurm_->conf();
    o.settings.timeout_s = 30;
    auto p = SlurmProvider::Create(o);
    ASSERT_TRUE(p.ok()) << p.status();
    provider_ = std::move(*p);
  }

  void TearDown() override {
    if (provider_) {
      auto listed = provider_->List(In(30s));
      if (listed.ok()) {
        for (auto& in : *listed) (void)provider_->Terminate(in.id, In(30s));
      }
      // A node daemon a job started and SLURM did not stop: by the pid it printed.
      WaitUntil(
          [&] {
            auto l = provider_->List(In(30s));
            if (!l.ok()) return true;
            for (auto& in : *l) {
              if (in.state == InstanceState::kRunning) return false;
            }
            return true;
          },
          20s);
      for (auto& entry : std::filesystem::directory_iterator(dir_.path() + "/jobs")) {
        std::string pid = Field(ReadAll(entry.path().string()), "pid");
        if (!pid.empty() && std::atoi(pid.c_str()) > 0) kill(std::atoi(pid.c_str()), SIGKILL);
      }
    }
    provider_.reset();
    slurm_.reset();
  }

  NodeTypeConfig Type() {
    NodeTypeConfig t;
    t.name = "hpc-cpu";
    t.provider = "hpc";
    t.resources = *ResourceSet::Parse("CPU=1,custom_slurm=1");
    t.labels = {{"site", "cloud"}, {"region", "slurm"}};
    return t;
  }

  Instance Get(const std::string& id) {
    auto listed = provider_->List(In(30s));
    EXPECT_TRUE(listed.ok()) << listed.status();
    if (listed.ok()) {
      for (auto& in : *listed) {
        if (in.id == id) return in;
      }
    }
    Instance none;
    none.state = InstanceState::kFailed;
    none.detail = "not listed";
    return none;
  }

  std::unique_ptr<PrivateSlurm> slurm_;
  std::unique_ptr<SlurmProvider> provider_;
};

TEST_F(SlurmProviderTest, AJobsNodeJoinsTheHeadAndLeavesWhenCancelled) {
  auto head = StartHead({});
  auto ids = provider_->Launch(Type(), 1, {address_, token_file_}, In(30s));
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_EQ(ids->size(), 1u);
  std::string id = (*ids)[0];

  // The job runs and its node registers with the head (node id read from the job's output).
  Instance in;
  bool running = WaitUntil(
      [&] {
        in = Get(id);
        return in.state == InstanceState::kRunning && !in.node_id.empty();
      },
      60s);
  ASSERT_TRUE(running) << "state " << InstanceStateName(in.state) << " (" << in.detail
                       << "); job output: " << ReadAll(dir_.path() + "/jobs/" + id + ".out")
                       << "; slurm: " << slurm_->Logs();
  EXPECT_EQ(in.node_type, "hpc-cpu");
  ASSERT_TRUE(WaitForState(in.node_id, NodeState::kAlive, 10s));
  ClusterView v = View();
  const NodeRecord* node = Find(v, in.node_id);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->total.Get("custom_slurm"), 1);
  EXPECT_EQ(node->labels.at(kInstanceIdLabel), id);
  EXPECT_EQ(node->labels.at(kNodeTypeLabel), "hpc-cpu");
  EXPECT_EQ(node->labels.at("region"), "slurm");

  // scancel: SLURM's SIGTERM reaches the daemon, which leaves the cluster on purpose.
  ASSERT_TRUE(provider_->Terminate(id, In(30s)).ok());
  ASSERT_TRUE(WaitForState(in.node_id, NodeState::kDead, 30s)) << slurm_->Logs();
  v = View();
  node = Find(v, in.node_id);
  ASSERT_NE(node, nullptr);
  EXPECT_TRUE(node->left) << node->death_reason;
  bool terminated = WaitUntil([&] { return Get(id).state == InstanceState::kTerminated; }, 30s);
  EXPECT_TRUE(terminated) << Get(id).detail;
  // Terminating a finished job again is fine.
  EXPECT_TRUE(provider_->Terminate(id, In(30s)).ok());
}

TEST_F(SlurmProviderTest, SbatchErrorsComeBackAsOneLine) {
  auto head = StartHead({});
  SlurmProviderOptions o;
  o.name = "hpc";
  o.cluster_name = "test";
  o.cumulus_binary = kCumulus;
  o.settings.output_dir = dir_.path() + "/jobs";
  o.settings.slurm_conf = slurm_->conf();
  o.settings.partition = "no-such-partition";
  auto p = SlurmProvider::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  auto ids = (*p)->Launch(Type(), 1, {address_, token_file_}, In(30s));
  ASSERT_FALSE(ids.ok());
  std::string m = ids.status().message();
  EXPECT_NE(m.find("slurm provider hpc: sbatch"), std::string::npos) << m;
  EXPECT_NE(m.find("invalid partition"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

}  // namespace
}  // namespace cumulus
