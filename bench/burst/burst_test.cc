// The trace reader's errors and the replay's basic promises (bench_burst's building blocks).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "bench/burst/scalers.h"
#include "bench/burst/simulator.h"
#include "bench/burst/trace.h"

namespace cumulus::burst {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

const char* kHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";

TEST(BurstTraceTest, BadInputNamesFileLineAndColumn) {
  EXPECT_EQ(ReadPods("/no/such/file.csv").status().message(),
            "/no/such/file.csv:0:0: cannot open the file (does it exist?)");
  std::string missing = Write("missing.csv", "name,cpu_milli\np,1\n");
  EXPECT_NE(ReadPods(missing).status().message().find(":1:1: missing column 'memory_mib'"),
            std::string::npos);
  std::string bad = Write("bad.csv", std::string(kHeader) + "p0,1000,10,0,0,,LS,Running,5,9,6\n" +
                                         "p1,1000,10,1,lots,,LS,Running,5,9,6\n");
  EXPECT_EQ(ReadPods(bad).status().message(),
            bad + ":3:5: column 'gpu_milli' holds 'lots', not a whole number from 0 to 1000");
  std::string nodes = Write("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn,8000,1024,-1,T4\n");
  EXPECT_NE(ReadNodes(nodes).status().message().find(":2:4: column 'gpu'"), std::string::npos);
}

TEST(BurstTraceTest, PodsReadGpuSharesModelsAndDurations) {
  std::string path =
      Write("pods.csv", std::string(kHeader) + "b,1000,10,1,250,V100M16|T4,LS,Running,100,,\n" +
                            "a,2000,20,2,1000,,LS,Running,50,80,60\n");
  auto pods = ReadPods(path);
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[0].name, "a") << "sorted by arrival";
  EXPECT_EQ((*pods)[0].need.gpu, 2000);
  EXPECT_EQ((*pods)[0].duration, 20) << "deletion - scheduled";
  EXPECT_EQ((*pods)[1].need.gpu, 250);
  EXPECT_EQ((*pods)[1].models, (std::vector<std::string>{"V100M16", "T4"}));
  EXPECT_TRUE(Accepts((*pods)[1], "T4"));
  EXPECT_FALSE(Accepts((*pods)[1], "A100"));
  EXPECT_FALSE(Accepts((*pods)[1], "")) << "a GPU pod needs a GPU node";
}

TEST(BurstReplayTest, OnPremFirstAndCloudOnlyForWhatWaits) {
  std::vector<Pod> pods;
  for (int i = 0; i < 4; ++i) {
    Pod p;
    p.name = "p" + std::to_string(i);
    p.need = Res{1000, 1024, 1000};
    p.arrival = 0;
    p.duration = 3600;
    pods.push_back(p);
  }
  std::vector<TraceNode> onprem{{"n0", Res{8000, 65536, 2000}, "T4"}};
  CloudType t4;
  t4.name = "t4";
  t4.res = Res{8000, 32768, 1000};
  t4.model = "T4";
  t4.price_per_hour = 1.0;
  t4.boot_s = 300;
  std::vector<bool> countable(pods.size(), true);
  auto ours = MakeOurScaler();
  SimResult r = Simulate(pods, onprem, {t4}, ours.get(), 30, countable);
  EXPECT_EQ(r.launches, 2) << "two pods fit on-prem, two wait";
  EXPECT_EQ(r.never_started, 0);
  EXPECT_NEAR(r.wait_p95_s, 300, 1) << "the two cloud pods wait one boot";
  SimResult none = Simulate(pods, onprem, {t4}, nullptr, 30, countable);
  EXPECT_EQ(none.cost, 0);
  EXPECT_EQ(none.wait_p95_s, 3600) << "on-prem only: the last two wait for the first two";
}

TEST(BurstReplayTest, CostSplitsIntoIdleOversizedAndRightSized) {
  // A 4-GPU node launched for a 4-GPU pod (an hour); a 1-GPU pod arrives while it is idle and
  // lands on it for two hours: $7/h of its $8/h pays for more node than the pod needs.
  Pod big, small;
  big.name = "big";
  big.need = Res{1000, 1024, 4000};
  big.duration = 3600;
  small.name = "small";
  small.need = Res{1000, 1024, 1000};
  small.arrival = 300 + 3600 + 10;  // boot, run, then ten seconds idle
  small.duration = 7200;
  std::vector<Pod> pods{big, small};
  CloudType x1, x4;
  x1.name = "x1";
  x1.res = Res{8000, 32768, 1000};
  x1.model = "T4";
  x1.price_per_hour = 1.0;
  x4.name = "x4";
  x4.res = Res{32000, 131072, 4000};
  x4.model = "T4";
  x4.price_per_hour = 8.0;
  std::vector<bool> countable(pods.size(), true);
  auto ours = MakeOurScaler();
  SimResult r = Simulate(pods, {}, {x1, x4}, ours.get(), 30, countable);
  EXPECT_EQ(r.launches, 1) << "the small pod reuses the idle node";
  EXPECT_NEAR(r.oversized_cost, 7.0 * 2, 1e-6) << "$8/h where $1/h would hold it, for 2 h";
  EXPECT_NEAR(r.cost - r.idle_cost - r.oversized_cost, 8.0 * 1 + 1.0 * 2, 1e-6)
      << "right-sized: the big pod's hour at $8, the small pod's two at $1";
  EXPECT_GT(r.idle_cost, 8.0 * 310 / 3600 - 1e-6) << "the boot and the ten seconds idle at least";
}

}  // namespace
}  // namespace cumulus::burst
