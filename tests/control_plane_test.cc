// The control plane with real processes on loopback: `cumulus start --head --block`, nodes that
// join it, SIGKILL, SIGSTOP, a head restart, wrong credentials and garbage on the port.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <capnp/serialize.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "cluster_fixture.h"
#include "runtime/base/subprocess.h"
#include "runtime/base/temp_dir.h"
#include "runtime/head/control_client.h"
#include "runtime/head/head_server.h"
#include "runtime/net/frame.h"
#include "runtime/proto/control.capnp.h"

namespace cumulus {
namespace {

using ControlPlaneTest = ClusterTest;

TEST_F(ControlPlaneTest, HeadAndThreeNodesReportTheirLabelsAndResources) {
  auto head = StartHead({"--resources", "CPU=1", "--labels", "site=onprem,role=head"});
  std::string a, b, c;
  auto n1 =
      StartNode("n1", {"--resources", "CPU=8,GPU=2", "--labels", "site=onprem,gpu_type=A100"}, &a);
  auto n2 = StartNode(
      "n2", {"--resources", "CPU=4,GPU=1", "--labels", "site=cloud,instance=g5.xlarge"}, &b);
  auto n3 = StartNode("n3", {"--resources", "CPU=2,custom=4", "--labels", "site=onprem"}, &c);
  ClusterView v = View();
  ASSERT_EQ(v.nodes.size(), 4u);
  const NodeRecord* gpu = Find(v, a);
  ASSERT_TRUE(gpu);
  EXPECT_EQ(gpu->state, NodeState::kAlive);
  EXPECT_EQ(gpu->total.Get("CPU"), 8);
  EXPECT_EQ(gpu->total.Get("GPU"), 2);
  EXPECT_EQ(gpu->labels.at("gpu_type"), "A100");
  EXPECT_EQ(Find(v, b)->labels.at("site"), "cloud");
  EXPECT_EQ(Find(v, c)->total.Get("custom"), 4);
  EXPECT_FALSE(Find(v, c)->total.Has("GPU"));

  std::string json;
  ASSERT_EQ(Cli({"status", "--json"}, &json), 0) << json;  // address and token from the state dir
  EXPECT_EQ(Count(json, "\"state\":\"ALIVE\""), 4) << json;
  EXPECT_EQ(Count(json, "\"node_id\":"), 4);
  EXPECT_NE(json.find("\"labels\":{\"gpu_type\":\"A100\",\"site\":\"onprem\"}"), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"resources_total\":{\"CPU\":8,\"GPU\":2,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"resources_available\":"), std::string::npos);
  std::string table;
  ASSERT_EQ(Cli({"list", "nodes"}, &table), 0);
  EXPECT_EQ(Count(table, "ALIVE"), 4) << table;
}

// A killed node's connection closes: the head declares it DEAD once the disconnect grace (2 s)
// is over, not after the heartbeat timeout, set to a minute here so that the two cannot be told
// apart by timing alone; the 30 s deadline only guards against a hang (under ctest -j2 the
// polling itself can take a while), and the reason says which path it was.
TEST_F(ControlPlaneTest, AKilledNodeIsDeadOnceItsConnectionClosesNotAfterTheHeartbeatTimeout) {
  auto head = StartHead({"--heartbeat-timeout-ms", "60000"});
  std::string victim, survivor;
  auto n1 = StartNode("n1", {}, &victim);
  auto n2 = StartNode("n2", {}, &survivor);
  n1->Kill(SIGKILL);
  auto took = WaitForState(victim, NodeState::kDead, 30s);
  ASSERT_TRUE(took) << "a SIGKILLed node was not reported DEAD within 30 s";
  std::printf("SIGKILLed node reported DEAD after %lld ms\n",
              static_cast<long long>(took->count()));
  ClusterView v = View();
  EXPECT_EQ(Find(v, survivor)->state, NodeState::kAlive);
  EXPECT_NE(Find(v, victim)->death_reason.find("connection"), std::string::npos)
      << Find(v, victim)->death_reason;
}

// A hung node keeps its connection open: only the heartbeat timeout (3 s here, not the default
// 10 s) finds it, as the reason says; the 30 s deadline only guards against a hang.
TEST_F(ControlPlaneTest, AHungNodeIsDeadAfterTheHeartbeatTimeoutAndComesBackAsNew) {
  auto head = StartHead({"--heartbeat-interval-ms", "500", "--heartbeat-timeout-ms", "3000"});
  std::string hung;
  auto n1 = StartNode("n1", {}, &hung);
  n1->Kill(SIGSTOP);
  auto took = WaitForState(hung, NodeState::kDead, 30s);
  ASSERT_TRUE(took) << "a SIGSTOPped node was not reported DEAD within 30 s";
  std::printf("SIGSTOPped node reported DEAD after %lld ms\n",
              static_cast<long long>(took->count()));
  EXPECT_NE(Find(View(), hung)->death_reason.find("no heartbeat"), std::string::npos);
  n1->Kill(SIGCONT);
  // It must rejoin under a new id: two node records of that process, the old one still DEAD.
  ASSERT_TRUE(WaitUntil([&] { return View().nodes.size() == 3; }, 10s))
      << "the node did not rejoin";
  ClusterView v = View();
  EXPECT_EQ(Find(v, hung)->state, NodeState::kDead);
  int alive = 0;
  for (auto& n : v.nodes) alive += n.state == NodeState::kAlive;
  EXPECT_EQ(alive, 2);
}

TEST_F(ControlPlaneTest, ARestartedHeadRecoversItsTablesAndNodesReRegister) {
  auto head = StartHead({});
  std::string a, b, doomed;
  auto n1 = StartNode("n1", {"--labels", "site=onprem"}, &a);
  auto n2 = StartNode("n2", {"--labels", "site=cloud"}, &b);
  auto n3 = StartNode("n3", {}, &doomed);
  n3->Kill(SIGKILL);
  ASSERT_TRUE(WaitForState(doomed, NodeState::kDead, 30s));  // ~2 s; the bound guards a hang
  ClusterView before = View();
  ASSERT_EQ(before.nodes.size(), 4u);
  {
    auto c = Client();
    ASSERT_TRUE(c);
    ASSERT_TRUE(c->KvPut("rendezvous", "nccl-id", std::string("\x01\x00\x02", 3)).ok());
  }
  int port = ParseHostPort(address_)->port;
  head->Kill(SIGKILL);
  ASSERT_TRUE(head->Wait(10s));
  head = StartHead({}, port);
  // Every node that was alive comes back under its own id (recovered records count as alive
  // for a heartbeat timeout, so require a heartbeat that reached the new head); none is twice.
  ASSERT_TRUE(WaitUntil(
      [&] {
        ClusterView v = View();
        int back = 0;
        for (auto& n : v.nodes) {
          back += n.state == NodeState::kAlive && n.last_heartbeat_micros > v.head_started_micros;
        }
        return back == 3;
      },
      15s))
      << "nodes did not re-register with the restarted head";
  ClusterView after = View();
  EXPECT_EQ(after.nodes.size(), 4u);
  EXPECT_EQ(after.cluster_id, before.cluster_id);
  for (auto& n : before.nodes) {
    ASSERT_TRUE(Find(after, n.id.Hex())) << "node " << n.id << " is missing after the restart";
    EXPECT_EQ(Find(after, n.id.Hex())->labels, n.labels);
  }
  // The dead node's record came back from the control store, not from a re-registration.
  const NodeRecord* dead = Find(after, doomed);
  EXPECT_EQ(dead->state, NodeState::kDead);
  EXPECT_EQ(dead->death_reason, Find(before, doomed)->death_reason);
  auto c = Client();
  ASSERT_TRUE(c);
  auto value = c->KvGet("rendezvous", "nccl-id");
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, std::string("\x01\x00\x02", 3));
}

