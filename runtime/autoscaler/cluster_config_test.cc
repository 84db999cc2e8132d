#include "runtime/autoscaler/cluster_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "runtime/base/temp_dir.h"

namespace cumulus {
namespace {

// A whole, valid file; the bad cases below each change one thing in it.
const char* kGood = R"(cluster_name: lab
head:
  host: 10.0.0.1
  port: 7000
  data_dir: state/head
onprem_nodes:
  - name: box1
    resources: CPU=8,GPU=2,memory=64G
    labels: {gpu_model: RTX4090}
  - resources: {CPU: 4}
providers:
  aws:
    kind: command
    launch: [scripts/launch.sh, "{type}", "{count}"]
    list: [/usr/bin/aws-list]
    terminate: [scripts/terminate.sh, "{instance_id}"]
    timeout_s: 30
  hpc:
    kind: slurm
    partition: gpu
    sbatch_args: ["--time=01:00:00"]
  here:
    kind: local
    boot_delay_s: 0.5
    failure_rate: 0.25
    seed: 7
node_types:
  - name: cpu-8
    provider: aws
    resources: CPU=8,memory=32G
    labels: site=cloud,region=eu-west-1
    price_per_hour: 0.34
    max_count: 20
  - name: a100
    provider: hpc
    resources: {CPU: 16, GPU: 1, memory: 64G}
    gpu_model: A100
    price_per_hour: 2.5
    boot_time_s: 120
    min_count: 1
    max_count: 4
    spot: true
    idle_timeout_s: 600
    learn_idle_timeout: true
    launch_after_waiting_s: 90
budget:
  per_hour: 10
  total: 1000
upscaling_speed: 2
)";

// kGood with `from` replaced by `to` (which must occur).
std::string With(const std::string& from, const std::string& to) {
  std::string s = kGood;
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// The message of parsing `text`, which must fail.
std::string ErrorOf(const std::string& text) {
  auto c = ParseClusterConfig(text, "c.yaml");
  EXPECT_FALSE(c.ok()) << "expected an error";
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message().find('\n'), std::string::npos) << "one line";
  return c.status().message();
}

TEST(ClusterConfig, ParsesAWholeFile) {
  auto c = ParseClusterConfig(kGood, "c.yaml", "/etc/cumulus");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cluster_name, "lab");
  EXPECT_EQ(c->head.host, "10.0.0.1");
  EXPECT_EQ(c->head.port, 7000);
  EXPECT_EQ(c->head.data_dir, "/etc/cumulus/state/head");  // relative to the file

  ASSERT_EQ(c->onprem_nodes.size(), 2u);
  EXPECT_EQ(c->onprem_nodes[0].name, "box1");
  EXPECT_EQ(c->onprem_nodes[0].resources.Get("GPU"), 2);
  EXPECT_EQ(c->onprem_nodes[0].labels.at("gpu_model"), "RTX4090");
  EXPECT_EQ(c->onprem_nodes[0].labels.at("site"), "onprem");  // added
  EXPECT_EQ(c->onprem_nodes[1].name, "onprem-1");             // default name
  EXPECT_EQ(c->onprem_nodes[1].host, "localhost");
  EXPECT_EQ(c->onprem_nodes[1].resources.Get("CPU"), 4);

  ASSERT_EQ(c->providers.size(), 3u);
  const ProviderConfig& aws = c->providers.at("aws");
  EXPECT_EQ(aws.kind, ProviderKind::kCommand);
  EXPECT_EQ(aws.command.launch,
            (std::vector<std::string>{"/etc/cumulus/scripts/launch.sh", "{type}", "{count}"}));
  EXPECT_EQ(aws.command.list, (std::vector<std::string>{"/usr/bin/aws-list"}));
  EXPECT_EQ(aws.command.timeout_s, 30);
  const ProviderConfig& hpc = c->providers.at("hpc");
  EXPECT_EQ(hpc.kind, ProviderKind::kSlurm);
  EXPECT_EQ(hpc.slurm.partition, "gpu");
  EXPECT_EQ(hpc.slurm.sbatch_args, (std::vector<std::string>{"--time=01:00:00"}));
  EXPECT_EQ(hpc.slurm.timeout_s, 30);  // default
  const ProviderConfig& here = c->providers.at("here");
  EXPECT_EQ(here.local.boot_delay_s, 0.5);
  EXPECT_EQ(here.local.failure_rate, 0.25);
  EXPECT_EQ(here.local.seed, 7);

