// ClusterTest: a fixture that starts real `cumulus` head and node processes on loopback (with
// --block, so the test owns them) and talks to them as a client would.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/base/subprocess.h"
#include "runtime/base/temp_dir.h"
#include "runtime/head/control_client.h"
#include "runtime/head/head_server.h"
#include "runtime/object_store/store_client.h"

namespace cumulus {

using namespace std::chrono_literals;

inline const std::string kCumulus = std::string(CUMULUS_BIN_DIR) + "/cumulus";

inline std::string Field(const std::string& line, const std::string& key) {
  size_t at = line.find(key + "=");
  if (at == std::string::npos) return "";
  at += key.size() + 1;
  return line.substr(at, line.find(' ', at) - at);
}

inline int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class ClusterTest : public ::testing::Test {
 protected:
  std::string head_store_memory_ = "64M";
  std::string node_store_memory_ = "32M";

  void SetUp() override {
    setenv("CUMULUS_STATE_DIR", (dir_.path() + "/state").c_str(), 1);
    unsetenv("CUMULUS_ADDRESS");
    unsetenv("CUMULUS_TOKEN");
  }

  // The nodes of these tests are CPU-only unless a test names GPUs in --resources: a node keeps
  // the GPUs it detects for every key --resources does not name, so on a GPU machine a node
  // meant to be CPU-only would otherwise have them.
  static std::vector<std::string> CpuOnlyUnlessNamed(std::vector<std::string> extra) {
    for (size_t i = 0; i + 1 < extra.size(); ++i) {
      if (extra[i] != "--resources") continue;
      if (extra[i + 1].find("GPU") == std::string::npos) {
        extra[i + 1] += extra[i + 1].empty() ? "GPU=0" : ",GPU=0";
      }
      return extra;
    }
    extra.push_back("--resources");
    extra.push_back("GPU=0");
    return extra;
  }

  std::unique_ptr<Subprocess> StartHead(const std::vector<std::string>& given, int port = 0) {
    std::vector<std::string> extra = CpuOnlyUnlessNamed(given);
    std::vector<std::string> argv = {kCumulus,
                                     "start",
                                     "--head",
                                     "--block",
                                     "--port",
                                     std::to_string(port),
                                     "--data-dir",
                                     dir_.path() + "/head",
                                     "--object-store-memory",
                                     head_store_memory_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto p = std::make_unique<Subprocess>(argv);
    head_pid_ = p->pid();
    auto ready = p->WaitForLine("cumulus head ready", 30s);
    EXPECT_TRUE(ready) << "the head did not become ready";
    if (ready) {
      address_ = Field(*ready, "address");
      token_file_ = Field(*ready, "token_file");
      token_ = *LoadToken(token_file_);
    }
    return p;
  }

  std::unique_ptr<Subprocess> StartNode(const std::string& name,
                                        const std::vector<std::string>& given, std::string* node_id,
                                        std::string* ready_line = nullptr,
                                        bool merge_stderr = false) {
    std::vector<std::string> extra = CpuOnlyUnlessNamed(given);
    std::vector<std::string> argv = {kCumulus,
                                     "start",
                                     "--address",
                                     address_,
                                     "--token-file",
                                     token_file_,
                                     "--block",
                                     "--data-dir",
                                     dir_.path() + "/" + name,
                                     "--object-store-memory",
                                     node_store_memory_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto p = std::make_unique<Subprocess>(argv, merge_stderr);  // with it, the log is readable
    auto ready = p->WaitForLine("cumulus node ready", 30s);
    EXPECT_TRUE(ready) << "node " << name << " did not become ready";
    if (ready && node_id) *node_id = Field(*ready, "node_id");
    if (ready && ready_line) *ready_line = *ready;
    return p;
  }

  // A client of the test's head (the one StartHead last started). nullptr when it cannot be
  // reached, after a test failure that says so and whether that head process still runs: a
  // caller checks the result (ASSERT_TRUE(c), or returns) before using it.
  std::unique_ptr<ControlClient> Client() {
    auto where = ParseHostPort(address_);
    if (!where.ok()) {
      ADD_FAILURE() << "ClusterTest::Client: no head address ('" << address_
                    << "'): start the head with StartHead first";
      return nullptr;
    }
    auto c = ControlClient::Connect(*where, token_);
    if (c.ok()) return std::move(*c);
    std::string head;
    if (head_pid_ <= 0) {
      head = "this test started no head";
    } else if (kill(head_pid_, 0) == 0) {
      head = "its process, pid " + std::to_string(head_pid_) + ", still runs";
    } else {
      head = "its process, pid " + std::to_string(head_pid_) +
             ", is gone: it exited, or the Subprocess that owned it was destroyed, which kills it";
    }
    ADD_FAILURE() << "ClusterTest::Client: cannot reach the test's head at " << address_ << " ("
                  << head << "); " << c.status();
    return nullptr;
  }

  ClusterView View() {
    auto c = Client();
    if (!c) return {};
    auto v = c->GetClusterStatus();
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? *v : ClusterView{};
  }

  const NodeRecord* Find(const ClusterView& v, const std::string& hex) {
    for (auto& n : v.nodes) {
      if (n.id.Hex() == hex) return &n;
    }
    return nullptr;
  }

  // Waits until node `hex` is in `state`; returns how long that took, or nullopt.
  std::optional<std::chrono::milliseconds> WaitForState(const std::string& hex, NodeState state,
                                                        std::chrono::milliseconds timeout) {
    auto start = std::chrono::steady_clock::now();
    bool ok = WaitUntil(
        [&] {
          ClusterView v = View();
          const NodeRecord* n = Find(v, hex);
          return n && n->state == state;
        },
        timeout);
    if (!ok) return std::nullopt;
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start);
  }

  // The node that runs inside the head process, found by its core socket under the head's data
  // dir; "" if the head runs none (--no-node). Not View().nodes[0]: the view is ordered by node
  // id, so once other nodes have joined its first node is any of them.
  std::string HeadNodeId() {
    const std::string under = dir_.path() + "/head/";
    for (const NodeRecord& n : View().nodes) {
      if (n.state == NodeState::kAlive && n.core_socket.rfind(under, 0) == 0) return n.id.Hex();
    }
    return "";
  }

  // The core socket of node `node_hex` (drivers attach to it), or "" if the head does not know it.
  std::string CoreSocket(const std::string& node_hex) {
    ClusterView v = View();
    const NodeRecord* n = Find(v, node_hex);
    return n ? n->core_socket : "";
  }

  // Starts the test driver `program` (in CUMULUS_BIN_DIR) with `args` and --dir=<this test's
  // dir>, attached to the node whose core socket is `socket`, with `env` added to its environment.
  std::unique_ptr<Subprocess> StartDriver(
      const std::string& program, std::vector<std::string> args, const std::string& socket,
      const std::vector<std::pair<std::string, std::string>>& env = {}) {
    std::vector<std::pair<std::string, std::string>> all = {{"CUMULUS_ADDRESS", address_},
                                                            {"CUMULUS_TOKEN_FILE", token_file_},
                                                            {"CUMULUS_NODE_SOCKET", socket}};
    all.insert(all.end(), env.begin(), env.end());
    for (auto& [k, v] : all) setenv(k.c_str(), v.c_str(), 1);
    args.insert(args.begin(), std::string(CUMULUS_BIN_DIR) + "/" + program);
    args.push_back("--dir=" + dir_.path());
    auto p = std::make_unique<Subprocess>(args, /*merge_stderr=*/true);
    for (auto& kv : all) unsetenv(kv.first.c_str());
    return p;
  }
  // Creates the file the test drivers wait for (their file barrier, in this test's dir).
  void Touch(const std::string& name) { std::ofstream(dir_.path() + "/" + name) << "1\n"; }

  // Objects in the store at `socket` (memory and disk); -1 if it cannot be asked.
  int StoredObjects(const std::string& socket) {
    std::string out;
    if (Cli({"object-store", "stats", "--socket", socket, "--json"}, &out) != 0) return -1;
    auto field = [&](const std::string& key) {
      size_t at = out.find("\"" + key + "\":");
      return at == std::string::npos ? -1 : std::atoi(out.c_str() + at + key.size() + 3);
    };
    return field("objects_in_memory") + field("objects_on_disk_only");
  }
  // Whether the store at `socket` holds object `id_hex`; nullopt if it cannot be asked.
  static std::optional<bool> Holds(const std::string& socket, const std::string& id_hex) {
    auto id = ObjectId::FromHex(id_hex);
    auto client = StoreClient::Connect(socket, {"test", 10'000});
    if (!id.ok() || !client.ok()) return std::nullopt;
    auto has = (*client)->Contains(*id);
    return has.ok() ? std::optional<bool>(*has) : std::nullopt;
  }

  // Runs the cumulus command line; returns its exit status and fills its output.
  int Cli(const std::vector<std::string>& args, std::string* output) {
    std::vector<std::string> argv = {kCumulus};
    argv.insert(argv.end(), args.begin(), args.end());
    Subprocess p(argv, /*merge_stderr=*/true);
    *output = p.ReadAll(30s);
    auto st = p.Wait(30s);
    return st && WIFEXITED(*st) ? WEXITSTATUS(*st) : -1;
  }

  // A test driver's output (tests/driver_checks.h): every named check printed "ok", and the
  // driver finished without failures.
  static void ExpectChecks(const std::string& out, std::initializer_list<const char*> checks) {
    ASSERT_NE(out.find("DONE"), std::string::npos) << "the driver did not finish:\n" << out;
    for (const char* check : checks) {
      EXPECT_NE(out.find(std::string("CHECK ") + check + " ok"), std::string::npos)
          << check << " did not pass:\n"
          << out;
    }
    EXPECT_NE(out.find("DONE failures=0"), std::string::npos) << out;
  }

  TempDir dir_;
  std::string address_, token_file_, token_;
  pid_t head_pid_ = -1;  // the head StartHead last started (Client() says whether it still runs)
};

}  // namespace cumulus