TEST_F(ControlPlaneTest, WrongCredentialsCanDoNothing) {
  auto head = StartHead({});
  HostPort hp = *ParseHostPort(address_);
  auto bad = ControlClient::Connect(hp, std::string(64, 'f'));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kUnauthenticated);

  // A node that skips the handshake and registers directly is refused and not listed.
  int fd = *ConnectTcp(hp, 5s);
  capnp::MallocMessageBuilder m;
  auto req = m.initRoot<proto::ControlRequest>();
  req.setRequestId(1);
  auto info = req.initRegisterNode();
  NodeId sneaky = NodeId::FromRandom();
  info.setNodeId(capnp::Data::Reader(sneaky.data(), NodeId::kSize));
  // (Answers come at once; the 30 s deadlines only guard against a hang under load.)
  ASSERT_TRUE(WriteFrame(fd, m, SystemClock::Get().Now() + 30s).ok());
  FrameDecoder decoder(1 << 20);
  auto reply = ReadFrame(fd, decoder, SystemClock::Get().Now() + 30s);
  ASSERT_TRUE(reply.ok()) << reply.status();
  capnp::FlatArrayMessageReader reader(*reply);
  EXPECT_EQ(reader.getRoot<proto::ControlReply>().getCode(),
            static_cast<uint16_t>(StatusCode::kUnauthenticated));
  auto after = ReadFrame(fd, decoder, SystemClock::Get().Now() + 30s);
  EXPECT_EQ(after.status().code(), StatusCode::kUnavailable)
      << "the head must close the connection";
  close(fd);
  EXPECT_FALSE(Find(View(), sneaky.Hex()));

  std::string bad_token = dir_.path() + "/bad-token";
  { std::ofstream(bad_token) << std::string(64, '0') << "\n"; }
  chmod(bad_token.c_str(), 0600);
  std::string out;
  EXPECT_EQ(Cli({"status", "--token-file", bad_token}, &out), 1);
  EXPECT_NE(out.find("cluster token is wrong"), std::string::npos) << out;
  EXPECT_EQ(Cli({"start", "--address", address_, "--token-file", bad_token, "--block", "--data-dir",
                 dir_.path() + "/intruder"},
                &out),
            1);
  EXPECT_NE(out.find("cluster token is wrong"), std::string::npos) << out;
  EXPECT_EQ(View().nodes.size(), 1u) << "only the head's own node is in the cluster";
}

