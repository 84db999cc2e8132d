// `cumulus drain NODE` with real processes: a head (no node of its own), node A and node B. A
// draining node takes no new task, actor or bundle, finishes what it runs, hands the objects its
// store holds to another node (or, when none can take them, keeps them and says why), then
// leaves by itself (STOPPED, not failed); the owners read and free the objects where they went.
#include <capnp/message.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <thread>

#include "cluster_fixture.h"
#include "runtime/core/messages.h"
#include "runtime/net/frame.h"
#include "runtime/net/tcp.h"
#include "runtime/proto/transfer.capnp.h"

namespace cumulus {
namespace {

class DrainTest : public ClusterTest {
 protected:
  // drain_driver ships its program (tens of MiB with debug info) through the object store.
  DrainTest() { node_store_memory_ = "160M"; }

  void StartCluster() {
    head_ = StartHead({"--no-node", "--heartbeat-interval-ms", "100"});
    a_ = StartNode("a", {"--resources", "CPU=2", "--labels", "name=a"}, &a_id_);
    b_ = StartNode("b", {"--resources", "CPU=2,special=1", "--labels", "name=b"}, &b_id_);
  }
  int Drain(const std::vector<std::string>& extra, std::string* out) {
    std::vector<std::string> args = {"drain"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--address", address_, "--token-file", token_file_});
    return Cli(args, out);
  }
  std::string Status(bool json = false) {
    std::string out;
    std::vector<std::string> args = {"status", "--address", address_, "--token-file", token_file_};
    if (json) args.push_back("--json");
    Cli(args, &out);
    return out;
  }
  NodeRecord Record(const std::string& hex) {
    ClusterView v = View();
    const NodeRecord* n = Find(v, hex);
    return n ? *n : NodeRecord{};
  }
  // Every node has heartbeated (and so received the view with the drain mark) since now: the
  // head's count of heartbeats grew by three rounds of all nodes.
  bool EveryNodeHeardSinceNow() {
    ClusterView start = View();
    uint64_t want = start.heartbeats_received + 3 * start.nodes.size();
    return WaitUntil([&] { return View().heartbeats_received >= want; }, 10s);
  }
  // Reads the driver's lines into `log` until it says PHASE `phase`; false if it did not in time.
  static bool WaitForPhase(Subprocess& driver, const std::string& phase, std::string* log,
                           std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      auto line = driver.WaitForLine("", std::max(left, std::chrono::milliseconds(1)));
      if (!line) return false;
      *log += *line + "\n";
      if (*line == "PHASE " + phase) return true;
    }
  }
  // Objects in the store at `socket` that are on its disk only (spilled); -1 if it cannot say.
  int SpilledObjects(const std::string& socket) {
    std::string out;
    if (Cli({"object-store", "stats", "--socket", socket, "--json"}, &out) != 0) return -1;
    const std::string key = "\"objects_on_disk_only\":";
    size_t at = out.find(key);
    return at == std::string::npos ? -1 : std::atoi(out.c_str() + at + key.size());
  }
  bool Exists(const std::string& name) {
    return access((dir_.path() + "/" + name).c_str(), F_OK) == 0;
  }

