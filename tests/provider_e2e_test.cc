// The autoscaler end to end through `cumulus up FILE` (the real monitor and policy) with the two
// providers that reach outside this process tree:
//   - slurm: a real slurmctld + slurmd (tests/private_slurm.h) started by the test; a node type's
//     nodes are SLURM jobs. Skipped, saying why, where SLURM cannot run here.
//   - command: the user's launch / list / terminate scripts (tests/data/command_provider/), which
//     start real `cumulus start --address ...` node daemons on loopback in the background, list
//     them by pid file and terminate them by killing their process group.
// Each: a head, one on-prem node too small for the work, the monitor, and burst_driver asking for
// the work; the monitor launches a node of the type, it joins with the type's labels, the work
// runs there, and the node, idle past its (2 s) idle timeout, is drained and terminated.
#include <gtest/gtest.h>
#include <signal.h>
#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "cluster_fixture.h"
#include "private_slurm.h"
#include "runtime/autoscaler/node_provider.h"

namespace cumulus {
namespace {

using namespace slurm_test;
using Clock = std::chrono::steady_clock;

long long MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// The object of `type` in `cumulus status --json`'s "types" ("" if absent).
std::string TypeRow(const std::string& json, const std::string& type) {
  size_t at = json.find("{\"type\":\"" + type + "\"");
  if (at == std::string::npos) return "";
  return json.substr(at, json.find('}', at) - at + 1);
}

// The integer `"key":N` in `row`, or -1.
long long Number(const std::string& row, const std::string& key) {
  size_t at = row.find("\"" + key + "\":");
  return at == std::string::npos ? -1 : std::atoll(row.c_str() + at + key.size() + 3);
}

class ProviderE2ETest : public ClusterTest {
 protected:
  // burst_driver ships its program (tens of MiB with debug info) through the object store.
  ProviderE2ETest() { node_store_memory_ = "160M"; }

  // A head with no node, one on-prem node of `onprem_cpus` CPUs (site=onprem), the monitor.
  // `--insecure`: a command provider's nodes may run anywhere (here they do not).
  void StartCluster(const std::string& file, const std::string& onprem_cpus, bool insecure) {
    head_ = StartHead({"--no-node"});
    onprem_ = StartNode(
        "onprem",
        {"--resources", "CPU=" + onprem_cpus, "--labels", "site=onprem", "--wait-for-nodes"},
        &onprem_id_);
    std::vector<std::string> argv = {kCumulus,       "up",        file,      "--address",  address_,
                                     "--token-file", token_file_, "--block", "--round-ms", "200"};
    if (insecure) argv.push_back("--insecure");
    monitor_ = std::make_unique<Subprocess>(argv, /*merge_stderr=*/true);
    ASSERT_TRUE(monitor_->WaitForLine("cumulus autoscaler ready", 30s));
  }

  std::unique_ptr<Subprocess> Driver(std::vector<std::string> args) {
    return StartDriver("burst_driver", std::move(args), CoreSocket(onprem_id_));
  }

  // Alive nodes the autoscaler launched.
  std::vector<NodeRecord> CloudNodes() {
    std::vector<NodeRecord> out;
    for (auto& n : View().nodes) {
      if (n.state == NodeState::kAlive && n.labels.count(kNodeTypeLabel)) out.push_back(n);
    }
    return out;
  }

  std::string Status(bool json = false) {
    std::string out;
    std::vector<std::string> args = {"status", "--address", address_, "--token-file", token_file_};
    if (json) args.push_back("--json");
    Cli(args, &out);
    return out;
  }

