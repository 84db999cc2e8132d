// The slurm provider against fake `sbatch` and `squeue` scripts put first on PATH (no SLURM
// needed), so that a listing and a launch can be made to overlap in a chosen order. The provider
// against a real slurmctld + slurmd is tests/slurm_provider_test.cc.
#include "runtime/autoscaler/slurm_provider.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "runtime/base/subprocess.h"
#include "runtime/base/temp_dir.h"

namespace cumulus {
namespace {

using namespace std::chrono_literals;

TimePoint In(Duration d) { return SystemClock::Get().Now() + d; }

class SlurmListingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    bin_ = dir_.path() + "/bin";
    mkdir(bin_.c_str(), 0700);
    const char* path = std::getenv("PATH");
    old_path_ = path ? path : "";
    setenv("PATH", (bin_ + ":" + old_path_).c_str(), 1);
  }
  void TearDown() override { setenv("PATH", old_path_.c_str(), 1); }

  void Script(const std::string& name, const std::string& body) {
    std::string path = bin_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    chmod(path.c_str(), 0700);
  }

  std::unique_ptr<SlurmProvider> Provider() {
    SlurmProviderOptions o;
    o.name = "hpc";
    o.cluster_name = "test";
    o.cumulus_binary = "/bin/true";
    o.settings.output_dir = dir_.path() + "/jobs";
    o.settings.timeout_s = 20;
    auto p = SlurmProvider::Create(std::move(o));
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? std::move(*p) : nullptr;
  }

  static NodeTypeConfig Type() {
    NodeTypeConfig t;
    t.name = "hpc-cpu";
    t.provider = "hpc";
    t.resources = *ResourceSet::Parse("CPU=2");
    return t;
  }

  TempDir dir_;
  std::string bin_, old_path_;
};

// squeue answers from a view of the jobs taken before a job was submitted and returns after
// that job's sbatch did (as a loaded controller or machine makes it): the listing does not
// show the job, and must not say it finished. It did say so, and the monitor, forgetting the
// job, sbatched another one for the same demand (two nodes joined for one task).
TEST_F(SlurmListingTest, AJobSubmittedWhileSqueueRunsIsNotListedAsFinished) {
  const std::string started = dir_.path() + "/squeue-started";
  const std::string go = dir_.path() + "/squeue-go";
  // squeue: says it has looked (at no job of ours), then answers once told to.
  Script("squeue",
         "touch '" + started + "'\nwhile [ ! -e '" + go + "' ]; do sleep 0.01; done\nexit 0");
  Script("sbatch", "echo 7");
  auto provider = Provider();
  ASSERT_TRUE(provider);

  Result<std::vector<Instance>> listed = Status::Internal("not listed");
  std::thread lister([&] { listed = provider->List(In(20s)); });
  bool looked = WaitUntil([&] { return access(started.c_str(), F_OK) == 0; }, 20s);
  auto ids = looked ? provider->Launch(Type(), 1, LaunchSpec{}, In(20s))
                    : Result<std::vector<std::string>>(Status::TimedOut("squeue never ran"));
  std::ofstream(go) << "go\n";
  lister.join();
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_EQ(*ids, std::vector<std::string>{"7"});
  ASSERT_TRUE(listed.ok()) << listed.status();
  for (auto& in : *listed) {
    EXPECT_NE(in.id, "7") << "a job submitted while squeue ran was listed as "
                          << InstanceStateName(in.state) << " (" << in.detail << ")";
  }

  // A listing that starts after the submission and does not show the job: SLURM has forgotten
  // it (MinJobAge), so it has ended.
  auto later = provider->List(In(20s));
  ASSERT_TRUE(later.ok()) << later.status();
  ASSERT_EQ(later->size(), 1u);
  EXPECT_EQ((*later)[0].id, "7");
  EXPECT_EQ((*later)[0].state, InstanceState::kTerminated);
  EXPECT_EQ((*later)[0].node_type, "hpc-cpu");
}

// What squeue shows is what List says, whenever the job was submitted.
TEST_F(SlurmListingTest, JobsSqueueShowsAreListedWithTheirState) {
  Script("sbatch", "echo 7");
  Script("squeue",
         "echo '7|cumulus-test.hpc-cpu|RUNNING|None'\n"
         "echo '8|cumulus-test.hpc-cpu|FAILED|NonZeroExitCode'\n"
         "echo '9|someone-else|RUNNING|None'");
  auto provider = Provider();
  ASSERT_TRUE(provider);
  ASSERT_TRUE(provider->Launch(Type(), 1, LaunchSpec{}, In(20s)).ok());
  auto listed = provider->List(In(20s));
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].id, "7");
  EXPECT_EQ((*listed)[0].state, InstanceState::kRunning);
  EXPECT_EQ((*listed)[1].id, "8");
  EXPECT_EQ((*listed)[1].state, InstanceState::kFailed);
  EXPECT_EQ((*listed)[1].detail, "FAILED (NonZeroExitCode)");
}

}  // namespace
}  // namespace cumulus