  ASSERT_EQ(c->node_types.size(), 2u);
  const NodeTypeConfig& cpu = c->node_types[0];
  EXPECT_EQ(cpu.name, "cpu-8");
  EXPECT_EQ(cpu.provider, "aws");
  EXPECT_EQ(cpu.resources.Get("memory"), 32.0 * (1ull << 30));
  EXPECT_EQ(cpu.labels.at("region"), "eu-west-1");
  EXPECT_EQ(cpu.price_per_hour, 0.34);
  EXPECT_EQ(cpu.min_count, 0);         // default
  EXPECT_EQ(cpu.boot_time_s, 300);     // default
  EXPECT_EQ(cpu.idle_timeout_s, 600);  // default: twice the boot time
  EXPECT_FALSE(cpu.spot);
  EXPECT_FALSE(cpu.learn_idle_timeout);      // default
  EXPECT_EQ(cpu.launch_after_waiting_s, 0);  // default
  const NodeTypeConfig* gpu = c->FindType("a100");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->labels.at("gpu_model"), "A100");  // from gpu_model
  EXPECT_EQ(gpu->labels.at("site"), "cloud");      // default
  EXPECT_EQ(gpu->min_count, 1);
  EXPECT_EQ(gpu->max_count, 4);
  EXPECT_TRUE(gpu->spot);
  EXPECT_EQ(gpu->idle_timeout_s, 600);
  EXPECT_TRUE(gpu->learn_idle_timeout);
  EXPECT_EQ(gpu->launch_after_waiting_s, 90);
  EXPECT_EQ(c->budget.per_hour, 10);
  EXPECT_EQ(c->budget.total, 1000);
  EXPECT_EQ(c->upscaling_speed, 2);
}