  std::unique_ptr<Subprocess> head_, a_, b_;
  std::string a_id_, b_id_;
};

TEST_F(DrainTest, DrainedNodeTakesNoNewWorkFinishesHandsItsObjectOnThenLeaves) {
  StartCluster();
  auto driver = StartDriver("drain_driver", {"--a=" + a_id_, "--b=" + b_id_}, CoreSocket(a_id_));
  std::string log;
  ASSERT_TRUE(WaitForPhase(*driver, "submitted", &log, 60s)) << log << driver->ReadAll(5s);
  ASSERT_TRUE(WaitUntil([&] { return Exists("started"); }, 60s)) << "the long task did not start";

  std::string out;
  auto drained_at = std::chrono::steady_clock::now();
  ASSERT_EQ(Drain({b_id_.substr(0, 10)}, &out), 0) << out;
  EXPECT_NE(out.find("Draining node " + b_id_), std::string::npos) << out;
  EXPECT_TRUE(Record(b_id_).draining);
  // B says what it waits for once its heartbeat brought the mark back; then A has it too.
  ASSERT_TRUE(WaitUntil([&] { return Record(b_id_).drain_note.rfind("waiting for", 0) == 0; }, 10s))
      << Status();
  ASSERT_TRUE(EveryNodeHeardSinceNow());
  std::string text = Status(), json = Status(true);
  EXPECT_NE(text.find("DRAINING"), std::string::npos) << text;
  EXPECT_NE(text.find("Draining " + b_id_.substr(0, 8) + ": waiting for"), std::string::npos)
      << text;
  EXPECT_NE(json.find("\"state\":\"DRAINING\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"draining\":true"), std::string::npos) << json;
  Touch("drained");

  ASSERT_TRUE(WaitForPhase(*driver, "placed", &log, 120s)) << log << driver->ReadAll(5s);
  EXPECT_EQ(Record(b_id_).state, NodeState::kAlive) << "B left while its task ran";
  Touch("release");
  auto done_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitForPhase(*driver, "holding", &log, 60s)) << log << driver->ReadAll(5s);
  // Its task is done; the driver still holds the object B stores: B hands it to A (which has a
  // copy already, pulled by the driver's read) and leaves without waiting for it to be dropped.
  auto left = WaitForState(b_id_, NodeState::kDead, 20s);
  ASSERT_TRUE(left) << Status();
  auto now = std::chrono::steady_clock::now();
  std::printf("drain_test: B left %lld ms after its task ended, %lld ms after the drain\n",
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(now - done_at).count()),
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(now - drained_at).count()));
  Touch("drop");  // the driver reads the object again (from A), then drops it
  ASSERT_TRUE(WaitForPhase(*driver, "dropped", &log, 30s)) << log;
  NodeRecord b = Record(b_id_);
  EXPECT_TRUE(b.left) << b.death_reason;
  EXPECT_NE(b.death_reason.find("drained"), std::string::npos) << b.death_reason;
  EXPECT_NE(Status().find("STOPPED"), std::string::npos);
  auto exit = b_->Wait(20s);  // its process stopped by itself
  ASSERT_TRUE(exit);
  EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 0) << *exit;

  Touch("end");
  std::string driver_out = log + driver->ReadAll(60s);
  ExpectChecks(driver_out, {"big_on_b", "tasks_on_a", "actor_on_a", "group_on_a", "only_b_waits",
                            "long_ran_on_b", "big_after_handoff"});
  json = Status(true);
  EXPECT_NE(json.find("\"recent_failures\":[]"), std::string::npos) << json;
}

// Handoff: a drained node that runs nothing gives its objects to another node, then leaves.
std::vector<std::string> MadeIds(const std::string& line) {  // "MADE <hex> <hex> ..."
  std::vector<std::string> ids;
  std::istringstream in(line.substr(line.find("MADE") + 4));
  for (std::string id; in >> id;) ids.push_back(id);
  return ids;
}

TEST_F(DrainTest, DrainedNodeHandsItsObjectsToAnotherNodeAndLeavesNothingLost) {
  head_ = StartHead({"--no-node", "--heartbeat-interval-ms", "100"});
  std::string ready_a, ready_b;
  a_ = StartNode("a", {"--resources", "CPU=2", "--labels", "name=a"}, &a_id_, &ready_a);
  b_ = StartNode("b", {"--resources", "CPU=2", "--labels", "name=b"}, &b_id_, &ready_b);
  std::string store_a = Field(ready_a, "store_socket"), store_b = Field(ready_b, "store_socket");
  // Five results of 40 MiB made on A, whose store holds 160 MiB: at least one is spilled.
  auto driver = StartDriver("handoff_driver", {"--count=5", "--bytes=41943040"}, CoreSocket(b_id_));
  std::string log;
  ASSERT_TRUE(WaitForPhase(*driver, "made", &log, 90s)) << log << driver->ReadAll(5s);
  auto made = driver->WaitForLine("MADE", 5s);
  ASSERT_TRUE(made) << log << driver->ReadAll(5s);
  std::vector<std::string> ids = MadeIds(*made);
  ASSERT_EQ(ids.size(), 5u) << *made;
  for (auto& id : ids) {
    EXPECT_EQ(Holds(store_a, id), true) << id;
    EXPECT_EQ(Holds(store_b, id), false) << id << ": the driver read it before the drain";
  }
  EXPECT_GE(SpilledObjects(store_a), 1) << "no object of A was spilled";

  std::string out;
  auto drained_at = std::chrono::steady_clock::now();
  ASSERT_EQ(Drain({a_id_}, &out), 0) << out;
  auto left = WaitForState(a_id_, NodeState::kDead, 20s);
  ASSERT_TRUE(left) << Status();
  std::printf("drain_test: A handed 5 x 40 MiB to B and left %lld ms after the drain\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::steady_clock::now() - drained_at)
                                         .count()));
  NodeRecord a = Record(a_id_);
  EXPECT_TRUE(a.left) << a.death_reason;
  EXPECT_NE(a.death_reason.find("drained"), std::string::npos) << a.death_reason;
  for (auto& id : ids) EXPECT_EQ(Holds(store_b, id), true) << id << " is not on B";

  Touch("read");
  ASSERT_TRUE(WaitForPhase(*driver, "read", &log, 60s)) << log << driver->ReadAll(5s);
  // The owner frees them where they live now.
  Touch("drop");
  ASSERT_TRUE(WaitForPhase(*driver, "dropped", &log, 30s)) << log;
  EXPECT_TRUE(WaitUntil(
      [&] {
        for (auto& id : ids) {
          if (Holds(store_b, id) != false) return false;
        }
        return true;
      },
      10s))
      << "B still holds objects its owner dropped";
  Touch("end");
  ExpectChecks(log + driver->ReadAll(30s), {"made", "all_bytes_same"});
}

