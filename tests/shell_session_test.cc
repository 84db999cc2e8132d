// The "done when" of the interactive shell (issue 14), in one session on a pseudo-terminal: a
// user sits in `cumulus shell` while a tuning run and a burst go on (a head with an on-prem node
// of CPU=1, `cumulus up FILE --address` running the autoscaler with the local provider, and
// tests/shell_session_driver.cc, whose trials need CPU=2, so a cloud node is launched for them),
// and
//   - watches the launched node come in `top`, and go once the trials ended and it idled;
//   - lists the pending tasks and sees with `describe task` why one of them is pending;
//   - follows one trial's output with `logs JOB --trial T --follow`, and Ctrl-C returns to the
//     prompt;
//   - completes trial ids with Tab, fetched live from the experiment's journal (`trials EXP
//     <Tab>`, `stop trial EXP/<Tab>`, `logs JOB --trial <Tab>`);
//   - calls a function of the running job (`call JOB Square 7` prints 49);
//   - kills the job's named actor (`kill counter`, confirmed), after which a call to it fails.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "cluster_fixture.h"
#include "local_instances.h"
#include "pty_terminal.h"
#include "runtime/autoscaler/local_provider.h"

namespace cumulus {
namespace {

class ShellSessionTest : public ClusterTest {
 protected:
  // The driver's program (tens of MiB with debug info) is shipped through the object store: to
  // the head's node that it attaches to, and from there to the launched node.
  ShellSessionTest() { head_store_memory_ = "256M"; }

  std::vector<std::string> Auth() { return {"--address", address_, "--token-file", token_file_}; }

  // The burst: one cloud type, cpu-small (CPU=4, site=cloud) on the local provider (node daemons
  // as processes here), booting at once and leaving after 2 s idle.
  std::string WriteClusterFile() {
    std::string path = dir_.path() + "/cluster.yaml";
    std::ofstream(path) << "cluster_name: session\n"
                           "head:\n  host: 127.0.0.1\n  port: 0\n"
                           "providers:\n"
                           "  local:\n    kind: local\n    boot_delay_s: 0\n"
                           "    state_dir: provider\n    object_store_memory: 256M\n"
                           "node_types:\n"
                           "  - name: cpu-small\n    provider: local\n    resources: CPU=4\n"
                           "    labels: site=cloud\n    price_per_hour: 1.0\n    boot_time_s: 1\n"
                           "    max_count: 1\n    idle_timeout_s: 2\n";
    return path;
  }

  // The provider's instances of this cluster that are pending or running.
  std::vector<Instance> Live() {
    return LiveLocalInstances(&provider_, kCumulus, dir_.path() + "/provider", "session");
  }

  void TearDown() override {
    if (monitor_) monitor_->Kill(SIGKILL);
    for (auto& in : Live()) (void)provider_->Terminate(in.id, SystemClock::Get().Now() + 10s);
  }

  // What the experiment and the job say (for a failure's message).
  std::string Explain(const std::string& job) {
    std::string trials, logs;
    Cli({"trials", "session", "--address", address_, "--token-file", token_file_}, &trials);
    Cli({"logs", job, "--address", address_, "--token-file", token_file_}, &logs);
    return "\ncumulus trials session:\n" + trials + "\ncumulus logs " + job + ":\n" + logs;
  }

