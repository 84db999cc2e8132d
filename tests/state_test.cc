// `cumulus list|describe|top` against real processes: filters applied on the nodes before any
// cap, paging, nodes that do not answer, why a task is pending, a retried task's attempts, and a
// row per node in `top` (tests/state_driver.cc makes the work).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cluster_fixture.h"
#include "runtime/core/caller_connection.h"
#include "runtime/core/messages.h"
#include "runtime/node/state_rows.h"

namespace cumulus {
namespace {

class StateTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    head_store_memory_ = "256M";
    node_store_memory_ = "512M";
  }
  std::unique_ptr<Subprocess> Driver(std::vector<std::string> args, const std::string& socket) {
    return StartDriver("state_driver", std::move(args), socket);
  }
  // `cumulus ARGS... --address A --token-file F`; its exit status, output in *out.
  int Cumulus(std::vector<std::string> args, std::string* out) {
    args.insert(args.end(), {"--address", address_, "--token-file", token_file_});
    return Cli(args, out);
  }
  // The values of `"key":"..."` in `json`, in order.
  static std::vector<std::string> Values(const std::string& json, const std::string& key) {
    std::vector<std::string> out;
    std::string k = "\"" + key + "\":\"";
    for (size_t at = json.find(k); at != std::string::npos; at = json.find(k, at + 1)) {
      size_t from = at + k.size();
      out.push_back(json.substr(from, json.find('"', from) - from));
    }
    return out;
  }
};