// True if the peer closes the connection within `timeout` (after any reply it sends first).
bool ClosedByPeer(int fd, std::chrono::seconds timeout) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // block, bounded by SO_RCVTIMEO
  timeval tv{static_cast<time_t>(timeout.count()), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[4096];
  while (true) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;  // EAGAIN: the head kept it open
  }
}

std::string Framed(const std::string& body) {
  std::string header("CMLS\0\0\0\0", 8);
  uint32_t len = static_cast<uint32_t>(body.size());
  std::memcpy(header.data() + 4, &len, 4);
  return header + body;
}

TEST_F(ControlPlaneTest, GarbageOnThePortDoesNotHurtTheHead) {
  auto head = StartHead({});
  HostPort hp = *ParseHostPort(address_);
  std::mt19937_64 rng(7);
  auto junk = [&](size_t n) {
    std::string j(n, '\0');
    for (auto& ch : j) ch = static_cast<char>(rng());
    return j;
  };
  std::vector<std::string> payloads = {
      "GET / HTTP/1.1\r\nHost: x\r\n\r\n", std::string("CMLS\xff\xff\xff\x7f", 8),
      Framed(std::string(8, '\0')), Framed(std::string(5000, 'x'))};
  for (int i = 0; i < 40; ++i) payloads.push_back(junk(1 + rng() % 5000));
  for (int i = 0; i < 40; ++i)
    payloads.push_back(Framed(junk(8 * (1 + rng() % 400))));  // past the magic
  for (auto& p : payloads) {
    int fd = *ConnectTcp(hp, 5s);
    send(fd, p.data(), p.size(), MSG_NOSIGNAL);
    // At once, or after the head's 5 s auth timeout for bytes that could still become a frame;
    // the 30 s deadline only guards against a connection kept open for good.
    EXPECT_TRUE(ClosedByPeer(fd, 30s)) << "the head kept a garbage connection open";
    close(fd);
  }
  // An authenticated client that then sends garbage loses its own connection and nothing else.
  auto c = Client();
  ASSERT_TRUE(c);
  std::string bad = Framed(std::string(16, '\xee'));
  send(c->fd(), bad.data(), bad.size(), MSG_NOSIGNAL);
  EXPECT_TRUE(ClosedByPeer(c->fd(), 30s));
  EXPECT_TRUE(head->running());
  ClusterView v = View();
  ASSERT_EQ(v.nodes.size(), 1u);
  EXPECT_EQ(v.nodes[0].state, NodeState::kAlive);
}