  std::unique_ptr<Subprocess> monitor_;
  std::unique_ptr<LocalProvider> provider_;
};

// The highest N of the lines "trial T tick N" in `text`; 0 if none.
int64_t LastTick(const std::string& text, const std::string& trial) {
  std::regex line("trial " + trial + " tick ([0-9]+)");
  int64_t last = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it) {
    last = std::max<int64_t>(last, std::stoll((*it)[1].str()));
  }
  return last;
}

bool HasLaunchedNode(const std::string& frame) {
  return frame.find("cloud/cpu-small") != std::string::npos;
}
// A whole frame of top: its header and the on-prem node's row (the view draws it each time).
bool IsTopFrame(const std::string& frame) {
  return frame.find("(any key: back to the prompt)") != std::string::npos &&
         frame.find("onprem/-") != std::string::npos;
}

TEST_F(ShellSessionTest, TopDescribeTrialLogsCallAndKillBesideATuningRunAndABurst) {
  auto head = StartHead({"--resources", "CPU=1", "--labels", "site=onprem", "--wait-for-nodes"});
  monitor_ = std::make_unique<Subprocess>(
      std::vector<std::string>{kCumulus, "up", WriteClusterFile(), "--address", address_,
                               "--token-file", token_file_, "--block", "--round-ms", "200"},
      /*merge_stderr=*/true);
  ASSERT_TRUE(monitor_->WaitForLine("cumulus autoscaler ready", 30s)) << monitor_->ReadAll(1s);

  Terminal t(Auth(), dir_.path() + "/history");
  ASSERT_TRUE(t.started());
  ASSERT_TRUE(t.WaitFor("cumulus> ")) << t.Raw();

  // top, live: the on-prem node alone; the job starts, and the node launched for its trials
  // comes into the view.
  t.Mark();
  t.Type("top --interval 0.5\n");
  ASSERT_TRUE(t.WaitForFrame([](const std::string& f) { return IsTopFrame(f); })) << t.Since();
  EXPECT_FALSE(HasLaunchedNode(t.LastFrame())) << t.LastFrame();
  auto driver = StartDriver("shell_session_driver", {"--samples=2", "--trial-cpus=2"},
                            CoreSocket(HeadNodeId()));
  auto ready = driver->WaitForLine("READY", 60s);
  ASSERT_TRUE(ready) << driver->ReadAll(1s);
  std::string job = Field(*ready, "job");
  ASSERT_TRUE(
      t.WaitForFrame([](const std::string& f) { return IsTopFrame(f) && HasLaunchedNode(f); }, 40s))
      << "the launched node never showed in top:\n"
      << t.LastFrame() << "\nthe monitor:\n"
      << monitor_->ReadAll(1s);
  t.Mark();
  t.Type("q");
  ASSERT_TRUE(t.WaitFor("cumulus> ")) << t.Since();

  // Why a task is pending: listed, then described.
  t.Mark();
  t.Type("list tasks --filter function=Impossible --json\n");
  ASSERT_TRUE(t.WaitForInOrder({"\"task\":\"", "cumulus> "})) << t.Since();
  std::smatch m;
  std::string listed = t.Since();
  ASSERT_TRUE(std::regex_search(listed, m, std::regex("\"task\":\"([0-9a-f]+)\""))) << listed;
  std::string task = m[1].str();
  t.Mark();
  t.Type("describe task " + task.substr(0, 12) + "\n");
  ASSERT_TRUE(t.WaitForInOrder({"pending:", "autoscaler:", "cumulus> "})) << t.Since();
  std::string described = t.Since();
  EXPECT_NE(described.find("pending:    infeasible: "), std::string::npos) << described;
  EXPECT_NE(described.find("unobtainium"), std::string::npos) << described;
  EXPECT_EQ(described.find("autoscaler: none running"), std::string::npos) << described;

  // One trial's output, followed: what it wrote, then more as it comes; none of the other
  // trial's. Ctrl-C (echoed as ^C) returns to the prompt.
  t.Mark();
  t.Type("logs " + job + " --trial t0001 --follow\n");
  ASSERT_TRUE(t.WaitFor("trial t0001 tick ")) << t.Since() << Explain(job);
  int64_t seen = LastTick(t.Since(), "t0001");
  t.Mark();
  ASSERT_TRUE(t.WaitForInOrder({"trial t0001 tick ", "\n"}, 20s)) << t.Since();
  EXPECT_GT(LastTick(t.Since(), "t0001"), seen) << t.Since();
  t.Type("\x03");
  ASSERT_TRUE(t.WaitForInOrder({"^C", "cumulus> "})) << t.Since();
  EXPECT_EQ(t.Since().find("trial t0002"), std::string::npos) << t.Since();

  // Trial ids by Tab, fetched live: the common part of t0001 and t0002 (or the experiment's
  // name and its slash), then (more Tabs) both listed; Ctrl-C drops each line unrun. (A Tab waits
  // 0.6 s for a fetch: a slow first one is given another Tab.)
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::string trials;
        Cli({"trials", "session", "--address", address_, "--token-file", token_file_}, &trials);
        return trials.find("t0002") != std::string::npos;
      },
      30s))
      << Explain(job);
  auto complete = [&](const std::string& line, const std::string& want) {
    t.Mark();
    t.Type(line + "\t");
    for (int tab = 0; tab < 3 && !t.WaitFor(want, 3s); ++tab) t.Type("\t");
    bool completed = t.Since().find(want) != std::string::npos;
    bool listed = false;
    for (int tab = 0; tab < 3 && !listed; ++tab) {
      t.Type("\t");
      listed = t.WaitForInOrder({"t0001", "t0002"}, 3s);
    }
    std::string screen = t.Since();
    t.Mark();
    t.Type("\x03");
    EXPECT_TRUE(t.WaitForInOrder({"^C", "cumulus> "})) << t.Since();
    return completed && listed ? std::string() : screen;
  };
  EXPECT_EQ(complete("trials session t", "trials session t000"), "");
  EXPECT_EQ(complete("stop trial sess", "stop trial session/"), "");
  EXPECT_EQ(complete("logs " + job + " --trial t", "--trial t000"), "");

  // A function of the running job, called.
  t.Mark();
  t.Type("call " + job + " Square 7\n");
  EXPECT_TRUE(t.WaitForInOrder({"Square 7\n", "49\n", "cumulus> "})) << t.Since();

  // Its named actor, killed (confirmed); a call to it then fails in one line.
  t.Mark();
  t.Type("kill counter\n");
  ASSERT_TRUE(t.WaitFor("[y/N]")) << t.Since();
  t.Type("y\n");
  EXPECT_TRUE(t.WaitForInOrder({"killed actor 'counter'", "cumulus> "})) << t.Since();
  t.Mark();
  t.Type("call counter Increment 1\n");
  EXPECT_TRUE(t.WaitForInOrder({"Increment 1\n", "cumulus: ", "cumulus> "})) << t.Since();

  // The trials end; the launched node idles, is drained and goes: top shows it, then not.
  t.Mark();
  t.Type("top --interval 0.5\n");
  ASSERT_TRUE(
      t.WaitForFrame([](const std::string& f) { return IsTopFrame(f) && HasLaunchedNode(f); }, 10s))
      << t.LastFrame();
  Touch("stop-trials");
  EXPECT_TRUE(t.WaitForFrame(
      [](const std::string& f) { return IsTopFrame(f) && !HasLaunchedNode(f); }, 30s))
      << "the launched node never left top:\n"
      << t.LastFrame() << "\nthe monitor:\n"
      << monitor_->ReadAll(1s);
  t.Mark();
  t.Type("q");
  ASSERT_TRUE(t.WaitFor("cumulus> ")) << t.Since();
  t.Type("exit\n");
  EXPECT_TRUE(WIFEXITED(t.Exit()));

  driver->CloseStdin();
  std::string out = driver->ReadAll(30s);
  EXPECT_NE(out.find("TUNED trials=2 finished=2 failed=0"), std::string::npos) << out;
  EXPECT_NE(out.find("DONE"), std::string::npos) << out;
  // The monitor terminates the instance in a round after its node left (what top showed): wait
  // for that round, which a loaded machine may delay past the driver's end.
  EXPECT_TRUE(WaitUntil([&] { return Live().empty(); }, 30s))
      << "the launched node's instance was not terminated\nthe monitor:\n"
      << monitor_->ReadAll(1s);
}

}  // namespace
}  // namespace cumulus
