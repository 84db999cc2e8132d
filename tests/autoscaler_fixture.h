// The fixture of the autoscaler's tests with real processes (autoscaler_test.cc,
// autoscaler_pinned_test.cc): a head, one small on-prem node, `cumulus up --address --block`
// running the monitor, the local provider launching "cloud" nodes as processes here, and
// burst_driver asking for work (tune_driver: a tuning run's trials). Short idle timeouts and boot
// delays keep each test to seconds.
#pragma once

#include <signal.h>

#include <fstream>
#include <set>

#include "cluster_fixture.h"
#include "local_instances.h"
#include "runtime/autoscaler/local_provider.h"

namespace cumulus {

class AutoscalerTest : public ClusterTest {
 protected:
  // burst_driver ships its program (tens of MiB with debug info) through the object store.
  AutoscalerTest() { node_store_memory_ = "160M"; }

  // A cluster file: provider `local` (and `flaky`, whose launches all fail), type cpu-small
  // (CPU=4, 1.0/h) and, with `flaky_type`, a cheaper cpu-flaky (CPU=4, 0.1/h) on `flaky`.
  std::string WriteClusterFile(const std::string& budget = "", bool flaky_type = false,
                               double idle_timeout_s = 2,
                               const std::string& cloud_labels = "site=cloud") {
    std::string path = dir_.path() + "/cluster.yaml";
    std::ofstream f(path);
    f << "cluster_name: test\n"
         "head:\n  host: 127.0.0.1\n  port: 0\n"
         "providers:\n"
         "  local:\n    kind: local\n    boot_delay_s: 0\n    state_dir: provider\n"
         "    object_store_memory: 160M\n"
         "  flaky:\n    kind: local\n    failure_rate: 1\n    state_dir: provider-flaky\n"
         "    object_store_memory: 160M\n"
         "node_types:\n"
         "  - name: cpu-small\n    provider: local\n    resources: CPU=4\n"
         "    labels: "
      << cloud_labels
      << "\n    price_per_hour: 1.0\n    boot_time_s: 1\n"
         "    max_count: 2\n    idle_timeout_s: "
      << idle_timeout_s << "\n";
    if (flaky_type) {
      f << "  - name: cpu-flaky\n    provider: flaky\n    resources: CPU=4\n"
           "    labels: site=cloud\n    price_per_hour: 0.1\n    boot_time_s: 1\n"
           "    max_count: 2\n    idle_timeout_s: 2\n";
    }
    f << budget;
    return path;
  }

  // A head with no node, one on-prem node with CPU=2 (site=onprem), the monitor on `file`.
  void StartCluster(const std::string& file) {
    head_ = StartHead({"--no-node"});
    onprem_ =
        StartNode("onprem", {"--resources", "CPU=2", "--labels", "site=onprem", "--wait-for-nodes"},
                  &onprem_id_);
    StartMonitor(file);
  }
  void StartMonitor(const std::string& file, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {kCumulus,       "up",        file,      "--address",  address_,
                                     "--token-file", token_file_, "--block", "--round-ms", "200"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    monitor_ = std::make_unique<Subprocess>(argv, /*merge_stderr=*/true);
    ASSERT_TRUE(monitor_->WaitForLine("cumulus autoscaler ready", 30s));
  }

  std::unique_ptr<Subprocess> Driver(std::vector<std::string> args) {
    return StartDriver("burst_driver", std::move(args), CoreSocket(onprem_id_));
  }

  // The provider's instances of this cluster that are pending or running.
  std::vector<Instance> Live() {
    return LiveLocalInstances(&provider_, kCumulus, dir_.path() + "/provider", "test");
  }

  // Alive nodes the autoscaler launched.
  std::vector<NodeRecord> CloudNodes() {
    std::vector<NodeRecord> out;
    for (auto& n : View().nodes) {
      if (n.state == NodeState::kAlive && n.labels.count("cumulus.node_type")) out.push_back(n);
    }
    return out;
  }

  // Why node `hex` is no longer alive ("" while it is, or if the head never knew it).
  std::string DeathReason(const std::string& hex) {
    for (auto& n : View().nodes) {
      if (n.id.Hex() == hex && n.state == NodeState::kDead) return n.death_reason;
    }
    return "";
  }

  std::string Status(bool json = false) {
    std::string out;
    std::vector<std::string> args = {"status", "--address", address_, "--token-file", token_file_};
    if (json) args.push_back("--json");
    Cli(args, &out);
    return out;
  }
  bool StatusShows(const std::string& what, std::chrono::milliseconds timeout, bool json = false) {
    return WaitUntil([&] { return Status(json).find(what) != std::string::npos; }, timeout);
  }

  // Waits (20 s at most) for a heartbeat of node `hex` later than `micros` (a heartbeat time of
  // the head's records): its reply brings that node the head's view as of then.
  bool HeartbeatAfter(const std::string& hex, int64_t micros) {
    return WaitUntil(
        [&] {
          ClusterView v = View();
          const NodeRecord* n = Find(v, hex);
          return n && n->last_heartbeat_micros > micros;
        },
        20s);
  }

  // cpu-small counts no failed launch and is not backed off (`cumulus status --json`).
  void ExpectNoFailedLaunch() {
    std::string json = Status(true);
    size_t at = json.find("{\"type\":\"cpu-small\"");
    ASSERT_NE(at, std::string::npos) << json;
    std::string row = json.substr(at, json.find('}', at) - at);
    EXPECT_NE(row.find("\"failed_launches\":0,"), std::string::npos) << row;
    EXPECT_NE(row.find("\"backoff_until_micros\":0,"), std::string::npos) << row;
  }

  void TearDown() override {
    if (monitor_) monitor_->Kill(SIGKILL);
    for (auto& in : Live()) (void)provider_->Terminate(in.id, SystemClock::Get().Now() + 10s);
  }

  std::unique_ptr<Subprocess> head_, onprem_, monitor_;
  std::string onprem_id_;
  std::unique_ptr<LocalProvider> provider_;
};

}  // namespace cumulus
