// The metrics endpoints scraped by a real Prometheus (Debian package `prometheus`): a head and a
// node on loopback with --metrics-port, a driver that runs tasks and an actor, and a Prometheus
// started by the test with a config scraping both, asked through its HTTP API until the scraped
// values say what ran; and `cumulus up` whose launched nodes Prometheus finds through the head's
// service-discovery file. Skipped, saying why, where the prometheus binary is absent.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "cluster_fixture.h"
#include "runtime/net/tcp.h"

namespace cumulus {
namespace {

std::string FindPrometheus() {
  if (const char* env = std::getenv("CUMULUS_PROMETHEUS"); env && *env) return env;
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/bin"}) {
    std::string path = std::string(dir) + "/prometheus";
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

// A port free on 127.0.0.1 now (the kernel's pick; released for Prometheus to take).
uint16_t FreePort() {
  uint16_t port = 0;
  auto fd = ListenTcp("127.0.0.1", 0, &port);
  if (fd.ok()) close(*fd);
  return port;
}

std::string UrlEncode(const std::string& s) {
  std::string out;
  char buf[4];
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      std::snprintf(buf, sizeof(buf), "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// GET `path` from 127.0.0.1:`port`; the whole response ("" if it cannot be had within 5 s).
std::string HttpGet(uint16_t port, const std::string& path) {
  auto fd = ConnectTcp(HostPort{"127.0.0.1", port}, 2s);
  if (!fd.ok()) return "";
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  std::string out;
  if (SendAll(*fd, reinterpret_cast<const uint8_t*>(req.data()), req.size(), 2s).ok()) {
    TimePoint deadline = SystemClock::Get().Now() + 5s;
    char buf[8192];
    while (true) {
      pollfd p{*fd, POLLIN, 0};
      if (poll(&p, 1, MillisUntil(deadline)) <= 0) break;
      ssize_t n = recv(*fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  close(*fd);
  return out;
}

class MetricsTest : public ClusterTest {
 protected:
  // A node runs the driver's tasks, so its store holds the driver's program (about 70 MiB with
  // debug information).
  MetricsTest() { node_store_memory_ = "256M"; }
  void TearDown() override {
    if (up_) {
      std::string out;
      if (Cli({"down"}, &out) != 0) ADD_FAILURE() << "cumulus down failed: " << out;
      // Its output is what it did, not the monitor's bookkeeping log lines (unless the one
      // running the tests asked for them with CUMULUS_LOG_LEVEL).
      EXPECT_NE(out.find("Terminated the autoscaler's nodes"), std::string::npos) << out;
      if (!std::getenv("CUMULUS_LOG_LEVEL")) {
        EXPECT_EQ(out.find("autoscaler: recovered"), std::string::npos) << out;
      }
    }
    if (prometheus_) {
      prometheus_->Kill(SIGTERM);
      if (!prometheus_->Wait(10s)) prometheus_->Kill(SIGKILL);
      prometheus_.reset();
    }
  }

  // The value of a PromQL expression that yields one series (e.g. a sum), as Prometheus answers
  // it now; nullopt if it has no answer (no scrape yet, no such series).
  std::optional<double> Query(const std::string& expr) {
    std::string r = HttpGet(prometheus_port_, "/api/v1/query?query=" + UrlEncode(expr));
    last_answer_ = r;
    if (r.find("\"status\":\"success\"") == std::string::npos) return std::nullopt;
    size_t at = r.find("\"value\":[");
    if (at == std::string::npos) return std::nullopt;
    size_t q = r.find(",\"", at);
    if (q == std::string::npos) return std::nullopt;
    return std::strtod(r.c_str() + q + 2, nullptr);
  }

  // Waits until `expr` is `want`; fails the test, with Prometheus's last answer, if it is not
  // within `timeout`.
  void ExpectEventually(const std::string& expr, double want, std::chrono::milliseconds timeout) {
    std::optional<double> got;
    bool ok = WaitUntil(
        [&] {
          got = Query(expr);
          return got && *got == want;
        },
        timeout);
    EXPECT_TRUE(ok) << expr << ": want " << want << ", got "
                    << (got ? std::to_string(*got) : "nothing") << "; last answer:\n"
                    << last_answer_
                    << (prometheus_->running()
                            ? ""
                            : "\nprometheus exited: " + prometheus_->ReadAll(1s));
  }

  // Starts Prometheus on a free port of 127.0.0.1, scraping every second what `scrape_configs`
  // (YAML, indented as a list under scrape_configs) names, its data in this test's dir.
  void StartPrometheus(const std::string& prometheus, const std::string& scrape_configs) {
    prometheus_port_ = FreePort();
    std::string config = dir_.path() + "/prometheus.yml";
    std::ofstream(config) << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                          << "scrape_configs:\n"
                          << scrape_configs;
    prometheus_ = std::make_unique<Subprocess>(
        std::vector<std::string>{
            prometheus, "--config.file=" + config,
            "--storage.tsdb.path=" + dir_.path() + "/prometheus-data",
            "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_),
            "--log.level=warn"},
        /*merge_stderr=*/true);
  }

  std::unique_ptr<Subprocess> prometheus_;
  bool up_ = false;  // `cumulus up` started a cluster: TearDown runs `cumulus down`
  uint16_t prometheus_port_ = 0;
  std::string last_answer_;
};

TEST_F(MetricsTest, PrometheusScrapesTheHeadAndANode) {
  std::string prometheus = FindPrometheus();
  if (prometheus.empty()) {
    GTEST_SKIP() << "no prometheus binary (install the Debian package 'prometheus', as "
                    "scripts/dev.sh does, or set CUMULUS_PROMETHEUS): the metrics endpoints are "
                    "not checked against a real Prometheus here";
  }
  // A head (with its node) and one more node, each with a metrics endpoint on a port of the
  // kernel's choosing, read back from their ready lines.
  auto head = std::make_unique<Subprocess>(std::vector<std::string>{
      kCumulus, "start", "--head", "--block", "--port", "0", "--data-dir", dir_.path() + "/head",
      // The store holds the driver's program too (about 70 MiB with debug information).
      "--object-store-memory", "256M", "--resources", "CPU=2,GPU=0", "--metrics-port", "0"});
  auto head_ready = head->WaitForLine("cumulus head ready", 30s);
  ASSERT_TRUE(head_ready) << "the head did not start";
  address_ = Field(*head_ready, "address");
  token_file_ = Field(*head_ready, "token_file");
  token_ = *LoadToken(token_file_);
  std::string head_metrics = Field(*head_ready, "metrics");
  ASSERT_EQ(head_metrics.rfind("127.0.0.1:", 0), 0u) << *head_ready;  // --bind's, not 0.0.0.0
  std::string node_id, node_ready;
  auto node =
      StartNode("n1", {"--resources", "CPU=3", "--metrics-port", "0"}, &node_id, &node_ready);
  std::string node_metrics = Field(node_ready, "metrics");
  ASSERT_FALSE(node_metrics.empty()) << node_ready;

  // Work for the metrics to count: tasks and an actor, from a driver on the head's node.
  const int kTasks = 25;
  auto driver = StartDriver("metrics_driver", {"--tasks=" + std::to_string(kTasks)},
                            CoreSocket(HeadNodeId()));
  ASSERT_TRUE(driver->WaitForLine("READY", 120s)) << driver->Skipped() << driver->ReadAll(1s);

  // Prometheus scraping both every second.
  StartPrometheus(prometheus, "  - job_name: cumulus\n    static_configs:\n      - targets: ['" +
                                  head_metrics + "', '" + node_metrics + "']\n");

  // Both targets up (the scrape parsed the page: a malformed one makes `up` 0).
  ExpectEventually("count(up{job=\"cumulus\"} == 1)", 2, 60s);
  // Every task finished, and counted once, on the node that ran it (+1: the actor's creation).
  ExpectEventually("sum(cumulus_tasks{State=\"FINISHED\"})", kTasks + 1, 30s);
  ExpectEventually("sum(cumulus_tasks{State=\"FAILED\"})", 0, 10s);
  ExpectEventually("sum(cumulus_actors{State=\"ALIVE\"})", 1, 10s);
  ExpectEventually("cumulus_cluster_nodes{State=\"ALIVE\"}", 2, 10s);
  ExpectEventually("count(cumulus_node_info)", 2, 10s);
  // Resources: USED + AVAILABLE is each node's total; the actor holds no CPU once created.
  ExpectEventually("sum(cumulus_resources{Name=\"CPU\"})", 5, 10s);
  ExpectEventually("sum(cumulus_resources{Name=\"CPU\",State=\"AVAILABLE\"})", 5, 10s);
  // The driver's 1 MiB object in its node's shared memory.
  ExpectEventually("sum(cumulus_object_store_memory{Location=\"MMAP_SHM\"}) >= bool 1048576", 1,
                   10s);
  ExpectEventually("count(cumulus_node_mem_total > 0)", 2, 10s);

  // The driver's job ends: its actor is gone from ALIVE.
  driver->CloseStdin();
  ExpectChecks(driver->ReadAll(60s), {"tasks", "actor"});
  ExpectEventually("sum(cumulus_actors{State=\"ALIVE\"})", 0, 30s);
  ExpectEventually("sum(cumulus_actors{State=\"DEAD\"})", 1, 30s);
}

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `cumulus up --metrics-port 0 --metrics-sd-file F` with the local provider: the head keeps F a
// file_sd list of every node's endpoint; Prometheus, told only F, finds the node the autoscaler
// launches for work the on-prem node cannot hold, scrapes it, and F drops it once it is gone.
TEST_F(MetricsTest, PrometheusDiscoversLaunchedNodesThroughTheSdFile) {
  std::string prometheus = FindPrometheus();
  if (prometheus.empty()) {
    GTEST_SKIP() << "no prometheus binary (install the Debian package 'prometheus', as "
                    "scripts/dev.sh does, or set CUMULUS_PROMETHEUS): service discovery is not "
                    "checked against a real Prometheus here";
  }
  std::string file = dir_.path() + "/cluster.yaml";
  std::ofstream(file) << "cluster_name: sdtest\n"
                         "head:\n  host: 127.0.0.1\n  port: 0\n"
                         "onprem_nodes:\n  - name: box\n    resources: CPU=2,GPU=0\n"
                         "providers:\n"
                         "  local:\n    kind: local\n    boot_delay_s: 0\n    state_dir: provider\n"
                         "    object_store_memory: 160M\n"
                         "node_types:\n"
                         "  - name: cpu-cloud\n    provider: local\n    resources: CPU=4\n"
                         "    labels: site=cloud\n    price_per_hour: 1.0\n    boot_time_s: 1\n"
                         "    max_count: 1\n    idle_timeout_s: 2\n";
  std::string sd_file = dir_.path() + "/targets.json";
  std::string out;
  up_ = true;
  int rc = Cli(
      {"up", file, "--metrics-port", "0", "--metrics-sd-file", sd_file, "--round-ms", "200"}, &out);
  ASSERT_EQ(rc, 0) << out;
  // "Head started at ADDR (token FILE, metrics ADDR)." and "On-prem node box started: ID (...)".
  auto after = [&](const std::string& key, const std::string& end) {
    size_t at = out.find(key);
    if (at == std::string::npos) return std::string();
    at += key.size();
    return out.substr(at, out.find(end, at) - at);
  };
  address_ = after("Head started at ", " ");
  token_file_ = after("(token ", ",");
  auto token = LoadToken(token_file_);
  ASSERT_TRUE(token.ok()) << out;
  token_ = *token;
  std::string onprem_id = after("On-prem node box started: ", " ");
  ASSERT_FALSE(onprem_id.empty()) << out;
  // The head's endpoint and, once the head has published its node (within about 1.5 s), the
  // on-prem node's.
  bool listed = WaitUntil(
      [&] {
        std::string now = ReadWhole(sd_file);
        return now.find("\"node_type\": \"head\"") != std::string::npos &&
               now.find("\"node_type\": \"static\"") != std::string::npos;
      },
      10s);
  EXPECT_TRUE(listed) << ReadWhole(sd_file);

  StartPrometheus(prometheus,
                  "  - job_name: cumulus\n    honor_labels: true\n"
                  "    file_sd_configs:\n      - files: ['" +
                      sd_file + "']\n        refresh_interval: 1s\n");
  ExpectEventually("count(up{job=\"cumulus\"} == 1)", 2, 20s);

  // Work for 3 CPUs: the on-prem node (2) cannot hold it, so a cpu-cloud node is launched.
  auto driver = StartDriver("burst_driver", {"--cpus=3", "--hold_ms=6000"}, CoreSocket(onprem_id));
  ExpectEventually("count(up{node_type=\"cpu-cloud\"} == 1)", 1, 20s);
  ExpectEventually("count(cumulus_node_info{node_type=\"cpu-cloud\"})", 1, 10s);
  ExpectChecks(driver->ReadAll(60s), {"ran"});

  // Idle for its timeout, the node is drained and terminated, and the file drops it.
  bool dropped = WaitUntil(
      [&] {
        std::string now = ReadWhole(sd_file);
        return now.find("cpu-cloud") == std::string::npos &&
               now.find("static") != std::string::npos;
      },
      20s);
  EXPECT_TRUE(dropped) << ReadWhole(sd_file);
  ExpectEventually("count(up{job=\"cumulus\"} == 1)", 2, 10s);
}

TEST_F(MetricsTest, TheEndpointAnswersPlainRequests) {
  auto head = std::make_unique<Subprocess>(std::vector<std::string>{
      kCumulus, "start", "--head", "--block", "--port", "0", "--data-dir", dir_.path() + "/head",
      "--object-store-memory", "64M", "--resources", "CPU=1,GPU=0", "--metrics-port", "0"});
  auto ready = head->WaitForLine("cumulus head ready", 30s);
  ASSERT_TRUE(ready);
  auto at = ParseHostPort(Field(*ready, "metrics"));
  ASSERT_TRUE(at.ok()) << *ready;
  std::string page = HttpGet(at->port, "/metrics");
  EXPECT_EQ(page.rfind("HTTP/1.1 200 OK", 0), 0u) << page;
  EXPECT_NE(page.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(page.find("# TYPE cumulus_tasks gauge"), std::string::npos) << page;
  EXPECT_NE(page.find("# TYPE cumulus_cluster_nodes gauge"), std::string::npos) << page;
  EXPECT_EQ(HttpGet(at->port, "/").rfind("HTTP/1.1 404", 0), 0u);
  // A second process asking for the same port gets one clear line.
  std::string out;
  int rc = Cli({"start", "--head", "--block", "--port", "0", "--data-dir", dir_.path() + "/head2",
                "--no-node", "--metrics-port", std::to_string(at->port)},
               &out);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("the metrics endpoint cannot listen"), std::string::npos) << out;
  EXPECT_NE(out.find(std::to_string(at->port)), std::string::npos) << out;
}

// An SD file in a directory that does not exist: one line naming the path and what to do, and
// the head stops before its node starts (nothing is left to tear down in the wrong order).
TEST_F(MetricsTest, AnSdFileInAMissingDirectoryFailsBeforeTheNodeStarts) {
  std::string sd_file = dir_.path() + "/missing-dir/targets.json";
  std::string out;
  int rc = Cli({"start", "--head", "--block", "--port", "0", "--data-dir", dir_.path() + "/head",
                "--object-store-memory", "64M", "--resources", "CPU=1,GPU=0", "--metrics-port", "0",
                "--metrics-sd-file", sd_file},
               &out);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--metrics-sd-file"), std::string::npos) << out;
  EXPECT_NE(out.find(sd_file), std::string::npos) << out;
  EXPECT_NE(out.find(std::strerror(ENOENT)), std::string::npos) << out;
  EXPECT_NE(out.find("choose another path"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/head/node_id"))
      << "the head's node started before the SD file was checked";
}

}  // namespace
}  // namespace cumulus