  // Waits for one node of `type` (labels site=cloud, region=`region`) to be launched for
  // `driver`'s work, for the work to run there and for the node, then idle, to leave the
  // cluster; checks the type's counts in `cumulus status --json` on the way. Returns the node's
  // instance id ("" if none came up within `boot_limit`).
  std::string ExpectLaunchRunAndScaleDown(Subprocess* driver, const std::string& type,
                                          const std::string& region,
                                          std::chrono::milliseconds boot_limit) {
    Clock::time_point start = Clock::now();
    bool saw_launching = false;
    std::vector<NodeRecord> cloud;
    bool up = WaitUntil(
        [&] {
          saw_launching |= Number(TypeRow(Status(true), type), "launching") >= 1;
          cloud = CloudNodes();
          return !cloud.empty();
        },
        boot_limit);
    if (!up) {
      ADD_FAILURE() << "no " << type << " node came up:\n" << Status() << monitor_->ReadAll(1s);
      return "";
    }
    joined_ms_ = MsSince(start);
    EXPECT_TRUE(saw_launching) << "status never showed the " << type << " node launching";
    EXPECT_EQ(cloud.size(), 1u);
    NodeRecord node = cloud[0];
    EXPECT_EQ(node.labels[kNodeTypeLabel], type);
    EXPECT_EQ(node.labels["site"], "cloud");
    EXPECT_EQ(node.labels["region"], region);
    std::string id = node.labels[kInstanceIdLabel];
    EXPECT_FALSE(id.empty()) << "the launched node carries no instance id";
    EXPECT_TRUE(WaitUntil([&] { return Number(TypeRow(Status(true), type), "running") == 1; }, 10s))
        << Status(true);

    std::string out = driver->ReadAll(60s);
    ExpectChecks(out, {"ran"});
    size_t where = out.find("WHERE ");
    EXPECT_NE(where, std::string::npos) << out;
    if (where != std::string::npos) {
      EXPECT_EQ(out.substr(where + 6, 32), node.id.Hex()) << out;
    }
    ran_ms_ = MsSince(start);

    // Idle past its timeout (2 s): drained, then terminated; the node leaves the head.
    EXPECT_TRUE(WaitForState(node.id.Hex(), NodeState::kDead, 30s))
        << "the idle node was not removed:\n"
        << Status();
    EXPECT_TRUE(WaitUntil(
        [&] {
          std::string row = TypeRow(Status(true), type);
          return Number(row, "running") == 0 && Number(row, "launching") == 0 &&
                 Number(row, "draining") == 0;
        },
        10s))
        << Status(true);
    removed_ms_ = MsSince(start);
    return id;
  }

  void TearDown() override {
    if (monitor_) monitor_->Kill(SIGKILL);
  }

  std::unique_ptr<Subprocess> head_, onprem_, monitor_;
  std::string onprem_id_;
  long long joined_ms_ = 0, ran_ms_ = 0, removed_ms_ = 0;
};

// ---------------------------------------------------------------------------------------------
// slurm

class SlurmE2ETest : public ProviderE2ETest {
 protected:
  void SetUp() override {
    ProviderE2ETest::SetUp();
    Clock::time_point start = Clock::now();
    slurm_ = std::make_unique<PrivateSlurm>(dir_.path());
    std::string why = slurm_->Start();
    if (!why.empty()) GTEST_SKIP() << "SLURM cannot run here: " << why;
    slurm_start_ms_ = MsSince(start);
  }

  void TearDown() override {
    ProviderE2ETest::TearDown();
    if (slurm_ && !slurm_->conf().empty()) {
      (void)Slurm({"scancel", "--me"});
      WaitUntil([&] { return Slurm({"squeue", "--me", "-h", "-o", "%i"}).empty(); }, 20s);
      // A node daemon a job started that SLURM did not stop: by the pid it printed.
      std::error_code ec;
      for (auto& entry : std::filesystem::directory_iterator(dir_.path() + "/jobs", ec)) {
        int pid = std::atoi(Field(ReadAll(entry.path().string()), "pid").c_str());
        if (pid > 0) kill(pid, SIGKILL);
      }
    }
    slurm_.reset();
  }

  // A SLURM command's stdout (SLURM_CONF set to the private cluster's).
  std::string Slurm(std::vector<std::string> argv) {
    RunProgramOptions o;
    o.env = {{"SLURM_CONF", slurm_->conf()}};
    auto r = RunProgram(argv, In(10s), o);
    return r.ok() ? r->out : "";
  }

  std::string WriteClusterFile() {
    std::string path = dir_.path() + "/cluster.yaml";
    std::ofstream(path) << "cluster_name: e2e\n"
                           "head:\n  host: 127.0.0.1\n  port: 0\n"
                           "providers:\n"
                           "  hpc:\n    kind: slurm\n    output_dir: "
                        << dir_.path() << "/jobs\n    node_data_dir: " << dir_.path()
                        << "\n    object_store_memory: 160M\n    slurm_conf: " << slurm_->conf()
                        << "\n    cumulus_binary: " << kCumulus
                        << "\n    timeout_s: 30\n"
                           "node_types:\n"
                           "  - name: hpc-cpu\n    provider: hpc\n    resources: CPU=2\n"
                           "    labels: site=cloud,region=slurm\n    price_per_hour: 1.0\n"
                           "    boot_time_s: 5\n    max_count: 1\n    idle_timeout_s: 2\n";
    return path;
  }

