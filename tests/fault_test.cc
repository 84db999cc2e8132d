// Faults injected for real: worker processes, node daemons, the head and a driver are SIGKILLed
// while fault_driver.cc runs work on a cluster of `cumulus start` processes on loopback, and the
// driver checks that nothing was lost (see the scenarios there).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cluster_fixture.h"

namespace cumulus {
namespace {

class FaultTest : public ClusterTest {
 protected:
  // The driver program (tens of MiB with debug information) travels through the nodes' stores.
  void SetUp() override {
    ClusterTest::SetUp();
    head_store_memory_ = "256M";
    node_store_memory_ = "256M";
  }
  // Starts fault_driver with `args`, attached to the node whose core socket is `socket`.
  std::unique_ptr<Subprocess> Driver(std::vector<std::string> args, const std::string& socket,
                                     const std::string& max_lineage_depth = "",
                                     const std::string& head_wait_ms = "") {
    std::vector<std::pair<std::string, std::string>> env;
    if (!max_lineage_depth.empty()) env.push_back({"CUMULUS_MAX_LINEAGE_DEPTH", max_lineage_depth});
    if (!head_wait_ms.empty()) env.push_back({"CUMULUS_HEAD_WAIT_MS", head_wait_ms});
    return StartDriver("fault_driver", std::move(args), socket, env);
  }
  // `pid` and every process under it (children found through /proc), `pid` first.
  static std::vector<pid_t> Tree(pid_t pid) {
    std::vector<pid_t> tree = {pid};
    for (size_t i = 0; i < tree.size(); ++i) {
      for (auto& e : std::filesystem::directory_iterator("/proc")) {
        pid_t child = std::atoi(e.path().filename().c_str());
        if (child <= 0) continue;
        std::ifstream stat(e.path() / "stat");
        std::string line;
        std::getline(stat, line);
        size_t paren = line.rfind(')');
        if (paren == std::string::npos) continue;
        std::istringstream rest(line.substr(paren + 2));
        char state;
        pid_t ppid = 0;
        rest >> state >> ppid;
        if (ppid == tree[i]) tree.push_back(child);
      }
    }
    return tree;
  }
  // Sends `sig` to `pid` and every process under it.
  static void SignalTree(pid_t pid, int sig) {
    for (pid_t p : Tree(pid)) kill(p, sig);
  }
  // Whether no thread of `pid` can run: each is stopped (T, or t under a tracer) or exiting (Z,
  // X); a process that is gone counts too.
  static bool AllThreadsStopped(pid_t pid) {
    std::error_code error;
    std::filesystem::directory_iterator tasks("/proc/" + std::to_string(pid) + "/task", error);
    if (error) return true;
    for (auto& e : tasks) {
      std::ifstream stat(e.path() / "stat");
      std::string line;
      std::getline(stat, line);
      size_t paren = line.rfind(')');
      if (paren == std::string::npos || paren + 2 >= line.size()) continue;  // gone meanwhile
      if (std::string("TtZX").find(line[paren + 2]) == std::string::npos) return false;
    }
    return true;
  }
  // SIGSTOPs `pid` and every process under it, and returns once none of their threads can run.
  // kill() returns before that: a process-directed SIGSTOP wakes one thread, which stops the
  // others when it next runs, and until then the process still answers (fault_test saw a hung
  // head answer a request sent 1 ms after kill() had returned). A process forked meanwhile is
  // found and stopped too. False if they are not all stopped within `timeout`.
  static bool StopTree(pid_t pid, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::vector<pid_t> signalled;
    while (true) {
      std::vector<pid_t> tree = Tree(pid);
      bool grew = false;
      for (pid_t p : tree) {
        if (std::find(signalled.begin(), signalled.end(), p) != signalled.end()) continue;
        kill(p, SIGSTOP);
        signalled.push_back(p);
        grew = true;
      }
      if (!grew) return true;  // all stopped (below), and none of them can fork any more
      bool stopped = WaitUntil(
          [&] {
            return std::all_of(tree.begin(), tree.end(),
                               [](pid_t p) { return AllThreadsStopped(p); });
          },
          timeout);
      if (!stopped) return false;
    }
  }
};

TEST_F(FaultTest, WorkerKilledTaskRetriedActorRestarted) {
  auto head = StartHead({"--resources", "CPU=2"});
  std::string head_id = View().nodes.empty() ? "" : View().nodes[0].id.Hex();
  auto driver = Driver({"--scenario=worker_death"}, CoreSocket(head_id));
  ExpectChecks(driver->ReadAll(120s),
               {"task_retried_after_sigkill", "task_without_retries_fails",
                "actor_first_not_restarted", "actor_restarted_after_sigkill"});
  // `cumulus status` lists what died, where and why.
  std::string status;
  EXPECT_TRUE(WaitUntil(
      [&] {
        Cli({"status", "--address", address_, "--token-file", token_file_}, &status);
        return status.find("running DieOnce killed by signal 9") != std::string::npos;
      },
      10s))
      << status;
}

TEST_F(FaultTest, NodeKilledWorkMovesAndObjectsAreRebuilt) {
  auto head = StartHead({"--resources", "CPU=1"});
  std::string head_id = View().nodes.empty() ? "" : View().nodes[0].id.Hex();
  std::string a, b;
  auto victim = StartNode("a", {"--resources", "CPU=3"}, &a);
  auto node_b = StartNode("b", {"--resources", "CPU=2"}, &b);
  ASSERT_FALSE(a.empty() || b.empty());
  // Lineage of up to 3 tasks is kept: the driver's 4-deep chain checks what happens beyond.
  auto driver = Driver({"--scenario=node_death", "--victim=" + a}, CoreSocket(head_id), "3");
  ASSERT_TRUE(driver->WaitForLine("READY", 120s)) << driver->ReadAll(1s);
  // The state API sees the tasks running there (nodes report every 2 s).
  std::string tasks;
  EXPECT_TRUE(WaitUntil(
      [&] {
        Cli({"list", "tasks", "--address", address_, "--token-file", token_file_, "--filter",
             "node=" + a, "--filter", "state=RUNNING"},
            &tasks);
        return Count(tasks, "SleepUntil") == 2;
      },
      10s))
      << tasks;

  victim->Kill(SIGKILL);
  (void)victim->Wait(10s);
  Touch("killed");
  Touch("go");
  ExpectChecks(driver->ReadAll(180s),
               {"setup_on_victim", "argument_rebuilt_for_new_task", "lineage_rebuilt_recursively",
                "too_deep_is_object_lost", "actor_result_is_object_lost",
                "running_tasks_retried_elsewhere", "actor_restarted_elsewhere", "new_work_runs"});
  EXPECT_TRUE(WaitForState(a, NodeState::kDead, 15s)) << "the killed node was not declared dead";
  std::string status;
  Cli({"status", "--json", "--address", address_, "--token-file", token_file_}, &status);
  EXPECT_NE(status.find("\"node\":\"" + a.substr(0, 8) + "\",\"what\":\"node DEAD"),
            std::string::npos)
      << status;
}

TEST_F(FaultTest, HungNodeIsDeclaredDeadAndItsActorsRestartElsewhere) {
  // A short heartbeat timeout: the hung node is DEAD after 3 s of silence.
  auto head = StartHead(
      {"--resources", "CPU=1", "--heartbeat-interval-ms", "500", "--heartbeat-timeout-ms", "3000"});
  std::string head_id = View().nodes.empty() ? "" : View().nodes[0].id.Hex();
  std::string a, b;
  auto victim = StartNode("a", {"--resources", "CPU=2"}, &a);
  auto node_b = StartNode("b", {"--resources", "CPU=2"}, &b);
  ASSERT_FALSE(a.empty() || b.empty());
  auto driver = Driver({"--scenario=hung_node", "--victim=" + a}, CoreSocket(head_id));
  ASSERT_TRUE(driver->WaitForLine("READY", 120s)) << driver->ReadAll(1s);
  // The whole machine freezes: the node and the workers it started (thawed again at the end,
  // whatever happens, so that the test can clean up).
  struct Thaw {
    pid_t pid;
    ~Thaw() { SignalTree(pid, SIGCONT); }
  } thaw{victim->pid()};
  ASSERT_TRUE(StopTree(victim->pid())) << "the node and its workers did not all stop";
  Touch("stopped");
  ExpectChecks(driver->ReadAll(120s), {"actor_on_victim", "hung_node_actor_restarted_elsewhere"});
  EXPECT_TRUE(WaitForState(a, NodeState::kDead, 15s));
}

// The driver's node has no CPU; an actor of one CPU runs on b or c and that machine dies (the
// node and its workers SIGKILLed): new actors of one CPU go to the other node, both at once
// (before the head declares the node dead) and after. The lost actor (no restarts) is still
// listed and described, DEAD with its node and why: its owner's node keeps that end, since the
// node it ran on is gone.
TEST_F(FaultTest, NodeKilledNewActorsGoToTheNodeLeft) {
  auto head = StartHead({"--resources", "CPU=0"});
  std::string head_id = HeadNodeId();
  std::string b, c;
  auto node_b = StartNode("b", {"--resources", "CPU=1"}, &b);
  auto node_c = StartNode("c", {"--resources", "CPU=1"}, &c);
  ASSERT_FALSE(b.empty() || c.empty());
  auto driver = Driver({"--scenario=new_actor_after_node_death"}, CoreSocket(head_id));
  auto ready = driver->WaitForLine("READY", 120s);
  ASSERT_TRUE(ready) << driver->ReadAll(1s);
  std::string where = Field(*ready, "where");
  ASSERT_TRUE(where == b || where == c) << *ready << driver->ReadAll(1s);
  auto& victim = where == b ? node_b : node_c;
  SignalTree(victim->pid(), SIGKILL);
  (void)victim->Wait(10s);
  Touch("killed");
  EXPECT_TRUE(WaitForState(where, NodeState::kDead, 30s)) << "the head never saw the node die";
  Touch("dead");
  std::string lost = Field(*ready, "actor");
  ASSERT_EQ(lost.size(), 2 * ActorId::kSize) << *ready;
  auto cli = [&](std::vector<std::string> args, std::string* out) {
    args.insert(args.end(), {"--address", address_, "--token-file", token_file_});
    return Cli(args, out);
  };
  // The driver reports the end when it hears of the death, which it may after the head said so.
  std::string out;
  EXPECT_TRUE(WaitUntil(
      [&] {
        cli({"list", "actors", "--filter", "state=DEAD", "--filter", "node=" + where.substr(0, 8),
             "--json"},
            &out);
        return out.find("\"actor\":\"" + lost + "\"") != std::string::npos;
      },
      30s))
      << out;
  EXPECT_EQ(Count(out, "\"actor\":"), 1) << out;
  EXPECT_NE(out.find("\"node\":\"" + where + "\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"death\":\"out of restarts (max_restarts 0): its node " + where +
                     " was declared dead by the head"),
            std::string::npos)
      << out;
  ASSERT_EQ(cli({"describe", "actor", lost.substr(0, 16)}, &out), 0) << out;
  EXPECT_NE(out.find("state:    DEAD on node " + where.substr(0, 8) + ", worker pid unknown"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("death:    out of restarts (max_restarts 0): its node " + where),
            std::string::npos)
      << out;
  ExpectChecks(driver->ReadAll(120s),
               {"call_on_killed_node_fails", "new_actor_at_once_on_the_live_node",
                "new_actor_after_dead_on_the_live_node"});
}

TEST_F(FaultTest, HeadKilledAndRestartedWorkGoesOn) {
  auto head = StartHead({"--no-node"});
  int port = std::atoi(address_.substr(address_.rfind(':') + 1).c_str());
  std::string a, b;
  auto node_a = StartNode("a", {"--resources", "CPU=2"}, &a);
  auto node_b = StartNode("b", {"--resources", "CPU=2"}, &b);
  ASSERT_FALSE(a.empty() || b.empty());
  auto driver = Driver({"--scenario=head_restart"}, CoreSocket(a));
  ASSERT_TRUE(driver->WaitForLine("READY", 120s)) << driver->ReadAll(1s);

  head->Kill(SIGKILL);
  (void)head->Wait(10s);
  Touch("head_down");
  ASSERT_TRUE(driver->WaitForLine("HEADLESS_DONE", 120s)) << driver->ReadAll(1s);
  // Back on the same port and data dir; the nodes and the driver find it by themselves.
  head = StartHead({"--no-node"}, port);
  ExpectChecks(driver->ReadAll(180s),
               {"tasks_run_while_head_down", "actor_calls_while_head_down",
                "named_actor_after_head_restart", "get_actor_after_head_restart"});
  EXPECT_TRUE(WaitForState(a, NodeState::kAlive, 30s));
  EXPECT_TRUE(WaitForState(b, NodeState::kAlive, 30s));
}

// The head is gone for good (killed, or hung): calls that need it fail after the wait
// (CUMULUS_HEAD_WAIT_MS, 2 s here; 60 s by default, checked in workers/head_session_test.cc).
TEST_F(FaultTest, HeadKilledForGoodCallsThatNeedItFailAfterTheWait) {
  auto head = StartHead({"--no-node"});
  std::string a;
  auto node_a = StartNode("a", {"--resources", "CPU=2"}, &a);
  ASSERT_FALSE(a.empty());
  auto driver = Driver({"--scenario=head_gone"}, CoreSocket(a), "", "2000");
  ASSERT_TRUE(driver->WaitForLine("READY", 120s)) << driver->ReadAll(1s);
  head->Kill(SIGKILL);
  (void)head->Wait(10s);
  Touch("head_gone");
  ExpectChecks(driver->ReadAll(60s),
               {"named_actor_while_the_head_is_up", "get_actor_fails_after_the_wait",
                "named_actor_fails_after_the_wait", "actor_calls_go_on_without_the_head"});
}

TEST_F(FaultTest, HeadHungCallsThatNeedItFailAfterTheWait) {
  auto head = StartHead({"--no-node"});
  std::string a;
  auto node_a = StartNode("a", {"--resources", "CPU=2"}, &a);
  ASSERT_FALSE(a.empty());
  auto driver = Driver({"--scenario=head_gone"}, CoreSocket(a), "", "2000");
  ASSERT_TRUE(driver->WaitForLine("READY", 120s)) << driver->ReadAll(1s);
  // It accepts connections (the kernel does) and answers nothing once all its threads have
  // stopped; thawed at the end, whatever happens, so that the test can clean up.
  struct Thaw {
    pid_t pid;
    ~Thaw() { SignalTree(pid, SIGCONT); }
  } thaw{head->pid()};
  ASSERT_TRUE(StopTree(head->pid())) << "the head did not stop";
  Touch("head_gone");
  ExpectChecks(driver->ReadAll(60s),
               {"named_actor_while_the_head_is_up", "get_actor_fails_after_the_wait",
                "named_actor_fails_after_the_wait", "actor_calls_go_on_without_the_head"});
}

TEST_F(FaultTest, DriverKilledItsJobIsCleanedUpEverywhere) {
  auto head = StartHead({"--resources", "CPU=2"});
  std::string head_id = View().nodes.empty() ? "" : View().nodes[0].id.Hex();
  std::string a, b, ready_a, ready_b;
  auto node_a = StartNode("a", {"--resources", "CPU=2"}, &a, &ready_a);
  auto node_b = StartNode("b", {"--resources", "CPU=2"}, &b, &ready_b);
  ASSERT_FALSE(a.empty() || b.empty());
  std::vector<std::string> stores = {
      dir_.path() + "/head/node-" + std::to_string(head->pid()) + "/store.sock",
      Field(ready_a, "store_socket"), Field(ready_b, "store_socket")};
  auto driver = Driver({"--scenario=driver_death"}, CoreSocket(head_id));
  auto ready = driver->WaitForLine("READY", 120s);
  ASSERT_TRUE(ready) << driver->ReadAll(1s);
  // READY keeper=PID group=ID sleepers PID... pids PID...
  auto pids_between = [&](const std::string& from, const std::string& to) {
    std::vector<pid_t> out;
    size_t at = ready->find(from);
    if (at == std::string::npos) return out;
    at += from.size();
    size_t end = to.empty() ? std::string::npos : ready->find(to, at);
    std::istringstream in(ready->substr(at, end == std::string::npos ? end : end - at));
    for (pid_t p; in >> p;) out.push_back(p);
    return out;
  };
  std::vector<pid_t> actor_pids = pids_between(" pids", "");
  std::vector<pid_t> sleeper_pids = pids_between(" sleepers", " pids");
  ASSERT_EQ(actor_pids.size(), 4u) << *ready;    // 3 spread, 1 in the group's first bundle
  ASSERT_EQ(sleeper_pids.size(), 4u) << *ready;  // 3 on free CPUs, 1 in the second bundle
  pid_t keeper = std::atoi(Field(*ready, "keeper").c_str());
  ASSERT_GT(keeper, 0) << *ready;
  std::string group = Field(*ready, "group");
  ASSERT_NE(group, "none") << *ready;
  int stored = 0;
  for (auto& s : stores) stored += std::max(0, StoredObjects(s));
  EXPECT_GE(stored, 7) << "the driver's objects should be in the stores before it dies";
  std::string groups;
  Cli({"list", "placement-groups", "--json", "--address", address_, "--token-file", token_file_},
      &groups);
  EXPECT_NE(groups.find(group), std::string::npos) << "the group is not listed: " << groups;
  auto cpus_in_use = [&] {
    double used = 0;
    for (auto& n : View().nodes) used += n.total.Get("CPU") - n.available.Get("CPU");
    return used;
  };
  // The group's 2 CPUs and the 3 sleeping tasks' (nodes report every heartbeat).
  EXPECT_TRUE(WaitUntil([&] { return cpus_in_use() == 5; }, 30s)) << cpus_in_use();

  driver->Kill(SIGKILL);
  (void)driver->Wait(10s);
  // Its actors' and tasks' processes go, the group is released and its CPUs are free again, and
  // every store lets go of its objects.
  for (pid_t p : actor_pids) {
    EXPECT_TRUE(WaitUntil([&] { return kill(p, 0) != 0; }, 30s)) << "actor process " << p;
  }
  for (pid_t p : sleeper_pids) {
    EXPECT_TRUE(WaitUntil([&] { return kill(p, 0) != 0; }, 30s)) << "task worker " << p;
  }
  EXPECT_TRUE(WaitUntil(
      [&] {
        Cli({"list", "placement-groups", "--json", "--address", address_, "--token-file",
             token_file_},
            &groups);
        return groups.find(group) == std::string::npos;
      },
      30s))
      << "the dead driver's group is still recorded: " << groups;
  EXPECT_TRUE(WaitUntil([&] { return cpus_in_use() == 0; }, 30s))
      << cpus_in_use() << " CPUs still held after the driver died";
  for (auto& s : stores) {
    EXPECT_TRUE(WaitUntil([&] { return StoredObjects(s) == 0; }, 30s))
        << "objects left in " << s << ": " << StoredObjects(s);
  }
  // The detached actor stays, another program finds it, and Kill ends it.
  EXPECT_EQ(kill(keeper, 0), 0) << "the detached actor died with its driver";
  std::string actors;
  Cli({"list", "actors", "--address", address_, "--token-file", token_file_}, &actors);
  EXPECT_NE(actors.find("keeper"), std::string::npos) << actors;
  auto second = Driver({"--scenario=keeper"}, CoreSocket(head_id));
  ExpectChecks(second->ReadAll(120s), {"detached_actor_outlived_its_job", "detached_actor_killed",
                                       "detached_actor_name_freed", "detached_needs_a_name"});
  EXPECT_TRUE(WaitUntil([&] { return kill(keeper, 0) != 0; }, 30s)) << "Kill left it running";
}

// The monitor watches the workers' private memory against 800 MiB (CUMULUS_MEMORY_WORKER_LIMIT)
// with a threshold of 75% (600 MiB), so nothing depends on the machine's size or on what else
// runs on it: the three tasks hold 500 MiB (and the workers a few MiB of their own), the 200 MiB
// an actor's constructor takes crosses the threshold, and killing the newest task that may be
// retried (200 MiB) brings the workers back under it (fault_driver.cc, MemoryVictims).
TEST_F(FaultTest, MemoryPressureKillsTheNewestRetriableTaskNeverAnOlderOneOrAnActor) {
  setenv("CUMULUS_MEMORY_WORKER_LIMIT", "800M", 1);
  setenv("CUMULUS_MEMORY_USAGE_THRESHOLD", "0.75", 1);
  setenv("CUMULUS_MEMORY_MONITOR_MS", "50", 1);
  auto head = StartHead({"--resources", "CPU=4"});
  for (const char* v : {"CUMULUS_MEMORY_WORKER_LIMIT", "CUMULUS_MEMORY_USAGE_THRESHOLD",
                        "CUMULUS_MEMORY_MONITOR_MS"}) {
    unsetenv(v);
  }
  Subprocess submit(
      {kCumulus, "submit", "--address", address_, "--token-file", token_file_, "--wait", "--",
       std::string(CUMULUS_BIN_DIR) + "/fault_driver", "--scenario=memory", "--dir=" + dir_.path()},
      /*merge_stderr=*/true);
  std::string out = submit.ReadAll(180s);
  auto rc = submit.Wait(30s);
  EXPECT_TRUE(rc && WIFEXITED(*rc) && WEXITSTATUS(*rc) == 0) << out;
  ExpectChecks(out, {"tasks_and_actor_hold_memory", "newest_retriable_task_killed_and_retried",
                     "older_and_unretriable_tasks_left_alone", "actor_left_alone"});
  // HOLDING pids A C B D: C was killed, once; the job's log says so and why.
  std::string holding = out.substr(std::min(out.find("HOLDING pids"), out.size()));
  std::istringstream in(holding.substr(std::min<size_t>(12, holding.size())));
  pid_t a = 0, c = 0;
  in >> a >> c;
  ASSERT_GT(c, 0) << out;
  EXPECT_NE(out.find("task Hold (pid " + std::to_string(c) + ") was killed by node"),
            std::string::npos)
      << out;
  EXPECT_EQ(Count(out, "to free memory"), 1) << "one kill, of the newest retriable task: " << out;
  EXPECT_NE(out.find("of its workers' memory limit used, threshold 75.0%"), std::string::npos)
      << out;
  EXPECT_NE(out.find("it will be retried"), std::string::npos) << out;
}

}  // namespace
}  // namespace cumulus