// The owner does not hear of the moves (A does not announce them: CUMULUS_TEST_UNANNOUNCED_HANDOFF
// stands for that message coming after everything else), so the tasks it sends after the drain
// name A as where their argument lives. Each task reads it where the head says A handed it (on
// the taker itself, and on another node), without the task that made it running again; and the
// owner's free, sent towards A (gone), frees it on the taker.
TEST_F(DrainTest, ArgumentMovedByADrainIsReadWhereItWentAndFreedThere) {
  head_ = StartHead({"--no-node", "--heartbeat-interval-ms", "100"});
  setenv("CUMULUS_TEST_UNANNOUNCED_HANDOFF", "1", 1);
  a_ = StartNode("a", {"--resources", "CPU=2", "--labels", "name=a"}, &a_id_);
  unsetenv("CUMULUS_TEST_UNANNOUNCED_HANDOFF");
  std::string ready_b, c_id, ready_c;
  b_ = StartNode("b", {"--resources", "CPU=2", "--labels", "name=b"}, &b_id_, &ready_b);
  auto c = StartNode("c", {"--resources", "CPU=2", "--labels", "name=c"}, &c_id, &ready_c);
  auto driver =
      StartDriver("handoff_driver", {"--count=2", "--bytes=4194304", "--consumers=name=b,name=c"},
                  CoreSocket(c_id));
  std::string log;
  ASSERT_TRUE(WaitForPhase(*driver, "made", &log, 60s)) << log << driver->ReadAll(5s);
  auto made = driver->WaitForLine("MADE", 5s);
  ASSERT_TRUE(made) << log << driver->ReadAll(5s);
  std::vector<std::string> ids = MadeIds(*made);
  ASSERT_EQ(ids.size(), 2u) << *made;

  std::string out;
  ASSERT_EQ(Drain({a_id_}, &out), 0) << out;
  ASSERT_TRUE(WaitForState(a_id_, NodeState::kDead, 20s)) << Status();
  // The taker (B or C, whichever A chose) holds both.
  std::string taker;
  for (const std::string& ready : {ready_b, ready_c}) {
    std::string store = Field(ready, "store_socket");
    if (Holds(store, ids[0]) == true && Holds(store, ids[1]) == true) taker = store;
  }
  ASSERT_FALSE(taker.empty()) << "neither B nor C holds what A handed on";

  Touch("read");
  ASSERT_TRUE(WaitForPhase(*driver, "read", &log, 60s)) << log << driver->ReadAll(5s);
  std::ifstream runs(dir_.path() + "/made_runs");
  std::string runs_text((std::istreambuf_iterator<char>(runs)), std::istreambuf_iterator<char>());
  EXPECT_EQ(Count(runs_text, "\n"), 2) << "the task that makes them ran again:\n" << runs_text;

  Touch("drop");
  ASSERT_TRUE(WaitForPhase(*driver, "dropped", &log, 30s)) << log;
  EXPECT_TRUE(WaitUntil(
      [&] { return Holds(taker, ids[0]) == false && Holds(taker, ids[1]) == false; }, 10s))
      << "the taker still holds objects their owner freed";
  Touch("end");
  ExpectChecks(log + driver->ReadAll(30s), {"made", "arguments_read"});
}