  std::unique_ptr<PrivateSlurm> slurm_;
  long long slurm_start_ms_ = 0;
};

// Work the on-prem node (CPU=1) cannot hold: the monitor sbatches a job, its node joins with the
// type's labels, runs the work, and once idle is drained and scancelled; squeue shows it gone.
TEST_F(SlurmE2ETest, JobNodeRunsTheWorkAndIsCancelledWhenIdle) {
  Clock::time_point start = Clock::now();
  StartCluster(WriteClusterFile(), "1", /*insecure=*/false);
  auto driver = Driver({"--cpus=2", "--hold_ms=1000"});
  std::string job = ExpectLaunchRunAndScaleDown(driver.get(), "hpc-cpu", "slurm", 45s);
  ASSERT_FALSE(job.empty());
  // The instance is the SLURM job; it no longer runs (squeue lists active jobs by default), and
  // with every state it shows as ended.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return Slurm({"squeue", "--me", "-h", "-o", "%i"}).empty();
      },
      20s))
      << Slurm({"squeue", "--me", "-h", "-t", "all", "-o", "%i %T %r"});
  std::string all = Slurm({"squeue", "--me", "-h", "-t", "all", "-o", "%i %T"});
  EXPECT_NE(all.find(job + " "), std::string::npos)
      << "squeue never knew job " << job << ": " << all;
  EXPECT_TRUE(all.find(job + " CANCELLED") != std::string::npos ||
              all.find(job + " COMPLETED") != std::string::npos)
      << all;
  // One task, one sbatch: SLURM knew no other job (it keeps ended ones for MinJobAge, 300 s).
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 1)
      << "more than one job was submitted for one task:\n"
      << all;
  std::printf(
      "slurm e2e: SLURM up in %lld ms; after the driver started: node joined %lld ms, work done "
      "%lld ms, node removed %lld ms; whole test %lld ms\n",
      slurm_start_ms_, joined_ms_, ran_ms_, removed_ms_, MsSince(start) + slurm_start_ms_);
}

// ---------------------------------------------------------------------------------------------
// command

class CommandE2ETest : public ProviderE2ETest {
 protected:
  void TearDown() override {
    ProviderE2ETest::TearDown();
    // Whatever the scripts started and did not stop: SIGKILL to each instance's process group.
    std::error_code ec;
    for (const char* sub : {"/instances", "/instances-broken"}) {
      for (auto& entry : std::filesystem::directory_iterator(dir_.path() + sub, ec)) {
        if (entry.path().extension() != ".pid") continue;
        int pid = std::atoi(ReadAll(entry.path().string()).c_str());
        if (pid > 0) kill(-pid, SIGKILL);
      }
    }
  }

  // Provider `mine` (the scripts, nodes under DIR/instances) with type cmd-cpu (CPU=4, 1.0/h);
  // with `broken`, provider `broken` whose launch always fails, with a cheaper type cmd-broken.
  std::string WriteClusterFile(bool broken) {
    const std::string scripts = std::string(CUMULUS_TEST_DATA_DIR) + "/command_provider/";
    auto provider = [&](const std::string& name, const std::string& launch,
                        const std::string& state) {
      return "  " + name + ":\n    kind: command\n    launch: [" + launch + "]\n    list: [" +
             scripts + "list.sh, " + state + "]\n    terminate: [" + scripts + "terminate.sh, " +
             state + ", \"{instance_id}\"]\n    timeout_s: 20\n";
    };
    std::string path = dir_.path() + "/cluster.yaml";
    std::ofstream f(path);
    f << "cluster_name: e2e\nhead:\n  host: 127.0.0.1\n  port: 0\nproviders:\n"
      << provider(
             "mine",
             scripts + "launch.sh, " + dir_.path() + "/instances, " + kCumulus + ", \"{count}\"",
             dir_.path() + "/instances");
    if (broken) {
      f << provider("broken", scripts + "launch_fails.sh", dir_.path() + "/instances-broken");
    }
    f << "node_types:\n"
         "  - name: cmd-cpu\n    provider: mine\n    resources: CPU=4\n"
         "    labels: site=cloud,region=scripts\n    price_per_hour: 1.0\n    boot_time_s: 2\n"
         "    max_count: 2\n    idle_timeout_s: 2\n";
    if (broken) {
      f << "  - name: cmd-broken\n    provider: broken\n    resources: CPU=4\n"
           "    labels: site=cloud\n    price_per_hour: 0.1\n    boot_time_s: 2\n"
           "    max_count: 2\n    idle_timeout_s: 2\n";
    }
    return path;
  }