// More tasks and objects on one node than the old report's cap (1,000): a filter finds the one
// running task however the node's table is ordered; paging walks every object once; a killed
// node is named as not answering while the others' rows are still shown; `top` has a row per
// node with the running task in its node's row.
TEST_F(StateTest, FiltersApplyOnTheNodesBeforeTheCap) {
  const int kTasks = 1500, kObjects = 1500;
  auto head = StartHead({"--resources", "CPU=0"});
  std::string a, b;
  auto node_a = StartNode("a", {"--resources", "CPU=1"}, &a);
  // b holds no CPU, so that none of the tasks queued on a is ever sent there: the checks below
  // count them all on a, also after b is killed (with CPU=1, a view that showed b free could
  // forward some there while the test ran, and those that finished there went with b).
  auto node_b = StartNode("b", {"--resources", "CPU=0"}, &b);
  ASSERT_FALSE(a.empty() || b.empty());
  auto driver = Driver(
      {"--scenario=many", "--n=" + std::to_string(kTasks), "--objects=" + std::to_string(kObjects)},
      CoreSocket(a));
  ASSERT_TRUE(driver->WaitForLine("READY", 120s)) << driver->ReadAll(1s);

  std::string out;
  // The running task, among 1,501 held: wait until it has started on its worker.
  EXPECT_TRUE(WaitUntil(
      [&] {
        Cumulus({"list", "tasks", "--filter", "state=RUNNING", "--json"}, &out);
        return Values(out, "function") == std::vector<std::string>{"HoldUntil"};
      },
      30s))
      << out;
  EXPECT_EQ(Values(out, "node"), std::vector<std::string>{a}) << out;
  // Every held task is counted, though at most --limit are shown.
  ASSERT_EQ(Cumulus({"list", "tasks", "--filter", "function=Quick", "--limit", "10"}, &out), 0)
      << out;
  EXPECT_NE(out.find("(10 of " + std::to_string(kTasks) + " shown; next page: --after "),
            std::string::npos)
      << out;

  // Objects in pages of 1,000: each once, all of them.
  std::set<std::string> seen;
  std::string after;
  for (int page = 0; page < 3; ++page) {
    std::vector<std::string> args = {"list", "objects", "--json", "--limit", "1000"};
    if (!after.empty()) args.insert(args.end(), {"--after", after});
    ASSERT_EQ(Cumulus(args, &out), 0) << out;
    auto ids = Values(out, "object");
    for (auto& id : ids) EXPECT_TRUE(seen.insert(id).second) << "object shown twice: " << id;
    if (ids.size() < 1000) break;
    after = ids.back();
  }
  EXPECT_GE(seen.size(), static_cast<size_t>(kObjects)) << out;

  // An ambiguous prefix is one line naming candidates. The driver's puts share its task's id as
  // a prefix (48 hex digits), and of 1,500 tasks some share a first digit: both by construction.
  std::map<std::string, int> by_task;
  for (auto& id : seen) by_task[id.substr(0, 48)]++;
  auto shared = std::find_if(by_task.begin(), by_task.end(), [](auto& p) { return p.second > 1; });
  ASSERT_NE(shared, by_task.end()) << "no two objects of one task";
  EXPECT_EQ(Cumulus({"describe", "object", shared->first}, &out), 1) << out;
  EXPECT_NE(out.find("is ambiguous"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;
  ASSERT_EQ(
      Cumulus({"list", "tasks", "--json", "--filter", "function=Quick", "--limit", "1000"}, &out),
      0);
  std::map<char, int> by_digit;
  for (auto& id : Values(out, "task")) by_digit[id[0]]++;
  auto digit = std::find_if(by_digit.begin(), by_digit.end(), [](auto& p) { return p.second > 1; });
  ASSERT_NE(digit, by_digit.end()) << out;
  EXPECT_EQ(Cumulus({"describe", "task", std::string(1, digit->first)}, &out), 1) << out;
  EXPECT_NE(out.find("is ambiguous"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;

  // A filter on a field rows do not have: one line, usage status.
  EXPECT_EQ(Cumulus({"list", "tasks", "--filter", "colour=red"}, &out), 2);
  EXPECT_NE(out.find("cannot filter on 'colour'"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;

  // `top`: a row per node; the running task in node a's row.
  ASSERT_EQ(Cumulus({"top", "--json"}, &out), 0) << out;
  EXPECT_EQ(out.front(), '[') << out;
  auto nodes = Values(out, "node");
  auto running = Values(out, "running_tasks");
  ASSERT_EQ(nodes.size(), 3u) << out;
  ASSERT_EQ(running.size(), 3u) << out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(running[i], nodes[i] == a ? "1" : "0") << out;
  }
  ASSERT_EQ(Cumulus({"top", "--sort", "tasks"}, &out), 0) << out;
  EXPECT_EQ(out.find("NODE"), 0u) << out;
  EXPECT_EQ(out.find(a.substr(0, 8)), out.find('\n') + 1) << "the busiest node first:\n" << out;
  for (size_t at = 0, next; at < out.size(); at = next + 1) {
    next = out.find('\n', at);
    if (next == std::string::npos) next = out.size();
    EXPECT_LE(next - at, 100u) << "a line wider than 100 columns:\n" << out;
  }
  // Filtered: one node by its id's prefix; a type no node has: the header alone; a field top
  // does not show: one line, usage status.
  ASSERT_EQ(Cumulus({"top", "--filter", "node=" + b.substr(0, 6), "--json"}, &out), 0) << out;
  EXPECT_EQ(Values(out, "node"), std::vector<std::string>{b}) << out;
  ASSERT_EQ(Cumulus({"top", "--filter", "node_type=gpu-huge"}, &out), 0) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;
  EXPECT_EQ(Cumulus({"top", "--filter", "colour=red"}, &out), 2) << out;
  EXPECT_NE(out.find("cannot filter on 'colour'"), std::string::npos) << out;

  // A node killed (the head still counts it alive): named, the others' rows still shown.
  node_b->Kill(SIGKILL);
  (void)node_b->Wait(10s);
  EXPECT_EQ(Cumulus({"list", "tasks", "--filter", "state=RUNNING"}, &out), 0) << out;
  EXPECT_NE(out.find("1 of 3 node(s) did not answer (" + b.substr(0, 8) + ": "), std::string::npos)
      << out;
  EXPECT_NE(out.find("HoldUntil"), std::string::npos) << out;
  Touch("go");
  ExpectChecks(driver->ReadAll(60s), {"queued_tasks_finished"});

  // Ended, and the job with them: node a still answers for every one of them (it keeps its
  // last 10,000 ended tasks), filtered before the cap as the live ones.
  ASSERT_EQ(Cumulus({"list", "tasks", "--filter", "state=FINISHED", "--filter", "function=Quick",
                     "--limit", "10"},
                    &out),
            0)
      << out;
  EXPECT_NE(out.find("(10 of " + std::to_string(kTasks) + " shown; next page: --after "),
            std::string::npos)
      << out;
  ASSERT_EQ(
      Cumulus({"list", "tasks", "--filter", "function=Quick", "--limit", "1", "--json"}, &out), 0)
      << out;
  auto quick = Values(out, "task");
  ASSERT_EQ(quick.size(), 1u) << out;
  EXPECT_EQ(Values(out, "state"), std::vector<std::string>{"FINISHED"}) << out;
  ASSERT_EQ(Cumulus({"describe", "task", quick[0].substr(0, 12)}, &out), 0) << out;
  EXPECT_NE(out.find("state:      FINISHED on node " + a.substr(0, 8)), std::string::npos) << out;
  EXPECT_NE(out.find("  ended:      "), std::string::npos) << out;
}

// A cursor that is not an id, or names no job, is one line and a usage status, not an empty
// page; a well-formed cursor whose row has gone continues in id order where rows are sorted so.
TEST_F(StateTest, ACursorThatNamesNoRowIsAnError) {
  auto head = StartHead({"--resources", "CPU=1"});
  std::string out;
  for (const char* what : {"tasks", "objects", "workers", "actors", "jobs", "placement-groups"}) {
    EXPECT_EQ(Cumulus({"list", what, "--after", "zzzz"}, &out), 2) << what << ": " << out;
    EXPECT_NE(out.find("--after 'zzzz' is not a"), std::string::npos) << what << ": " << out;
    EXPECT_EQ(Count(out, "\n"), 1) << what << ": " << out;
  }
  EXPECT_EQ(Cumulus({"list", "jobs", "--after", "0123456789"}, &out), 2) << out;
  EXPECT_NE(out.find("--after '0123456789' names no job"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;
  // The workers the head's node runs, in id order: a cursor just before the first (gone, or
  // never there) shows them all.
  ASSERT_EQ(Cumulus({"list", "workers", "--json"}, &out), 0) << out;
  auto all = Values(out, "worker");
  EXPECT_EQ(Cumulus({"list", "workers", "--json", "--after", "0"}, &out), 0) << out;
  EXPECT_EQ(Values(out, "worker"), all) << out;
  EXPECT_EQ(Cumulus({"list", "placement-groups", "--after", "0"}, &out), 0) << out;
}

// Why a task waits, and each attempt of a retried one.
TEST_F(StateTest, DescribeSaysWhyATaskIsPendingAndEachAttempt) {
  auto head = StartHead({"--resources", "CPU=0", "--wait-for-nodes"});
  std::string a;
  auto node_a = StartNode("a", {"--resources", "CPU=2", "--wait-for-nodes"}, &a);
  ASSERT_FALSE(a.empty());
  auto driver = Driver({"--scenario=pending"}, CoreSocket(a));
  ASSERT_TRUE(driver->WaitForLine("READY", 120s)) << driver->ReadAll(1s);
  std::string out;
  auto id_of = [&](const std::string& function) {
    std::string json;
    Cumulus({"list", "tasks", "--json", "--filter", "function=" + function}, &json);
    auto ids = Values(json, "task");
    return ids.size() == 1 ? ids[0] : std::string();
  };
  std::string retried, waiting, impossible;
  ASSERT_TRUE(WaitUntil(
      [&] {
        Cumulus({"list", "tasks", "--json", "--filter", "state=RUNNING"}, &out);
        retried = id_of("HoldRetried");
        waiting = id_of("Quick");
        impossible = id_of("Impossible");
        return Values(out, "task").size() == 2 && !retried.empty() && !waiting.empty() &&
               !impossible.empty();
      },
      60s))
      << out;

  ASSERT_EQ(Cumulus({"describe", "task", impossible.substr(0, 10)}, &out), 0) << out;
  EXPECT_NE(out.find("pending:    infeasible: "), std::string::npos) << out;
  EXPECT_NE(out.find("unobtainium"), std::string::npos) << out;
  ASSERT_EQ(Cumulus({"describe", "task", waiting}, &out), 0) << out;
  EXPECT_NE(out.find("pending:    waiting: "), std::string::npos) << out;
  EXPECT_NE(out.find("CPU"), std::string::npos) << out;
  // An empty id: a usage error (it would start every id). An unknown one: one line. (An
  // ambiguous prefix: StateTest.FiltersApplyOnTheNodesBeforeTheCap, where ids share one by
  // construction.)
  EXPECT_EQ(Cumulus({"describe", "task", ""}, &out), 2) << out;
  EXPECT_NE(out.find("an empty task id names no task"), std::string::npos) << out;
  EXPECT_EQ(Cumulus({"describe", "task", "ffffffffffff"}, &out), 1) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;

  // Its worker killed: the second attempt runs, the first is told with its cause.
  Cumulus({"list", "tasks", "--json", "--filter", "task=" + retried}, &out);
  auto pids = Values(out, "pid");
  ASSERT_EQ(pids.size(), 1u) << out;
  int first_pid = std::atoi(pids[0].c_str());
  ASSERT_GT(first_pid, 0) << out;
  kill(first_pid, SIGKILL);
  EXPECT_TRUE(WaitUntil(
      [&] {
        Cumulus({"describe", "task", retried}, &out);
        return out.find("    2. node") != std::string::npos &&
               out.find("RUNNING now") != std::string::npos;
      },
      30s))
      << out;
  EXPECT_NE(out.find("    1. node " + a.substr(0, 8) + ", worker pid " + pids[0] +
                     ": killed by signal 9"),
            std::string::npos)
      << out;
  ASSERT_EQ(Cumulus({"describe", "task", retried, "--json"}, &out), 0) << out;
  EXPECT_EQ(Values(out, "attempt.1.cause"), std::vector<std::string>{"killed by signal 9"}) << out;

  // The node and the job, described.
  ASSERT_EQ(Cumulus({"describe", "node", a.substr(0, 6)}, &out), 0) << out;
  EXPECT_NE(out.find("HoldRetried"), std::string::npos) << out;
  Touch("go");
  ExpectChecks(driver->ReadAll(90s), {"retried_task_finished"});

  // Ended: still described, each attempt with its cause, then how the last one ended.
  ASSERT_EQ(Cumulus({"describe", "task", retried}, &out), 0) << out;
  EXPECT_NE(out.find("state:      FINISHED on node " + a.substr(0, 8)), std::string::npos) << out;
  EXPECT_NE(out.find("    1. node " + a.substr(0, 8) + ", worker pid " + pids[0] +
                     ": killed by signal 9"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("    2. node " + a.substr(0, 8)), std::string::npos) << out;
  EXPECT_NE(out.find(": FINISHED\n"), std::string::npos) << out;
  // Listed as ended too (the driver waited for it alone: the others may have ended with its job,
  // unanswered, and are not kept).
  ASSERT_EQ(Cumulus({"list", "tasks", "--filter", "state=FINISHED", "--json"}, &out), 0) << out;
  auto functions = Values(out, "function");
  EXPECT_EQ(std::count(functions.begin(), functions.end(), "HoldRetried"), 1) << out;
}

// A state query is answered only after a caller's hello with the cluster token.
TEST_F(StateTest, NodesAnswerStateQueriesOnlyWithTheClusterToken) {
  auto head = StartHead({"--resources", "CPU=1"});
  ClusterView v = View();
  ASSERT_EQ(v.nodes.size(), 1u);
  auto ask = [&](const std::string& token) -> Result<uint64_t> {
    CUMULUS_ASSIGN_OR_RETURN(HostPort at, ParseHostPort(v.nodes[0].core_address));
    CUMULUS_ASSIGN_OR_RETURN(int fd, ConnectTcp(at, 5s));
    TimePoint deadline = SystemClock::Get().Now() + 10s;
    capnp::MallocMessageBuilder hello, query;
    hello.initRoot<proto::CoreMessage>().initHello().initCaller().setToken(token);
    EncodeStateQuery({"node", {}, "", 1, false},
                     query.initRoot<proto::CoreMessage>().initStateQuery());
    Status st = WriteFrame(fd, hello, deadline);
    if (st.ok()) st = WriteFrame(fd, query, deadline);
    FrameDecoder decoder(kMaxCoreFrameBytes);
    while (st.ok()) {
      auto words = ReadFrame(fd, decoder, deadline);
      if (!words.ok()) {
        st = words.status();
        break;
      }
      capnp::FlatArrayMessageReader reader(*words);
      auto msg = reader.getRoot<proto::CoreMessage>();
      if (!msg.isStateReply()) continue;
      close(fd);
      return msg.getStateReply().getMatched();
    }
    close(fd);
    return st;
  };
  auto good = ask(token_);
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(*good, 1u);
  auto bad = ask("not-the-token");
  EXPECT_FALSE(bad.ok()) << "a wrong token was answered";

  // Refused with a line that names the node and says what to do (the head's words), through the
  // connection `cumulus list|describe|top|timeline` use; no more than that.
  auto at = ParseHostPort(v.nodes[0].core_address);
  ASSERT_TRUE(at.ok());
  TimePoint deadline = SystemClock::Get().Now() + 10s;
  auto conn = CallerConnection::Open(*at, "not-the-token", deadline);
  ASSERT_TRUE(conn.ok()) << conn.status();
  capnp::MallocMessageBuilder query;
  EncodeStateQuery({"node", {}, "", 1, false},
                   query.initRoot<proto::CoreMessage>().initStateQuery());
  (void)conn->Send(query, deadline);
  auto answer = conn->Next(deadline);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.status().code(), StatusCode::kUnauthenticated) << answer.status();
  EXPECT_EQ(answer.status().message(),
            "node " + v.nodes[0].id.Hex().substr(0, 8) +
                " refused the cluster token: pass the head's token with --token-file or "
                "CUMULUS_TOKEN");
  // `cumulus list tasks` with a wrong token: one line (the head refuses it first).
  std::string bad_file = dir_.path() + "/bad-token";
  std::ofstream(bad_file) << "not-the-token\n";
  ASSERT_EQ(chmod(bad_file.c_str(), 0600), 0);
  std::string out;
  EXPECT_NE(Cli({"list", "tasks", "--address", address_, "--token-file", bad_file}, &out), 0);
  EXPECT_EQ(Count(out, "\n"), 1) << out;
  EXPECT_NE(out.find("the cluster token is wrong: pass the head's token with --token-file or "
                     "CUMULUS_TOKEN"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace cumulus
