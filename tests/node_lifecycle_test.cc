// A node's life as its operator sees it, with real `cumulus start` processes on loopback: a node
// cut off from its head keeps saying so and says when it is back; a node stopped on purpose is
// STOPPED, not a failure; an actor ended by Kill() is not a failure either.
#include <gtest/gtest.h>
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "cluster_fixture.h"
#include "runtime/core/messages.h"
#include "runtime/core/records.h"

namespace cumulus {
namespace {

class NodeLifecycleTest : public ClusterTest {
 protected:
  // A node as StartNode starts it, but with its log (stderr) readable from the test.
  std::unique_ptr<Subprocess> StartNodeWithLog(const std::string& name, std::string* node_id) {
    return StartNode(name, {}, node_id, nullptr, /*merge_stderr=*/true);
  }

  // The next line of `p` that contains `text` (lines before it are skipped), or nullopt.
  static std::optional<std::string> WaitForText(Subprocess& p, const std::string& text,
                                                std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      auto line = p.WaitForLine("", left);
      if (!line) return std::nullopt;
      if (line->find(text) != std::string::npos) return line;
    }
  }

  std::string StatusText() {
    std::string out;
    Cli({"status", "--address", address_, "--token-file", token_file_}, &out);
    return out;
  }

  // The micros of node `hex`'s latest state report (0 if none): reports go every 2 s, after what
  // failed on the node was sent.
  int64_t LastReport(const std::string& hex) {
    auto c = Client();
    if (!c) return 0;
    auto bytes = c->KvGet(kNodeStateNamespace, hex);
    if (!bytes.ok()) return 0;
    auto report = DecodeRecord<NodeStateReport>(*bytes);
    return report.ok() ? report->micros : 0;
  }
};

TEST_F(NodeLifecycleTest, ANodeCutOffFromItsHeadKeepsSayingSoAndSaysWhenItIsBack) {
  setenv("CUMULUS_CUT_OFF_REPORT_MS", "500", 1);
  auto head = StartHead({});
  std::string id;
  auto node = StartNodeWithLog("n1", &id);
  unsetenv("CUMULUS_CUT_OFF_REPORT_MS");
  ASSERT_FALSE(id.empty());
  int port = ParseHostPort(address_)->port;
  head->Kill(SIGKILL);
  ASSERT_TRUE(head->Wait(10s));
  ASSERT_TRUE(WaitForText(*node, "lost the head", 10s)) << "no line when the head went away";
  // Not one line and then silence: it keeps saying so, how long, what it does and why.
  for (int i = 0; i < 2; ++i) {
    auto line = WaitForText(*node, "cut off from the head", 10s);
    ASSERT_TRUE(line) << "report " << i << " of a node cut off from its head did not come";
    EXPECT_NE(line->find(" s; still running its 0 task(s)"), std::string::npos) << *line;
    EXPECT_NE(line->find("retrying every"), std::string::npos) << *line;
    EXPECT_NE(line->find("last error:"), std::string::npos) << *line;
  }
  head = StartHead({}, port);
  auto back = WaitForText(*node, "back in touch with the head", 20s);
  ASSERT_TRUE(back) << "the node did not say it was back";
  EXPECT_NE(back->find("s cut off"), std::string::npos) << *back;
  EXPECT_TRUE(WaitUntil(
      [&] {
        ClusterView v = View();
        const NodeRecord* n = Find(v, id);
        return n && n->state == NodeState::kAlive &&
               n->last_heartbeat_micros > v.head_started_micros;
      },
      15s));
}

TEST_F(NodeLifecycleTest, ANodeStoppedOnPurposeIsStoppedNotFailed) {
  auto head = StartHead({});
  std::string stopped, killed;
  auto n1 = StartNode("n1", {}, &stopped);
  auto n2 = StartNode("n2", {}, &killed);
  n1->Kill(SIGTERM);  // what `cumulus stop` sends
  auto exited = n1->Wait(30s);
  ASSERT_TRUE(exited && WIFEXITED(*exited) && WEXITSTATUS(*exited) == 0);
  n2->Kill(SIGKILL);
  ASSERT_TRUE(WaitForState(killed, NodeState::kDead, 10s));
  ClusterView v = View();
  const NodeRecord* s = Find(v, stopped);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, NodeState::kDead);
  EXPECT_TRUE(s->left) << s->death_reason;
  EXPECT_EQ(s->death_reason.rfind("stopped: ", 0), 0u) << s->death_reason;
  EXPECT_FALSE(Find(v, killed)->left);
  EXPECT_NE(Find(v, killed)->death_reason.find("did not reconnect"), std::string::npos);
  // `cumulus status`: the stopped node is STOPPED and not among the failures; the killed one is.
  std::string out = StatusText();
  size_t row = out.find(stopped);
  ASSERT_NE(row, std::string::npos) << out;
  std::string line = out.substr(row, out.find('\n', row) - row);
  EXPECT_NE(line.find("STOPPED"), std::string::npos) << out;
  EXPECT_NE(line.find("stopped: "), std::string::npos) << out;
  std::string failures = out.substr(out.find("Recent failures"));
  EXPECT_EQ(failures.find(stopped.substr(0, 8)), std::string::npos) << out;
  EXPECT_NE(failures.find(killed.substr(0, 8)), std::string::npos) << out;
  std::string json;
  Cli({"list", "nodes", "--json", "--address", address_, "--token-file", token_file_}, &json);
  EXPECT_NE(json.find("\"state\":\"STOPPED\""), std::string::npos) << json;
}

TEST_F(NodeLifecycleTest, AnActorEndedByKillIsNotARecentFailure) {
  head_store_memory_ = "256M";  // the driver program travels through the store
  auto head = StartHead({"--resources", "CPU=2"});
  ClusterView v = View();
  ASSERT_EQ(v.nodes.size(), 1u);
  std::string head_id = v.nodes[0].id.Hex();
  setenv("CUMULUS_ADDRESS", address_.c_str(), 1);
  setenv("CUMULUS_TOKEN_FILE", token_file_.c_str(), 1);
  setenv("CUMULUS_NODE_SOCKET", v.nodes[0].core_socket.c_str(), 1);
  Subprocess driver({std::string(CUMULUS_BIN_DIR) + "/fault_driver", "--scenario=kill_actor",
                     "--dir=" + dir_.path()},
                    /*merge_stderr=*/true);
  for (const char* v : {"CUMULUS_ADDRESS", "CUMULUS_TOKEN_FILE", "CUMULUS_NODE_SOCKET"}) {
    unsetenv(v);
  }
  std::string out = driver.ReadAll(120s);
  ExpectChecks(out, {"actor_started", "actor_killed"});
  size_t at = out.find("KILLED pid=");
  ASSERT_NE(at, std::string::npos) << out;
  pid_t pid = std::atoi(out.c_str() + at + 11);
  ASSERT_GT(pid, 0) << out;
  EXPECT_TRUE(WaitUntil([&] { return kill(pid, 0) != 0; }, 15s)) << "the killed actor lives";
  // What failed on the node goes to the head before its next state report: wait for two.
  int64_t gone = LastReport(head_id);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(WaitUntil(
        [&] {
          int64_t r = LastReport(head_id);
          return r > gone ? (gone = r, true) : false;
        },
        15s));
  }
  std::string status = StatusText();
  EXPECT_NE(status.find("Recent failures: none"), std::string::npos) << status;
}

}  // namespace
}  // namespace cumulus