// A node registered by the test in place of a real taker. Its object channel answers a node's
// hello, then holds each fetch unanswered until Release(), after which it answers each one as
// taken (without pulling anything). Its core channel keeps what other nodes send it, so that
// the test sees which objects it was asked to free.
class FakeTaker {
 public:
  FakeTaker() {
    objects_fd_ = Listen(&objects_address_);
    core_fd_ = Listen(&core_address_);
    objects_thread_ = std::thread([this] { ServeObjects(); });
    core_thread_ = std::thread([this] { ServeCore(); });
  }
  ~FakeTaker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (int fd : {objects_fd_, core_fd_, objects_conn_.load(), core_conn_.load()}) {
      if (fd >= 0) shutdown(fd, SHUT_RDWR);
    }
    objects_thread_.join();
    core_thread_.join();
    for (int fd : {objects_fd_, core_fd_, objects_conn_.load(), core_conn_.load()}) {
      if (fd >= 0) close(fd);
    }
  }
  // Registers it with the head as an alive node with no resources (no work is placed there).
  NodeRecord Record() const {
    NodeRecord fake;
    fake.id = id_;
    fake.hostname = "fake-taker";
    fake.object_store_address = objects_address_;
    fake.core_address = core_address_;
    return fake;
  }
  bool asked() const { return asked_; }  // a fetch came
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  // Whether a frame naming object `hex` came on its core channel (a free, from a node).
  bool Told(const std::string& hex) {
    std::string id = ObjectId::FromHex(hex)->Binary();
    std::lock_guard<std::mutex> lock(mu_);
    return core_bytes_.find(id) != std::string::npos;
  }

 private:
  static int Listen(std::string* address) {
    uint16_t port = 0;
    auto fd = ListenTcp("127.0.0.1", 0, &port);
    EXPECT_TRUE(fd.ok()) << fd.status();
    if (!fd.ok()) return -1;
    fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) & ~O_NONBLOCK);  // the threads block
    *address = "127.0.0.1:" + std::to_string(port);
    return *fd;
  }
  static bool Ok(int fd) {
    capnp::MallocMessageBuilder ok;
    ok.initRoot<proto::TransferReply>().setCode(0);
    return WriteFrame(fd, ok, SystemClock::Get().Now() + std::chrono::seconds(5)).ok();
  }
  void ServeObjects() {
    int fd = accept(objects_fd_, nullptr, nullptr);
    if (fd < 0) return;
    objects_conn_ = fd;
    char buf[4096];
    if (read(fd, buf, sizeof(buf)) <= 0 || !Ok(fd)) return;  // the hello
    // Each fetch comes after the answer to the one before: one read, one fetch.
    while (read(fd, buf, sizeof(buf)) > 0) {
      asked_ = true;
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return released_ || stop_; });
      if (stop_ || !Ok(fd)) return;
    }
  }
  void ServeCore() {
    int fd = accept(core_fd_, nullptr, nullptr);
    if (fd < 0) return;
    core_conn_ = fd;
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) {
      std::lock_guard<std::mutex> lock(mu_);
      core_bytes_.append(buf, static_cast<size_t>(n));
    }
  }

  const NodeId id_ = NodeId::FromRandom();
  int objects_fd_ = -1, core_fd_ = -1;
  std::atomic<int> objects_conn_{-1}, core_conn_{-1};
  std::string objects_address_, core_address_;
  std::thread objects_thread_, core_thread_;
  std::atomic<bool> asked_{false};
  std::mutex mu_;  // guards the fields below
  std::condition_variable cv_;
  bool stop_ = false, released_ = false;
  std::string core_bytes_;
};