TEST(HeadConnectionCapTest, AConnectionOverTheCapIsToldWhyNotJustClosed) {
  TempDir dir;
  HeadOptions o;
  o.port = 0;
  o.data_dir = dir.path() + "/head";
  o.token = *CreateOrLoadToken(dir.path() + "/token");
  o.max_unauthenticated = 4;
  o.auth_timeout = std::chrono::seconds(30);
  auto head = HeadServer::Start(o);
  ASSERT_TRUE(head.ok()) << head.status();
  HostPort hp{"127.0.0.1", (*head)->port()};
  std::vector<int> silent;  // connected, never saying hello
  for (int i = 0; i < 4; ++i) silent.push_back(*ConnectTcp(hp, 5s));
  ASSERT_TRUE(WaitUntil([&] { return (*head)->counters().connections.load() >= 4; }, 30s));
  auto refused = ControlClient::Connect(hp, o.token);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status();
  EXPECT_NE(refused.status().message().find("already waiting to authenticate"), std::string::npos)
      << refused.status();
  for (int fd : silent) close(fd);
  // Once they are gone, clients get in again.
  EXPECT_TRUE(WaitUntil([&] { return ControlClient::Connect(hp, o.token).ok(); }, 10s));
}

TEST_F(ControlPlaneTest, KeyValueWaitIsAnsweredByAPutFromAnotherClient) {
  // No node: a node's job supervisor keeps a wait of its own open at the head.
  auto head = StartHead({"--no-node"});
  auto waiter = Client();
  auto putter = Client();
  ASSERT_TRUE(waiter && putter);
  std::thread t([&] {
    // Runs while the waiter blocks; the put is what ends the wait.
    auto waited = waiter->KvWait("job1", "rank0-addr", 10s);
    EXPECT_TRUE(waited.ok()) << waited.status();
    if (waited.ok()) {
      EXPECT_EQ(*waited, "10.0.0.1:1234");
    }
  });
  ASSERT_TRUE(WaitUntil([&] { return View().kv_waiters == 1; }, 10s))
      << "the wait never reached the head";
  auto existed = putter->KvPut("job1", "rank0-addr", "10.0.0.1:1234");
  ASSERT_TRUE(existed.ok());
  EXPECT_FALSE(*existed);
  t.join();
  EXPECT_EQ(putter->KvWait("job1", "absent", 200ms).status().code(), StatusCode::kTimedOut);
  EXPECT_EQ(putter->KvGet("job1", "absent").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(*putter->KvDelete("job1", "rank0-addr"));
  EXPECT_FALSE(*putter->KvPut("job1", "once", "a", /*overwrite=*/false));
  EXPECT_TRUE(*putter->KvPut("job1", "once", "b", /*overwrite=*/false));
  EXPECT_EQ(*putter->KvGet("job1", "once"), "a");
}

TEST_F(ControlPlaneTest, KeyValueListPagesThroughOneNamespaceAndPrefix) {
  auto head = StartHead({});
  auto c = Client();
  ASSERT_TRUE(c);
  for (int i = 0; i < 25; ++i) {
    char key[16];
    std::snprintf(key, sizeof(key), "job/%02d", i);
    ASSERT_TRUE(c->KvPut("logs", key, std::string(i, 'x')).ok());
  }
  ASSERT_TRUE(c->KvPut("logs", "joc", "other prefix").ok());
  ASSERT_TRUE(c->KvPut("logz", "job/99", "other namespace").ok());
  // Pages of 10, each after the last key of the previous one, in key order.
  std::vector<std::string> keys;
  std::string after;
  int pages = 0;
  while (true) {
    auto page = c->KvList("logs", "job/", after, 10);
    ASSERT_TRUE(page.ok()) << page.status();
    ++pages;
    for (auto& [k, v] : page->entries) {
      EXPECT_EQ(v.size(), static_cast<size_t>(std::atoi(k.c_str() + 4))) << k;
      keys.push_back(k);
    }
    if (!page->more) break;
    after = page->entries.back().first;
  }
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(keys.size(), 25u);
  EXPECT_EQ(keys.front(), "job/00");
  EXPECT_EQ(keys.back(), "job/24");
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  auto only_keys = c->KvList("logs", "job/2", "", 0, /*keys_only=*/true);
  ASSERT_TRUE(only_keys.ok());
  ASSERT_EQ(only_keys->entries.size(), 5u);  // job/20 .. job/24
  EXPECT_TRUE(only_keys->entries[0].second.empty());
  auto none = c->KvList("nothing-here", "");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->entries.empty());
  EXPECT_FALSE(none->more);
}