  // The instance's state as the list script prints it ("" if not listed).
  std::string Listed(const std::string& id) {
    auto r = RunProgram({std::string(CUMULUS_TEST_DATA_DIR) + "/command_provider/list.sh",
                         dir_.path() + "/instances"},
                        In(10s));
    if (!r.ok() || !r->ok()) return "";
    size_t at = r->out.find(id + " ");
    if (at == std::string::npos) return "";
    at += id.size() + 1;
    return r->out.substr(at, r->out.find(' ', at) - at);
  }
};

// Work the on-prem node (CPU=2) cannot hold: the launch script starts a node daemon, it joins
// with the type's labels, runs the work, and once idle is drained and terminated.
TEST_F(CommandE2ETest, ScriptNodeRunsTheWorkAndIsRemovedWhenIdle) {
  StartCluster(WriteClusterFile(/*broken=*/false), "2", /*insecure=*/true);
  auto driver = Driver({"--cpus=3", "--hold_ms=1000"});
  std::string id = ExpectLaunchRunAndScaleDown(driver.get(), "cmd-cpu", "scripts", 30s);
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(View().nodes.size(), 2u) << "one launch, not one per round";
  // Its process is gone (the list script says terminated: exited 0 after the drain, or killed
  // by the terminate script).
  EXPECT_TRUE(WaitUntil([&] { return Listed(id) == "terminated"; }, 10s)) << Listed(id);
  std::printf("command e2e: node joined %lld ms, work done %lld ms, node removed %lld ms\n",
              joined_ms_, ran_ms_, removed_ms_);
}

// The cheaper type's launch script fails: the type is backed off with the script's error shown
// on one line of `cumulus status`, and the next type runs the work.
TEST_F(CommandE2ETest, FailingLaunchScriptBacksOffItsTypeWithTheReasonShown) {
  StartCluster(WriteClusterFile(/*broken=*/true), "2", /*insecure=*/true);
  auto driver = Driver({"--cpus=3", "--hold_ms=500"});
  std::string out = driver->ReadAll(60s);
  ExpectChecks(out, {"ran"});
  // It ran on the one node launched, of cmd-cpu (the node may be gone already: idle 2 s).
  int launched = 0;
  std::string ran_on;
  for (auto& n : View().nodes) {
    if (!n.labels.count(kNodeTypeLabel)) continue;
    ++launched;
    if (out.find("WHERE " + n.id.Hex()) != std::string::npos) ran_on = n.labels[kNodeTypeLabel];
  }
  EXPECT_EQ(launched, 1) << Status();
  EXPECT_EQ(ran_on, "cmd-cpu") << out;

  std::string text = Status();
  size_t at = text.find("quota exceeded in zone test-1a");
  ASSERT_NE(at, std::string::npos) << text;
  size_t begin = text.rfind('\n', at) + 1;
  std::string line = text.substr(begin, text.find('\n', at) - begin);
  EXPECT_EQ(line.find("cmd-broken"), 2u) << "the reason is not on cmd-broken's row: " << line;
  EXPECT_NE(line.find("until +"), std::string::npos) << line;
  EXPECT_NE(line.find("launch_fails.sh"), std::string::npos) << line;
  EXPECT_NE(line.find("exit 3"), std::string::npos) << line;
  std::string row = TypeRow(Status(true), "cmd-broken");
  EXPECT_GE(Number(row, "failed_launches"), 1) << row;
  EXPECT_GT(Number(row, "backoff_until_micros"), 0) << row;
}

}  // namespace
}  // namespace cumulus