// An owner frees its objects while the draining node's round hands them on (the taker holds
// its answers until the frees reached the draining node): they are not recorded as moved, and
// the taker is asked to free the copies it took.
TEST_F(DrainTest, FreeThatRacesAHandoffRoundFreesTheTakersCopy) {
  head_ =
      StartHead({"--no-node", "--heartbeat-interval-ms", "100", "--heartbeat-timeout-ms", "60000"});
  std::string ready_a;
  a_ = StartNode("a", {"--resources", "CPU=2", "--labels", "name=a"}, &a_id_, &ready_a);
  b_ = StartNode("b", {"--resources", "CPU=2", "--labels", "name=b"}, &b_id_);
  auto driver = StartDriver("handoff_driver", {"--count=2", "--bytes=4194304"}, CoreSocket(b_id_));
  std::string log;
  ASSERT_TRUE(WaitForPhase(*driver, "made", &log, 60s)) << log << driver->ReadAll(5s);
  auto made = driver->WaitForLine("MADE", 5s);
  ASSERT_TRUE(made) << log << driver->ReadAll(5s);
  std::vector<std::string> ids = MadeIds(*made);

  FakeTaker taker;
  auto head = Client();
  ASSERT_TRUE(head);
  ASSERT_TRUE(head->RegisterNode(taker.Record()).ok());
  std::string out;
  ASSERT_EQ(Drain({b_id_}, &out), 0) << out;  // B stays (the driver is attached) and takes nothing
  ASSERT_EQ(Drain({a_id_}, &out), 0) << out;
  ASSERT_TRUE(WaitUntil([&] { return taker.asked(); }, 15s)) << "A did not ask the taker";
  // The round waits for the taker; the owner reads the objects (from A) and drops them.
  Touch("read");
  ASSERT_TRUE(WaitForPhase(*driver, "read", &log, 60s)) << log << driver->ReadAll(5s);
  Touch("drop");
  ASSERT_TRUE(WaitForPhase(*driver, "dropped", &log, 30s)) << log;
  const std::string store_a = Field(ready_a, "store_socket");
  ASSERT_TRUE(WaitUntil(
      [&] { return Holds(store_a, ids[0]) == false && Holds(store_a, ids[1]) == false; }, 10s))
      << "A still holds objects their owner freed";
  taker.Release();  // it "took" both
  EXPECT_TRUE(WaitUntil([&] { return taker.Told(ids[0]) && taker.Told(ids[1]); }, 10s))
      << "the taker was not asked to free the copies it took";
  ASSERT_TRUE(WaitForState(a_id_, NodeState::kDead, 20s)) << Status();
  for (auto& id : ids) {
    auto moved = head->KvGet(kObjectMovesNamespace, ObjectMoveKey(*ObjectId::FromHex(id)));
    EXPECT_EQ(moved.status().code(), StatusCode::kNotFound) << id << " is recorded as moved";
  }
  Touch("end");
  ExpectChecks(log + driver->ReadAll(30s), {"made", "all_bytes_same"});
}

// A node stopped while it hands its objects on does not wait for the round: the only taker
// (a FakeTaker never released: it answers no fetch) hangs it, and
// SIGTERM still ends the node within seconds (before, it waited for the fetch's 10-minute
// timeout). Nothing was taken, so nothing is recorded as moved; the node is STOPPED.
TEST_F(DrainTest, NodeStoppedInTheMiddleOfAHandoffRoundDoesNotWaitForIt) {
  head_ =
      StartHead({"--no-node", "--heartbeat-interval-ms", "100", "--heartbeat-timeout-ms", "60000"});
  a_ = StartNode("a", {"--resources", "CPU=2", "--labels", "name=a"}, &a_id_);
  b_ = StartNode("b", {"--resources", "CPU=2", "--labels", "name=b"}, &b_id_);
  auto driver = StartDriver("handoff_driver", {"--count=2", "--bytes=4194304"}, CoreSocket(b_id_));
  std::string log;
  ASSERT_TRUE(WaitForPhase(*driver, "made", &log, 60s)) << log << driver->ReadAll(5s);
  auto made = driver->WaitForLine("MADE", 5s);
  ASSERT_TRUE(made) << log << driver->ReadAll(5s);
  std::vector<std::string> ids = MadeIds(*made);

  FakeTaker hanging;  // never released: it answers no fetch
  auto head = Client();
  ASSERT_TRUE(head);
  ASSERT_TRUE(head->RegisterNode(hanging.Record()).ok());
  std::string out;
  ASSERT_EQ(Drain({b_id_}, &out), 0) << out;  // B stays (the driver is attached) and takes nothing
  ASSERT_EQ(Drain({a_id_}, &out), 0) << out;
  ASSERT_TRUE(WaitUntil([&] { return hanging.asked(); }, 15s))
      << "A did not ask the hanging taker: " << Status();

  auto stopped_at = std::chrono::steady_clock::now();
  a_->Kill(SIGTERM);
  auto exit = a_->Wait(15s);
  ASSERT_TRUE(exit) << "A still waits for its handoff round 15 s after SIGTERM";
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  stopped_at);
  std::printf("drain_test: A exited %lld ms after SIGTERM in the middle of a round\n",
              static_cast<long long>(ms.count()));
  EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 0) << *exit;
  EXPECT_TRUE(Record(a_id_).left) << Record(a_id_).death_reason;
  for (auto& id : ids) {
    auto moved = head->KvGet(kObjectMovesNamespace, ObjectMoveKey(*ObjectId::FromHex(id)));
    EXPECT_EQ(moved.status().code(), StatusCode::kNotFound) << id << " is recorded as moved";
  }
  driver->Kill(SIGKILL);
}