// Every command's --help (each one `cumulus --help` lists, and the subcommand forms it names)
// fits in 100 columns, as a terminal shows it.
TEST_F(ControlPlaneTest, EveryCommandsHelpFitsInAHundredColumns) {
  std::string top;
  ASSERT_EQ(Cli({"--help"}, &top), 0) << top;
  std::vector<std::string> commands;
  std::istringstream lines(top.substr(top.find("Commands:")));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line) && line.rfind("  ", 0) == 0) {
    commands.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  ASSERT_GE(commands.size(), 15u) << top;
  for (const char* also : {"logs", "cancel", "drain"}) commands.push_back(also);
  for (const std::string& c : commands) {
    std::string help;
    EXPECT_EQ(Cli({c, "--help"}, &help), 0) << c << ":\n" << help;
    std::istringstream in(help);
    for (std::string l; std::getline(in, l);) {
      EXPECT_LE(l.size(), 100u) << "cumulus " << c << " --help, a line of " << l.size()
                                << " columns:\n"
                                << l;
    }
  }
}

// `start --help` says what listens on --bind (docs/control_plane.md, "what listens"), each option
// at the same indent.
TEST_F(ControlPlaneTest, StartHelpSaysWhatListensOnBind) {
  std::string help;
  ASSERT_EQ(Cli({"start", "--help"}, &help), 0) << help;
  size_t bind = help.find("\n  --bind ADDR ");
  ASSERT_NE(bind, std::string::npos) << "--bind is not an option line at the options' indent:\n"
                                     << help;
  std::string said;  // its text, lines joined
  for (char c : help.substr(bind, help.find("\n  --data-dir", bind) - bind)) {
    if (c == '\n' || c == ' ') {
      if (!said.empty() && said.back() != ' ') said += ' ';
    } else {
      said += c;
    }
  }
  for (const char* listener : {"control port", "routing port", "object channel", "actors' ports"}) {
    EXPECT_NE(said.find(listener), std::string::npos) << listener << " missing from:" << said;
  }
}

