// The node-to-node half of placement groups and forwarding, spoken by hand to real nodes (a head
// and node daemons in this process, real TCP): reservations are all or nothing, a release is
// remembered so that a late reservation of an earlier try is refused, a forwarded task that
// cannot start goes back to the node that sent it, and bad or unauthenticated input is answered
// or refused without hurting the node.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include <filesystem>
#include <string>
#include <vector>

#include "runtime/core/messages.h"
#include "runtime/core/task_router.h"
#include "runtime/head/head_server.h"
#include "runtime/head/node_codec.h"
#include "runtime/net/frame.h"
#include "runtime/net/tcp.h"
#include "runtime/node/node_daemon.h"

namespace cumulus {
namespace {

class RouterProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cumulus-router-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    token_ = *CreateOrLoadToken(dir_ + "/token");
    HeadOptions ho;
    ho.port = 0;
    ho.data_dir = dir_ + "/head";
    ho.token = token_;
    ho.heartbeat_interval = heartbeat_;
    ho.membership.heartbeat_timeout = 3 * heartbeat_;
    std::filesystem::create_directories(ho.data_dir);
    auto head = HeadServer::Start(ho);
    ASSERT_TRUE(head.ok()) << head.status();
    head_ = std::move(*head);
    node_ = StartNode("node", "CPU=2,GPU=1");
  }
  std::unique_ptr<NodeDaemon> StartNode(const std::string& name, const std::string& resources) {
    NodeDaemonOptions no;
    no.head = HostPort{"127.0.0.1", head_->port()};
    no.token = token_;
    no.data_dir = dir_ + "/" + name;
    no.object_store_memory = 32ull << 20;
    no.declared = *ResourceSet::Parse(resources);
    std::filesystem::create_directories(no.data_dir);
    auto node = NodeDaemon::Start(no);
    EXPECT_TRUE(node.ok()) << node.status();
    return node.ok() ? std::move(*node) : nullptr;
  }
  void TearDown() override {
    other_.reset();
    node_.reset();
    head_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A TCP connection to the node's router that has said hello as another node with `token`, or
  // (`as_driver`) as a driver, which may only use the Unix socket.
  int Connect(const std::string& token, bool as_driver = false, NodeDaemon* node = nullptr) {
    if (!node) node = node_.get();
    auto fd = ConnectTcp(*ParseHostPort(node->core_address()), std::chrono::seconds(5));
    EXPECT_TRUE(fd.ok()) << fd.status();
    capnp::MallocMessageBuilder message;
    auto h = message.initRoot<proto::CoreMessage>().initHello();
    if (as_driver) {
      h.initDriver().setJobId(DataOf(JobId::FromInt(7)));
    } else {
      auto peer = h.initPeer();
      peer.setToken(token);
      peer.setNodeId(DataOf(NodeId::FromRandom()));
    }
    Send(*fd, EncodeFrame(message));
    return *fd;
  }
  static void Send(int fd, const std::string& frame) {
    ASSERT_EQ(write(fd, frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
  }
  static std::string Reserve(const PlacementGroupId& id, uint32_t round,
                             const std::vector<std::pair<uint32_t, std::string>>& bundles) {
    capnp::MallocMessageBuilder message;
    auto r = message.initRoot<proto::CoreMessage>().initReserveBundles();
    r.setGroupId(DataOf(id));
    r.setJobId(DataOf(JobId::FromInt(7)));
    r.setRound(round);
    auto list = r.initBundles(static_cast<unsigned>(bundles.size()));
    for (unsigned i = 0; i < bundles.size(); ++i) {
      list[i].setIndex(bundles[i].first);
      ResourceSet set = *ResourceSet::Parse(bundles[i].second);
      EncodeResources(set, list[i].initResources(static_cast<unsigned>(set.units().size())));
    }
    return EncodeFrame(message);
  }
  static std::string Release(const PlacementGroupId& id, uint32_t round) {
    capnp::MallocMessageBuilder message;
    auto r = message.initRoot<proto::CoreMessage>().initRemoveGroup();
    r.setGroupId(DataOf(id));
    r.setRound(round);
    return EncodeFrame(message);
  }
  // The next group reply on `fd`: its status code and message.
  std::pair<StatusCode, std::string> Reply(int fd) {
    auto words = ReadFrame(fd, decoder_, SystemClock::Get().Now() + std::chrono::seconds(10));
    if (!words.ok()) return {words.status().code(), "no reply: " + words.status().message()};
    capnp::FlatArrayMessageReader reader(*words);
    auto msg = reader.getRoot<proto::CoreMessage>();
    if (!msg.isGroupReply()) return {StatusCode::kInternal, "not a group reply"};
    return {static_cast<StatusCode>(msg.getGroupReply().getCode()),
            msg.getGroupReply().getMessage()};
  }
  // A submitTask frame of job 7 asking for `demand`, forwarded `hops` times; with `affinity`,
  // placed only on that node.
  static std::string Submit(const TaskId& id, const std::string& demand, uint32_t hops,
                            const NodeId& affinity = NodeId()) {
    capnp::MallocMessageBuilder message;
    auto spec = message.initRoot<proto::CoreMessage>().initSubmitTask();
    spec.setTaskId(DataOf(id));
    spec.setJobId(DataOf(JobId::FromInt(7)));
    spec.setFunctionName("F");
    spec.setHops(hops);
    ResourceSet set = *ResourceSet::Parse(demand);
    auto amounts = spec.initResources(static_cast<unsigned>(set.units().size()));
    unsigned i = 0;
    for (auto& [name, units] : set.units()) {
      amounts[i].setName(name);
      amounts[i++].setAmount(set.Get(name));
    }
    if (!affinity.IsNil()) {
      spec.setStrategy(proto::SchedulingStrategy::NODE_AFFINITY);
      spec.setAffinityNodeId(DataOf(affinity));
    }
    return EncodeFrame(message);
  }
  // The next frame on `fd` if it is a taskReturned: the task's id and the reason ("" if none).
  std::pair<TaskId, std::string> Returned(int fd) {
    auto words = ReadFrame(fd, decoder_, SystemClock::Get().Now() + std::chrono::seconds(10));
    if (!words.ok()) return {TaskId(), ""};
    capnp::FlatArrayMessageReader reader(*words);
    auto msg = reader.getRoot<proto::CoreMessage>();
    if (!msg.isTaskReturned()) return {TaskId(), ""};
    return {IdFrom<TaskId>(msg.getTaskReturned().getTaskId()), msg.getTaskReturned().getReason()};
  }
  // The state `node` lists task `id` in ("" if it holds none such); the listing is published
  // once a second, so this waits up to 10 s for `want`.
  static std::string StateOf(const NodeDaemon& node, const TaskId& id, const std::string& want) {
    std::string state;
    for (int i = 0; i < 1000; ++i) {
      state.clear();
      size_t total = 0;
      for (const TaskStateRow& row : node.router().Tasks(100, &total)) {
        if (row.task == id.Hex()) state = row.state;
      }
      if (state == want) break;
      usleep(10000);
    }
    return state;
  }

  Duration heartbeat_ = std::chrono::seconds(1);
  std::string dir_, token_;
  std::unique_ptr<HeadServer> head_;
  std::unique_ptr<NodeDaemon> node_, other_;
  FrameDecoder decoder_{kMaxCoreFrameBytes};
};

std::string CpuGpu(const ResourceSet& r) {
  return "CPU=" + std::to_string(r.Get("CPU")) + ",GPU=" + std::to_string(r.Get("GPU"));
}

TEST_F(RouterProtocolTest, ReservationsAreAllOrNothingAndReleasesAreRemembered) {
  int fd = Connect(token_);
  auto id = PlacementGroupId::FromRandom();
  auto free_now = [&] { return CpuGpu(node_->router().Available()); };

  // Two bundles held at once; the node's free resources drop by both.
  Send(fd, Reserve(id, 1, {{0, "CPU=1"}, {1, "CPU=1,GPU=1"}}));
  auto r = Reply(fd);
  EXPECT_EQ(r.first, StatusCode::kOk) << r.second;
  for (int i = 0; i < 500 && free_now() != CpuGpu(ResourceSet()); ++i) usleep(10000);
  EXPECT_EQ(free_now(), CpuGpu(ResourceSet()));

  // The same bundles again: refused, nothing changes.
  Send(fd, Reserve(id, 1, {{0, "CPU=1"}}));
  r = Reply(fd);
  EXPECT_EQ(r.first, StatusCode::kAlreadyExists) << r.second;

  // More than the node has: refused whole.
  auto other = PlacementGroupId::FromRandom();
  Send(fd, Reserve(other, 1, {{0, "CPU=1"}}));
  r = Reply(fd);
  EXPECT_EQ(r.first, StatusCode::kResourceExhausted) << r.second;

  // Released: the resources come back, and a late reservation of that try is refused...
  Send(fd, Release(id, 1));
  Send(fd, Reserve(id, 1, {{0, "CPU=1"}}));
  r = Reply(fd);
  EXPECT_EQ(r.first, StatusCode::kCancelled) << r.second;
  EXPECT_EQ(free_now(), CpuGpu(*ResourceSet::Parse("CPU=2,GPU=1")));
  // ...while a later try is held, and a final release refuses every try after it.
  Send(fd, Reserve(id, 2, {{0, "CPU=2"}}));
  r = Reply(fd);
  EXPECT_EQ(r.first, StatusCode::kOk) << r.second;
  Send(fd, Release(id, 0xFFFFFFFFu));
  Send(fd, Reserve(id, 3, {{0, "CPU=1"}}));
  r = Reply(fd);
  EXPECT_EQ(r.first, StatusCode::kCancelled) << r.second;
  EXPECT_EQ(free_now(), CpuGpu(*ResourceSet::Parse("CPU=2,GPU=1")));

  // Malformed requests get a clear answer and hold nothing.
  Send(fd, Reserve(other, 1, {{0, "CPU=1"}, {0, "CPU=1"}}));
  r = Reply(fd);
  EXPECT_EQ(r.first, StatusCode::kInvalidArgument) << r.second;
  EXPECT_NE(r.second.find("twice"), std::string::npos) << r.second;
  Send(fd, Reserve(other, 0, {{0, "CPU=1"}}));
  r = Reply(fd);
  EXPECT_EQ(r.first, StatusCode::kInvalidArgument) << r.second;
  EXPECT_EQ(free_now(), CpuGpu(*ResourceSet::Parse("CPU=2,GPU=1")));
  close(fd);
}

TEST_F(RouterProtocolTest, RefusesWhatIsNotAPeerWithTheToken) {
  // Wrong token, and a driver over TCP: the connection is closed, nothing is reserved.
  for (auto [role, token] : {std::pair<std::string, std::string>{"peer", "not-the-token"},
                             std::pair<std::string, std::string>{"driver", token_}}) {
    int fd = Connect(token, role == "driver");
    auto id = PlacementGroupId::FromRandom();
    std::string frame = Reserve(id, 1, {{0, "CPU=1"}});
    (void)!write(fd, frame.data(), frame.size());
    auto r = Reply(fd);
    EXPECT_NE(r.first, StatusCode::kOk) << role;
    close(fd);
  }
  // Garbage after a good hello: that connection goes, the node keeps serving.
  int bad = Connect(token_);
  std::string junk(64, '\xff');
  (void)!write(bad, junk.data(), junk.size());
  close(bad);
  int fd = Connect(token_);
  Send(fd, Reserve(PlacementGroupId::FromRandom(), 1, {{0, "CPU=1"}}));
  auto r = Reply(fd);
  EXPECT_EQ(r.first, StatusCode::kOk) << r.second;
  EXPECT_EQ(CpuGpu(node_->router().Available()).substr(0, 12), "CPU=1.000000");
  close(fd);
}

// Numbers a peer sends are checked as the API checks them before sending (runtime/base/numeric.h):
// a NaN amount or a retry count below -1 is refused saying which, not dropped or taken as
// "forever". (Before, DecodeResources dropped the NaN: the task was queued without its GPU, and a
// bundle of CPU=1,GPU=NaN was reserved as CPU=1.)
TEST_F(RouterProtocolTest, NumbersFromAPeerAreCheckedNotDroppedOrWrapped) {
  int fd = Connect(token_);
  auto submit = [&](double gpu, int32_t max_retries) {
    capnp::MallocMessageBuilder message;
    auto spec = message.initRoot<proto::CoreMessage>().initSubmitTask();
    JobId job = JobId::FromInt(7);
    TaskId id = TaskId::ForNormalTask(job);
    spec.setTaskId(DataOf(id));
    spec.setJobId(DataOf(job));
    spec.setFunctionName("F");
    spec.setMaxRetries(max_retries);
    auto amounts = spec.initResources(2);
    amounts[0].setName("CPU");
    amounts[0].setAmount(1);
    amounts[1].setName("GPU");
    amounts[1].setAmount(gpu);
    Send(fd, EncodeFrame(message));
    // The task's result: its code and message.
    auto words = ReadFrame(fd, decoder_, SystemClock::Get().Now() + std::chrono::seconds(10));
    if (!words.ok()) return std::make_pair(words.status().code(), words.status().message());
    capnp::FlatArrayMessageReader reader(*words);
    auto msg = reader.getRoot<proto::CoreMessage>();
    if (!msg.isTaskResult())
      return std::make_pair(StatusCode::kInternal, std::string("not a result"));
    EXPECT_EQ(IdFrom<TaskId>(msg.getTaskResult().getTaskId()), id);
    return std::make_pair(static_cast<StatusCode>(msg.getTaskResult().getCode()),
                          std::string(msg.getTaskResult().getMessage()));
  };
  auto r = submit(std::nan(""), 3);
  EXPECT_EQ(r.first, StatusCode::kInvalidArgument) << r.second;
  EXPECT_EQ(r.second, "task F: resource GPU must be a number from 0 to 9e+14, got nan");
  r = submit(1e300, 3);
  EXPECT_EQ(r.second, "task F: resource GPU must be a number from 0 to 9e+14, got 1e+300");
  r = submit(1, -7);
  EXPECT_EQ(r.first, StatusCode::kInvalidArgument) << r.second;
  EXPECT_EQ(r.second, "task F: maxRetries must be a whole number from -1 to 2147483647, got -7");

  // A bundle with a NaN amount is refused whole; nothing is held.
  capnp::MallocMessageBuilder message;
  auto reserve = message.initRoot<proto::CoreMessage>().initReserveBundles();
  reserve.setGroupId(DataOf(PlacementGroupId::FromRandom()));
  reserve.setJobId(DataOf(JobId::FromInt(7)));
  reserve.setRound(1);
  auto bundle = reserve.initBundles(1)[0];
  bundle.setIndex(0);
  auto amounts = bundle.initResources(2);
  amounts[0].setName("CPU");
  amounts[0].setAmount(1);
  amounts[1].setName("GPU");
  amounts[1].setAmount(std::nan(""));
  Send(fd, EncodeFrame(message));
  auto g = Reply(fd);
  EXPECT_EQ(g.first, StatusCode::kInvalidArgument) << g.second;
  EXPECT_EQ(g.second, "bundle 0: resource GPU must be a number from 0 to 9e+14, got nan");
  Send(fd, Reserve(PlacementGroupId::FromRandom(), 1, {{2000000, "CPU=1"}}));
  g = Reply(fd);
  EXPECT_EQ(g.second, "bundle index must be a whole number from 0 to 1048576, got 2000000");
  EXPECT_EQ(CpuGpu(node_->router().Available()), CpuGpu(*ResourceSet::Parse("CPU=2,GPU=1")));
  close(fd);
}

// This process's resident memory (the node runs in it), in KiB.
long RssKiB() {
  FILE* f = std::fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && std::fgets(line, sizeof(line), f)) {
    if (std::sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  }
  if (f) std::fclose(f);
  return kib;
}

TEST_F(RouterProtocolTest, APeerThatHasNotSaidHelloCannotMakeTheNodeBufferAFrame) {
  // Three connections announce a frame of 500 MiB before any hello and try to send 16 MiB of it.
  // Each is closed at the frame's header, and the node keeps none of it. (Before, the node read
  // frames of up to 512 MiB from anyone and never closed them: 1.5 GB of RSS from three such
  // peers.)
  std::string junk(16u << 20, '\x5a');  // resident before the count starts
  long before = RssKiB();
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) {
    auto fd = ConnectTcp(*ParseHostPort(node_->core_address()), std::chrono::seconds(5));
    ASSERT_TRUE(fd.ok()) << fd.status();
    uint8_t header[kFrameHeaderBytes];
    uint32_t magic = kFrameMagic, length = 500u << 20;
    std::memcpy(header, &magic, 4);
    std::memcpy(header + 4, &length, 4);
    ASSERT_EQ(send(*fd, header, sizeof(header), MSG_NOSIGNAL),
              static_cast<ssize_t>(sizeof(header)));
    fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) & ~O_NONBLOCK);  // ConnectTcp's socket does not wait
    timeval wait{15, 0};  // long: a busy machine may be slow to close; the defect never closes
    setsockopt(*fd, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof(wait));
    setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
    (void)send(*fd, junk.data(), junk.size(), MSG_NOSIGNAL);  // as much as the node takes
    fds.push_back(*fd);
  }
  for (int fd : fds) {
    // The node may say why before it closes: read to the end (or the receive timeout).
    char b[4096];
    ssize_t got;
    do {
      got = recv(fd, b, sizeof(b), 0);
    } while (got > 0);
    int err = errno;
    EXPECT_TRUE(got == 0 || (err != EAGAIN && err != EWOULDBLOCK))
        << "the node still holds a connection that never said hello";
    close(fd);
  }
  long grew = RssKiB() - before;
  std::printf("resident memory grew by %ld KiB with three such peers\n", grew);
  EXPECT_LT(grew, 2 * 1024) << "KiB more resident after the three peers";
  // The node still serves a peer that says hello.
  int fd = Connect(token_);
  Send(fd, Reserve(PlacementGroupId::FromRandom(), 1, {{0, "CPU=1"}}));
  EXPECT_EQ(Reply(fd).first, StatusCode::kOk);
  close(fd);
}