TEST(ClusterConfig, TheIdleTimeoutDefaultsToTwiceTheBootTime) {
  auto c = ParseClusterConfig(With("    idle_timeout_s: 600\n", ""), "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->FindType("a100")->idle_timeout_s, 240);  // boot_time_s: 120
  c = ParseClusterConfig(With("    idle_timeout_s: 600\n", "    idle_timeout_s: 0\n"), "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->FindType("a100")->idle_timeout_s, 0);  // given: kept, 0 included
}

TEST(ClusterConfig, AnEmptyFileIsAllDefaults) {
  auto c = ParseClusterConfig("", "empty.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->head.port, 6380);
  EXPECT_TRUE(c->node_types.empty());
  EXPECT_TRUE(std::isinf(c->budget.per_hour));
  EXPECT_TRUE(std::isinf(c->budget.total));
  EXPECT_EQ(c->upscaling_speed, 1.0);
}

TEST(ClusterConfig, ErrorsNameFileLineAndKey) {
  // An unknown key, at its own line and column, with the keys that are known there.
  std::string e = ErrorOf(With("    max_count: 20\n", "    max_count: 20\n    max_cuont: 3\n"));
  EXPECT_EQ(e.rfind("c.yaml:34:5: unknown key 'node_types[cpu-8].max_cuont'", 0), 0u) << e;
  EXPECT_NE(e.find("max_count"), std::string::npos) << e;
  e = ErrorOf(With("upscaling_speed: 2", "upscaling_sped: 2"));
  EXPECT_EQ(e.rfind("c.yaml:49:1: unknown key 'upscaling_sped'", 0), 0u) << e;
  // A key of another provider kind.
  e = ErrorOf(With("    partition: gpu\n", "    partition: gpu\n    boot_delay_s: 1\n"));
  EXPECT_NE(e.find("unknown key 'providers.hpc.boot_delay_s'"), std::string::npos) << e;

  // Wrong types.
  e = ErrorOf(With("price_per_hour: 0.34", "price_per_hour: cheap"));
  EXPECT_EQ(e,
            "c.yaml:32:21: node_types[cpu-8].price_per_hour must be a number from 0 to "
            "1e+06, got 'cheap'");
  e = ErrorOf(With("spot: true", "spot: maybe"));
  EXPECT_EQ(e, "c.yaml:42:11: node_types[a100].spot must be true or false, got 'maybe'");
  e = ErrorOf(With("learn_idle_timeout: true", "learn_idle_timeout: 1h"));
  EXPECT_EQ(e, "c.yaml:44:25: node_types[a100].learn_idle_timeout must be true or false, got '1h'");
  e = ErrorOf(With("launch_after_waiting_s: 90", "launch_after_waiting_s: -5"));
  EXPECT_EQ(e.rfind("c.yaml:45:29: node_types[a100].launch_after_waiting_s must be", 0), 0u) << e;
  e = ErrorOf(With("launch_after_waiting_s: 90", "launch_after_wait_s: 90"));
  EXPECT_EQ(e.rfind("c.yaml:45:5: unknown key 'node_types[a100].launch_after_wait_s'", 0), 0u) << e;
  e = ErrorOf(With("  port: 7000", "  port: [7000]"));
  EXPECT_EQ(e, "c.yaml:4:9: head.port must be a whole number, got a list");
  e = ErrorOf(With("sbatch_args: [\"--time=01:00:00\"]", "sbatch_args: --time=1"));
  EXPECT_NE(e.find("providers.hpc.sbatch_args must be a list of strings"), std::string::npos) << e;
  e = ErrorOf(
      With("head:\n  host: 10.0.0.1\n  port: 7000\n  data_dir: state/head\n", "head: 10.0.0.1\n"));
  EXPECT_NE(e.find("head must be a mapping"), std::string::npos) << e;

  // Impossible values.
  e = ErrorOf(With("    min_count: 1\n", "    min_count: 5\n"));
  EXPECT_EQ(e, "c.yaml:41:16: node_types[a100].max_count (4) is less than min_count (5)");
  e = ErrorOf(With("price_per_hour: 2.5", "price_per_hour: -1"));
  EXPECT_NE(e.find("c.yaml:38:21: node_types[a100].price_per_hour must be a number from 0"),
            std::string::npos)
      << e;
  e = ErrorOf(With("resources: CPU=8,memory=32G", "resources: CPU=0"));
  EXPECT_NE(e.find("node_types[cpu-8].resources has no amount above 0: no work could use"),
            std::string::npos)
      << e;
  e = ErrorOf(With("resources: CPU=8,memory=32G", "resources: CPU=8,GPU=0.5"));
  EXPECT_NE(e.find("GPU count must be a whole number"), std::string::npos) << e;
  e = ErrorOf(With("    resources: CPU=8,memory=32G\n", ""));
  EXPECT_EQ(e.rfind("c.yaml:28:5: node_types[cpu-8] needs resources", 0), 0u) << e;
  e = ErrorOf(With("provider: hpc", "provider: azure"));
  EXPECT_EQ(e,
            "c.yaml:35:15: node_types[a100].provider 'azure' is not defined under providers: "
            "(defined: aws, here, hpc)");
  e = ErrorOf(With("kind: slurm", "kind: gcp"));
  EXPECT_NE(e.find("providers.hpc.kind 'gcp' is not a provider this build knows"),
            std::string::npos)
      << e;
  e = ErrorOf(With("name: a100", "name: cpu-8"));
  EXPECT_EQ(e, "c.yaml:34:11: node_types[1].name 'cpu-8' is already the name of node_types[0]");
  e = ErrorOf(With("gpu_model: A100", "gpu_model: A100\n    labels: gpu_model=H100"));
  EXPECT_NE(e.find("gpu_model=H100 disagrees with gpu_model: A100"), std::string::npos) << e;
  e = ErrorOf(With("resources: CPU=8,memory=32G", "resources: CPU=8\n    gpu_model: T4"));
  EXPECT_NE(e.find("node_types[cpu-8].gpu_model is set but resources have no GPU"),
            std::string::npos)
      << e;
  e = ErrorOf(With("labels: site=cloud,region=eu-west-1", "labels: cumulus.node_type=x"));
  EXPECT_NE(e.find("'cumulus.node_type' is reserved"), std::string::npos) << e;
  e = ErrorOf(With("per_hour: 10", "per_hour: 1"));
  EXPECT_NE(e.find("node_types[a100].price_per_hour (2.5) is more than budget.per_hour (1)"),
            std::string::npos)
      << e;
  e = ErrorOf(With("failure_rate: 0.25", "failure_rate: 1.5"));
  EXPECT_NE(e.find("providers.here.failure_rate must be a number from 0 to 1, got '1.5'"),
            std::string::npos)
      << e;
  e = ErrorOf(With("[/usr/bin/aws-list]", "[/usr/bin/aws-list, \"{zone}\"]"));
  EXPECT_NE(e.find("unknown placeholder {zone}"), std::string::npos) << e;
  // {metrics_port} is empty without metrics: a whole argument of it would be an empty value.
  e = ErrorOf(
      With("[/usr/bin/aws-list]", "[/usr/bin/aws-list, --metrics-port, \"{metrics_port}\"]"));
  EXPECT_NE(e.find("providers.aws.list: {metrics_port} cannot be an argument of its own"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("CUMULUS_METRICS_PORT"), std::string::npos) << e;
  e = ErrorOf(With("    terminate: [scripts/terminate.sh, \"{instance_id}\"]\n", ""));
  EXPECT_NE(e.find("providers.aws (kind: command) needs terminate"), std::string::npos) << e;
  e = ErrorOf(With("    max_count: 20\n", "    max_count: 20\n    max_count: 21\n"));
  EXPECT_NE(e.find("c.yaml:34:5: node_types[cpu-8].max_count is given twice"), std::string::npos)
      << e;
  e = ErrorOf(With("upscaling_speed: 2", "upscaling_speed: 0"));
  EXPECT_NE(e.find("upscaling_speed must be a number from 0.01 to 1000"), std::string::npos) << e;
}

TEST(ClusterConfig, SyntaxErrorsHaveAPosition) {
  std::string e = ErrorOf("head:\n  port: [1, 2\nbudget: {}\n");
  EXPECT_EQ(e.rfind("c.yaml:", 0), 0u) << e;
  EXPECT_NE(e.find("not valid YAML"), std::string::npos) << e;
  e = ErrorOf("- just\n- a list\n");
  EXPECT_NE(e.find("the file must be a mapping"), std::string::npos) << e;
}

TEST(ClusterConfig, LoadReadsAFileAndNamesIt) {
  TempDir dir;
  std::string path = dir.path() + "/bad.yaml";
  std::ofstream(path) << "budget:\n  per_hour: lots\n";
  auto c = LoadClusterConfig(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            path + ":2:13: budget.per_hour must be a number from 0 to 1e+12, got 'lots'");
  auto missing = LoadClusterConfig(dir.path() + "/none.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot read the cluster file"), std::string::npos);
  // A directory opens as a stream on Linux, and reads as an empty (all-defaults) file.
  auto directory = LoadClusterConfig(dir.path());
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.status().message(), "cannot read the cluster file " + dir.path() +
                                              ": it is a directory; give the YAML "
                                              "file in it");
  // What was read is kept, for `cumulus down` to parse again when the file has changed.
  std::ofstream(path) << "cluster_name: kept\n";
  auto good = LoadClusterConfig(path);
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->text, "cluster_name: kept\n");
}

TEST(ClusterConfig, MinCountsOverTheHourlyBudgetAreAnError) {
  // a100: 2.5/h; four of them are exactly the budget of 10/h.
  std::string four = With("    min_count: 1\n", "    min_count: 4\n");
  EXPECT_TRUE(ParseClusterConfig(four, "c.yaml").ok());
  std::string over = four;
  over.replace(over.find("per_hour: 10"), 12, "per_hour: 9");
  EXPECT_EQ(ErrorOf(over),
            "c.yaml:47:13: budget.per_hour (9) is less than the min_count nodes cost (10 per "
            "hour): they could never all run; raise the budget or lower min_count");
}

TEST(ClusterConfig, ATotalBudgetBelowOneLaunchOfATypeIsAnError) {
  // cpu-8: 0.34/h, booting 300 s and idle 600 s (twice its boot): 0.085 a launch at least.
  std::string total = With("  total: 1000\n", "  total: 0.09\n");
  // a100: 2.5/h, boot 120 s; its idle timeout is learned (it may fall to 0): 0.0833.
  EXPECT_TRUE(ParseClusterConfig(total, "c.yaml").ok()) << ErrorOf(total);
  total.replace(total.find("total: 0.09"), 11, "total: 0.08");
  EXPECT_EQ(ErrorOf(total),
            "c.yaml:48:10: budget.total (0.08) is less than one launch of node_types[cpu-8] costs "
            "(0.085: its price for boot_time_s and idle_timeout_s): this type could never be "
            "launched; raise the budget or remove the type");
  std::string learned = With("    learn_idle_timeout: true\n", "");
  learned.replace(learned.find("total: 1000"), 11, "total: 0.2");
  EXPECT_NE(ErrorOf(learned).find("budget.total (0.2) is less than one launch of node_types[a100] "
                                  "costs (0.5: its price for boot_time_s and idle_timeout_s)"),
            std::string::npos)
      << ErrorOf(learned);
}

TEST(ClusterConfig, TheShippedExampleParses) {
  auto c = LoadClusterConfig(std::string(CUMULUS_SOURCE_DIR) + "/examples/burst.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->onprem_nodes.size(), 1u);
  EXPECT_GE(c->node_types.size(), 2u);
  EXPECT_EQ(c->providers.at("local").kind, ProviderKind::kLocal);
  EXPECT_FALSE(std::isinf(c->budget.per_hour));
}

}  // namespace
}  // namespace cumulus