// RocksDB is a module loaded when a store opens (runtime/base/rocksdb_module.h): a head that
// cannot load it says which file it looked for, where, and what to set.
TEST_F(ControlPlaneTest, AHeadWithoutItsRocksDbModuleSaysWhereItLooked) {
  Subprocess head({"/usr/bin/env", "CUMULUS_ROCKSDB_MODULE=" + dir_.path() + "/nope.so", kCumulus,
                   "start", "--head", "--block", "--port", "0", "--data-dir", dir_.path() + "/h"},
                  /*merge_stderr=*/true);
  std::string out = head.ReadAll(30s);
  auto st = head.Wait(30s);
  ASSERT_TRUE(st && WIFEXITED(*st)) << out;
  EXPECT_NE(WEXITSTATUS(*st), 0) << out;
  EXPECT_NE(out.find("cannot load RocksDB's module libcumulus_rocksdb.so (tried " + dir_.path() +
                     "/nope.so)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("set CUMULUS_ROCKSDB_MODULE to its path"), std::string::npos) << out;
}

TEST_F(ControlPlaneTest, TheCommandLineRejectsBadInputWithOneClearLine) {
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string says;
  };
  std::string file = dir_.path() + "/a-file";
  { std::ofstream(file) << "x"; }
  std::string token = dir_.path() + "/token";
  { std::ofstream(token) << std::string(64, 'a') << "\n"; }
  chmod(token.c_str(), 0600);
  std::vector<Case> cases = {
      {{"frobnicate"}, 2, "unknown command 'frobnicate'"},
      {{"start"}, 2, "exactly one of --head or --address"},
      {{"start", "--head", "--address", "127.0.0.1:1"}, 2, "exactly one of --head or --address"},
      {{"start", "--address", "nonsense"}, 2, "not a valid address"},
      {{"start", "--head", "--block", "--port", "99999"},
       2,
       "--port must be a whole number from 0 to 65535, got '99999'"},
      {{"start", "--head", "--block", "--port", "0x10"},
       2,
       "--port must be a whole number from 0 to 65535, got '0x10'"},
      {{"start", "--head", "--block", "--port", "-1"},
       2,
       "--port must be a whole number from 0 to 65535, got '-1'"},
      {{"start", "--head", "--block", "--resources", "CPU=lots"},
       2,
       "resource CPU must be a number from 0 to 9e+14, got 'lots'"},
      {{"start", "--head", "--block", "--resources", "CPU=nan"},
       2,
       "resource CPU must be a number from 0 to 9e+14, got 'nan'"},
      {{"start", "--head", "--block", "--resources", "GPU=0.5"},
       2,
       "GPU count must be a whole number"},
      {{"start", "--head", "--block", "--resources", "GPU=1000000000000000"},
       2,
       "resource GPU must be a number from 0 to 9e+14, got '1000000000000000'"},
      {{"start", "--head", "--block", "--object-store-memory", "64"},
       2,
       "--object-store-memory must be at least 16.00 MiB"},
      {{"start", "--head", "--block", "--object-store-memory", "0"},
       2,
       "--object-store-memory must be at least 16.00 MiB"},
      {{"start", "--head", "--block", "--object-store-memory", "1000000T"},
       2,
       "more than this machine's"},
      {{"start", "--head", "--block", "--labels", "site"}, 2, "must be KEY=VALUE"},
      {{"start", "--head", "--block", "--bogus"}, 2, "unknown flag '--bogus'"},
      {{"start", "--head", "--block", "--token-file", file},
       2,
       "--token-file is for 'start --address'"},
      {{"start", "--head", "--block", "--heartbeat-interval-ms", "5000"}, 2, "more than twice"},
      // Numbers that were taken without a check, or cut short, before the one numeric module.
      {{"start", "--head", "--block", "--heartbeat-timeout-ms", "1e30"},
       2,
       "--heartbeat-timeout-ms must be a whole number of milliseconds from 1 to 3600000, got "
       "'1e30'"},
      {{"start", "--head", "--block", "--disconnect-grace-ms", "99999999999999999999"},
       2,
       "--disconnect-grace-ms must be a whole number of milliseconds from 1 to 3600000, got "
       "'99999999999999999999'"},
      {{"start", "--address", "127.0.0.1:0"}, 2, "port must be a whole number from 1 to 65535"},
      {{"start", "--address", "127.0.0.1:+80"}, 2, "port must be a whole number from 1 to 65535"},
      {{"list", "jobs", "--limit", "-1"}, 2, "--limit must be a whole number from 1 to "},
      {{"list", "jobs", "--limit", "1e30"}, 2, "--limit must be a whole number from 1 to "},
      {{"cancel", "0badf00d", "--grace", "1e30"},
       2,
       "--grace must be a number of seconds from 0 to 3600, got '1e30'"},
      {{"start", "--head", "--block", "--port", "0", "--data-dir", file + "/sub"},
       1,
       "cannot create"},
      {{"start", "--head", "--block", "--port", "0", "--bind", "10.255.255.1", "--data-dir",
        dir_.path() + "/b"},
       1,
       "not an address of this machine"},
      {{"start", "--address", "127.0.0.1:1", "--token-file", file, "--block", "--data-dir",
        dir_.path() + "/n"},
       1,
       "must belong to you and be private"},
      {{"status", "--address", "127.0.0.1:1", "--token-file", token}, 1, "cannot reach the head"},
      {{"status", "--address", "127.0.0.1:1", "--token-file", file},
       1,
       "must belong to you and be private"},
      {{"status", "--address", "127.0.0.1:1"}, 1, "no cluster token"},
      {{"list", "planets"}, 2, "cannot list 'planets'"},
  };
  for (auto& c : cases) {
    std::string out;
    int code = Cli(c.args, &out);
    EXPECT_EQ(code, c.code) << "cumulus " << c.args[0] << "...: " << out;
    EXPECT_NE(out.find(c.says), std::string::npos) << "expected '" << c.says << "' in: " << out;
    EXPECT_EQ(Count(out, "\n"), 1) << "one line, not a stack of errors: " << out;
  }
  // An unreachable head, with a proper token file.
  std::string out;
  EXPECT_EQ(Cli({"start", "--address", "127.0.0.1:1", "--token-file", token, "--block",
                 "--data-dir", dir_.path() + "/n"},
                &out),
            1);
  EXPECT_NE(out.find("cannot reach the head"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << "one line, not a stack of errors: " << out;
  // No node directory (node-PID) with an object store is left behind.
  bool node_dir_left = false;
  if (std::filesystem::exists(dir_.path() + "/n")) {
    for (auto& entry : std::filesystem::directory_iterator(dir_.path() + "/n")) {
      if (entry.path().filename().string().rfind("node-", 0) == 0) node_dir_left = true;
    }
  }
  EXPECT_FALSE(node_dir_left) << "an object store was left behind in " << dir_.path() << "/n";

  // A port in use: the second head fails clearly and leaves no process and no files behind.
  auto head = StartHead({});
  int port = ParseHostPort(address_)->port;
  EXPECT_EQ(
      Cli({"start", "--head", "--port", std::to_string(port), "--data-dir", dir_.path() + "/head2"},
          &out),
      1);
  EXPECT_NE(out.find("already in use"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << "one line, not a stack of errors: " << out;
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/head2"))
      << "a failed start must leave nothing behind";
  size_t started = 0;
  for (auto& e : std::filesystem::directory_iterator(dir_.path() + "/state/pids"))
    started += !e.path().empty();
  EXPECT_EQ(started, 1u) << "only the running head may be recorded as started";
}

}  // namespace
}  // namespace cumulus