// No node can take the objects (the only other node drains too): the node stays, holding them,
// and says why; once a node joins, it hands them over and leaves.
TEST_F(DrainTest, NodeWithNoTakerForItsObjectsStaysAndSaysWhyUntilOneJoins) {
  head_ = StartHead({"--no-node", "--heartbeat-interval-ms", "100"});
  a_ = StartNode("a", {"--resources", "CPU=2", "--labels", "name=a"}, &a_id_);
  b_ = StartNode("b", {"--resources", "CPU=2", "--labels", "name=b"}, &b_id_);
  auto driver = StartDriver("handoff_driver", {"--count=2", "--bytes=2097152"}, CoreSocket(b_id_));
  std::string log;
  ASSERT_TRUE(WaitForPhase(*driver, "made", &log, 90s)) << log << driver->ReadAll(5s);
  auto made = driver->WaitForLine("MADE", 5s);
  ASSERT_TRUE(made) << log << driver->ReadAll(5s);
  std::vector<std::string> ids = MadeIds(*made);
  std::string out;
  ASSERT_EQ(Drain({b_id_}, &out), 0) << out;  // B stays: the driver is attached to it
  ASSERT_EQ(Drain({a_id_}, &out), 0) << out;
  const std::string why =
      "waiting for 2 objects: no other alive node that is not draining can take them";
  ASSERT_TRUE(WaitUntil([&] { return Record(a_id_).drain_note == why; }, 10s)) << Status();
  EXPECT_NE(Status().find(why), std::string::npos);
  EXPECT_EQ(Record(a_id_).state, NodeState::kAlive);

  std::string c_id, ready_c;
  auto c = StartNode("c", {"--resources", "CPU=2", "--labels", "name=c"}, &c_id, &ready_c);
  ASSERT_TRUE(WaitForState(a_id_, NodeState::kDead, 20s)) << Status();
  EXPECT_TRUE(Record(a_id_).left);
  for (auto& id : ids) EXPECT_EQ(Holds(Field(ready_c, "store_socket"), id), true) << id;
  Touch("read");
  ASSERT_TRUE(WaitForPhase(*driver, "read", &log, 60s)) << log << driver->ReadAll(5s);
  Touch("drop");
  Touch("end");
  ExpectChecks(log + driver->ReadAll(30s), {"made", "all_bytes_same"});
}