// A task another node forwarded (hops 1) that finds no room here goes back to that node, which
// still holds it, unstarted, also when a task of this node's own of its shape waits before it;
// one placed here by hard affinity waits here instead (there is no other node for it). Before,
// every forwarded task waited here: one placed on a view older than the work that took the room was
// stranded, pending demand an autoscaler launched nodes for that it could never move to.
TEST_F(RouterProtocolTest, AForwardedTaskWithoutRoomGoesBackUnlessItMustRunHere) {
  int fd = Connect(token_);
  Send(fd, Reserve(PlacementGroupId::FromRandom(), 1, {{0, "CPU=2"}}));  // all its CPUs
  ASSERT_EQ(Reply(fd).first, StatusCode::kOk);

  TaskId pinned = TaskId::ForNormalTask(JobId::FromInt(7));
  TaskId own = TaskId::ForNormalTask(JobId::FromInt(7));
  TaskId movable = TaskId::ForNormalTask(JobId::FromInt(7));
  Send(fd, Submit(pinned, "CPU=1", 1, node_->node_id()));
  Send(fd, Submit(own, "CPU=1", 0));  // this node's own, waiting: not in the way of the next
  Send(fd, Submit(movable, "CPU=1", 1));
  auto [returned, reason] = Returned(fd);
  EXPECT_EQ(returned, movable);
  EXPECT_NE(reason.find("CPU=1"), std::string::npos) << reason;
  // The listing and the metrics are published together, once a second: the one that counts the
  // return lists what the pass that returned it left.
  for (int i = 0; i < 1000 && node_->router().Metrics().tasks_returned == 0; ++i) usleep(10000);
  EXPECT_EQ(node_->router().Metrics().tasks_returned, 1u);
  EXPECT_EQ(StateOf(*node_, movable, ""), "");
  EXPECT_EQ(StateOf(*node_, pinned, "QUEUED"), "QUEUED");
  EXPECT_EQ(StateOf(*node_, own, "QUEUED"), "QUEUED");

  // A driver's task says it hopped: only a node forwards, so it is this node's own and waits.
  int driver = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", node_->router().socket_path().c_str());
  ASSERT_EQ(connect(driver, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  capnp::MallocMessageBuilder hello;
  hello.initRoot<proto::CoreMessage>().initHello().initDriver().setJobId(DataOf(JobId::FromInt(7)));
  Send(driver, EncodeFrame(hello));
  TaskId claimed = TaskId::ForNormalTask(JobId::FromInt(7));
  Send(driver, Submit(claimed, "CPU=1", 1));
  EXPECT_EQ(StateOf(*node_, claimed, "QUEUED"), "QUEUED");
  EXPECT_EQ(node_->router().Metrics().tasks_returned, 1u);
  close(driver);
  close(fd);
}

class ForwardTest : public RouterProtocolTest {
 protected:
  // Nodes heartbeat every 30 s: the head's view of a node stays what it registered with for the
  // whole test, as a view a heartbeat old is in a live cluster.
  ForwardTest() { heartbeat_ = std::chrono::seconds(30); }
};

// Node A forwards a task to node B on the head's view, which still shows B's CPUs free; B's CPUs
// went to a placement group meanwhile. B returns the task with what it has free; A queues it
// again and, its view of B no freer than B said, keeps it (waiting at A, where a node that joins
// can take it) rather than sending it straight back. Once B has room and the booking has lived its
// time, A sends it again and it is answered: nothing is lost. Before, it waited on B (FORWARDED at
// A).
TEST_F(ForwardTest, ATaskReturnedByAFullNodeWaitsAtItsSenderNotThere) {
  other_ = StartNode("b", "CPU=4,GPU=0,b=4");  // only B has `b`
  ASSERT_TRUE(other_);
  int b = Connect(token_, false, other_.get());
  auto group = PlacementGroupId::FromRandom();
  Send(b, Reserve(group, 1, {{0, "CPU=4"}}));
  ASSERT_EQ(Reply(b).first, StatusCode::kOk);

  // Submitted to A (by a peer, as if A's own driver): A cannot run it, B can as the head has it.
  int a = Connect(token_);
  TaskId id = TaskId::ForNormalTask(JobId::FromInt(7));
  Send(a, Submit(id, "CPU=1,b=1", 0));  // the head's view of B has room for four
  for (int i = 0; i < 1000 && other_->router().Metrics().tasks_returned == 0; ++i) usleep(10000);
  EXPECT_EQ(other_->router().Metrics().tasks_returned, 1u) << "B did not return the task";
  EXPECT_EQ(StateOf(*other_, id, ""), "");
  EXPECT_EQ(StateOf(*node_, id, "QUEUED"), "QUEUED");
  EXPECT_EQ(other_->router().Metrics().tasks_returned, 1u) << "sent to B again at once";

  // B's CPUs come back: once the booking ends, A sends the task again and B takes it (its job's
  // program is nowhere, so its answer is that error: the task was started there, and answered).
  Send(b, Release(group, 1));
  auto words = ReadFrame(a, decoder_, SystemClock::Get().Now() + std::chrono::seconds(30));
  ASSERT_TRUE(words.ok()) << "no answer for the task: " << words.status();
  capnp::FlatArrayMessageReader reader(*words);
  auto msg = reader.getRoot<proto::CoreMessage>();
  ASSERT_TRUE(msg.isTaskResult());
  EXPECT_EQ(IdFrom<TaskId>(msg.getTaskResult().getTaskId()), id);
  // Once, not once per copy of it the head's view of B had room for (A's view of B took what B
  // said it had free).
  EXPECT_EQ(other_->router().Metrics().tasks_returned, 1u);
  close(a);
  close(b);
}

}  // namespace
}  // namespace cumulus