// An idle node drains at once; --wait returns when it left. Empty, non-hex, unknown and
// ambiguous names are one line and exit status 2, and drain nothing.
TEST_F(DrainTest, WaitReturnsWhenAnIdleNodeLeftAndBadNamesExit2) {
  StartCluster();
  std::string out;
  EXPECT_EQ(Drain({"zzzz"}, &out), 2) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;
  EXPECT_NE(out.find("'zzzz' is not a node id"), std::string::npos) << out;
  EXPECT_EQ(Drain({"fffffffffffffffffffffffffffff"}, &out), 2) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;
  EXPECT_NE(out.find("no alive node's id starts with 'ffff"), std::string::npos) << out;
  // `cumulus drain "$NODE"` with NODE unset: the empty prefix starts every id; refused.
  EXPECT_EQ(Drain({""}, &out), 2) << out;
  EXPECT_NE(out.find("an empty node id names no node"), std::string::npos) << out;
  std::string describe;
  EXPECT_EQ(
      Cli({"describe", "node", "", "--address", address_, "--token-file", token_file_}, &describe),
      2)
      << describe;
  EXPECT_NE(describe.find("an empty node id names no node"), std::string::npos) << describe;
  EXPECT_FALSE(Record(a_id_).draining);
  EXPECT_FALSE(Record(b_id_).draining);
  // A prefix two alive nodes' ids share names both: two records (no resources, so no work goes
  // there) registered with ids made to share one, since the real nodes' random ids seldom do.
  // Each on a connection of its own, kept open: a connection that registers a second node
  // leaves the first disconnected (declared dead after the grace).
  std::vector<decltype(Client())> fakes;
  for (const char* hex : {"ab12cd00000000000000000000000001", "ab12cd00000000000000000000000002"}) {
    fakes.push_back(Client());
    ASSERT_TRUE(fakes.back());
    NodeRecord fake;
    auto id = NodeId::FromHex(hex);
    ASSERT_TRUE(id.ok()) << id.status();
    fake.id = *id;
    fake.hostname = "fake";
    ASSERT_TRUE(fakes.back()->RegisterNode(fake).ok());
  }
  EXPECT_EQ(Drain({"ab12cd"}, &out), 2) << out;
  EXPECT_EQ(Count(out, "\n"), 1) << out;
  EXPECT_NE(out.find("more than one"), std::string::npos) << out;
  for (const char* hex : {"ab12cd00000000000000000000000001", "ab12cd00000000000000000000000002"})
    EXPECT_FALSE(Record(hex).draining) << hex;

  ASSERT_EQ(Drain({a_id_, "--wait", "--timeout", "30"}, &out), 0) << out;
  EXPECT_NE(out.find("left the cluster (stopped: drained)"), std::string::npos) << out;
  EXPECT_EQ(Record(a_id_).state, NodeState::kDead);
  EXPECT_TRUE(Record(a_id_).left);
  EXPECT_EQ(Record(b_id_).state, NodeState::kAlive);
  // A node that left cannot be drained again: it is no longer alive.
  EXPECT_EQ(Drain({a_id_}, &out), 2) << out;
}

// The mark is the head's: it survives a head restart (the record is persisted) and the node
// keeps it when it registers again.
TEST_F(DrainTest, DrainMarkSurvivesAHeadRestart) {
  head_ = StartHead({"--no-node", "--heartbeat-interval-ms", "100"});
  std::string port = address_.substr(address_.rfind(':') + 1);
  // B holds something the whole time, so that it does not leave: a driver attached to it.
  b_ = StartNode("b", {"--resources", "CPU=2", "--labels", "name=b"}, &b_id_);
  auto driver = StartDriver("drain_driver", {"--a=none", "--b=" + b_id_}, CoreSocket(b_id_));
  ASSERT_TRUE(driver->WaitForLine("PHASE submitted", 60s)) << driver->ReadAll(5s);
  std::string out;
  ASSERT_EQ(Drain({b_id_}, &out), 0) << out;
  head_->Kill(SIGKILL);
  head_.reset();
  head_ = StartHead({"--no-node", "--heartbeat-interval-ms", "100"}, std::stoi(port));
  ASSERT_TRUE(WaitForState(b_id_, NodeState::kAlive, 20s)) << Status();
  NodeRecord b = Record(b_id_);
  EXPECT_TRUE(b.draining);
  EXPECT_NE(Status().find("DRAINING"), std::string::npos);
  // B's workers, one in the middle of a task that holds until a file appears, end with B: no
  // orphan keeps running its task (it held the test's output open for minutes).
  ASSERT_EQ(
      Cli({"list", "workers", "--json", "--address", address_, "--token-file", token_file_}, &out),
      0)
      << out;
  std::vector<pid_t> workers;
  for (size_t at = out.find("\"pid\":\""); at != std::string::npos;
       at = out.find("\"pid\":\"", at + 1)) {
    workers.push_back(std::atoi(out.c_str() + at + 7));
  }
  ASSERT_FALSE(workers.empty()) << out;
  b_->Kill(SIGKILL);
  for (pid_t p : workers) {
    EXPECT_TRUE(WaitUntil([&] { return p <= 0 || kill(p, 0) != 0; }, 10s))
        << "worker " << p << " outlived its node";
  }
  driver->Kill(SIGKILL);
}

}  // namespace
}  // namespace cumulus
