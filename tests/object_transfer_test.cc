// Objects moving between real node processes over the bulk channel: a 256 MiB object made on one
// node is pulled into another's store and read there by a third process, checksummed.
#include <capnp/message.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <xxhash.h>

#include <future>
#include <random>
#include <thread>

#include "cluster_fixture.h"
#include "runtime/net/frame.h"
#include "runtime/net/tcp.h"
#include "runtime/object_store/store_client.h"
#include "runtime/proto/transfer.capnp.h"
#include "runtime/transfer/object_transfer.h"

namespace cumulus {
namespace {

struct NodeProcess {
  std::unique_ptr<Subprocess> process;
  std::string id, store_socket;
  HostPort transfer;
  std::unique_ptr<StoreClient> store;
};

class TransferFixture : public ClusterTest {
 protected:
  NodeProcess Node(const std::string& name, const std::string& memory) {
    NodeProcess n;
    std::string ready;
    n.process = StartNode(name, {"--object-store-memory", memory}, &n.id, &ready);
    n.store_socket = Field(ready, "store_socket");
    n.transfer = *ParseHostPort(Field(ready, "transfer"));
    auto c = StoreClient::Connect(n.store_socket);
    EXPECT_TRUE(c.ok()) << c.status();
    if (c.ok()) n.store = std::move(*c);
    return n;
  }
  std::vector<uint8_t> Random(size_t n, uint64_t seed) {
    std::vector<uint8_t> v(n);
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i + 8 <= n; i += 8) {
      uint64_t x = rng();
      std::memcpy(v.data() + i, &x, 8);
    }
    return v;
  }
};

ObjectId NewId() { return ObjectId::FromTaskReturn(TaskId::ForNormalTask(JobId::FromInt(4)), 1); }

TEST_F(TransferFixture, A256MiBObjectMadeOnOneNodeIsReadOnAnother) {
  auto head = StartHead({});
  NodeProcess a = Node("a", "300M"), b = Node("b", "300M");
  ASSERT_TRUE(a.store && b.store);
  auto data = Random(256u << 20, 11);
  uint64_t sum = XXH3_64bits(data.data(), data.size());
  ObjectId id = NewId();
  ASSERT_TRUE(a.store->Put(id, data.data(), data.size()).ok());

  auto t0 = std::chrono::steady_clock::now();
  Status st = PullObject(a.transfer, token_, id, PullInto(*b.store));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(st.ok()) << st;
  std::printf("pulled 256 MiB between node processes in %.0f ms (%.2f GB/s)\n", s * 1e3,
              (256u << 20) / s / 1e9);

  // A third process reads it from node b's store, in place, and checksums it.
  Subprocess reader(
      {std::string(CUMULUS_BIN_DIR) + "/store_probe", "read", b.store_socket, id.Hex()});
  auto line = reader.WaitForLine("read ", 30s);
  ASSERT_TRUE(line);
  char expect[128];
  std::snprintf(expect, sizeof(expect), "read size=%zu checksum=%016llx in_shared_region=1",
                data.size(), static_cast<unsigned long long>(sum));
  EXPECT_EQ(*line, expect);
  reader.CloseStdin();
  reader.Wait(10s);
  EXPECT_EQ(a.store->Stats()->pinned_objects, 0u) << "the sender must release its pin";
}

TEST_F(TransferFixture, WrongTokenAndUnknownObjectsAreClearErrors) {
  auto head = StartHead({});
  NodeProcess a = Node("a", "64M"), b = Node("b", "64M");
  ASSERT_TRUE(a.store && b.store);
  ObjectId id = NewId();
  auto data = Random(1 << 20, 3);
  ASSERT_TRUE(a.store->Put(id, data.data(), data.size()).ok());
  uint64_t baseline = b.store->Stats()->used_bytes;
  Status bad = PullObject(a.transfer, std::string(64, '0'), id, PullInto(*b.store));
  EXPECT_EQ(bad.code(), StatusCode::kUnauthenticated) << bad;
  Status unknown = PullObject(a.transfer, token_, NewId(), PullInto(*b.store));
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound) << unknown;
  EXPECT_NE(unknown.message().find("does not exist"), std::string::npos) << unknown;
  EXPECT_EQ(b.store->Stats()->used_bytes, baseline);
  EXPECT_EQ(a.store->Stats()->pinned_objects, 0u);
}

// A draining node's handoff request: B pulls A's objects when asked (one it has already is no
// error), an object A no longer has is reported, not fatal; a wrong token is refused.
TEST_F(TransferFixture, FetchMakesAnotherNodeTakeObjectsOverTheOrdinaryPull) {
  auto head = StartHead({});
  NodeProcess a = Node("a", "64M"), b = Node("b", "64M");
  ASSERT_TRUE(a.store && b.store);
  std::vector<ObjectId> ids = {NewId(), NewId(), NewId()};
  std::vector<std::vector<uint8_t>> data;
  for (size_t i = 0; i < ids.size(); ++i) {
    data.push_back(Random(3 << 20, 20 + i));
    ASSERT_TRUE(a.store->Put(ids[i], data[i].data(), data[i].size()).ok());
  }
  ASSERT_TRUE(b.store->Put(ids[2], data[2].data(), data[2].size()).ok());  // B has this one
  ObjectId missing = NewId();
  std::vector<ObjectId> asked = ids;
  asked.push_back(missing);
  // A source that is not a node of the cluster: refused, nothing pulled.
  Status stranger = FetchObjects(b.transfer, token_, ids, "127.0.0.1:1");
  EXPECT_EQ(stranger.code(), StatusCode::kInvalidArgument) << stranger;
  EXPECT_NE(stranger.message().find("not the object channel of an alive node"), std::string::npos)
      << stranger;
  std::vector<ObjectId> gone;
  size_t progressed = 0;
  Status st;
  // B takes from A once its view of the cluster has A (its heartbeat after A joined).
  ASSERT_TRUE(WaitUntil(
      [&] {
        gone.clear();
        st = FetchObjects(
            b.transfer, token_, asked, a.transfer.ToString(), {}, [&](size_t n) { progressed = n; },
            &gone);
        return st.code() != StatusCode::kInvalidArgument;
      },
      20s))
      << st;
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(progressed, asked.size());
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0], missing);
  for (size_t i = 0; i < ids.size(); ++i) {
    auto got = b.store->Get(ids[i]);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(std::vector<uint8_t>(got->data(), got->data() + got->size()), data[i]);
  }
  Status bad = FetchObjects(b.transfer, std::string(64, '0'), ids, a.transfer.ToString());
  EXPECT_EQ(bad.code(), StatusCode::kUnauthenticated) << bad;
  EXPECT_EQ(a.store->Stats()->pinned_objects, 0u);
}

// A sender that announces `size` bytes, sends `send` of them, then closes the connection; with
// `sent`, it says so there and holds the connection open until the receiver closes it (or 30 s).
void FakeSender(int listen_fd, uint64_t size, uint64_t send_bytes, std::promise<void>* sent) {
  fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) & ~O_NONBLOCK);
  int fd = accept(listen_fd, nullptr, nullptr);
  FrameDecoder decoder(4096);
  auto reply = [&](uint64_t announced) {
    capnp::MallocMessageBuilder m;
    m.initRoot<proto::TransferReply>().setSize(announced);
    return WriteFrame(fd, m, SystemClock::Get().Now() + 5s);
  };
  auto deadline = SystemClock::Get().Now() + 10s;
  if (ReadFrame(fd, decoder, deadline).ok() && reply(0).ok() &&
      ReadFrame(fd, decoder, deadline).ok() && reply(size).ok()) {
    std::vector<uint8_t> half(send_bytes, 0x42);
    Status ignored = SendAll(fd, half.data(), half.size(), 10s);
    (void)ignored;
    if (sent) {
      sent->set_value();
      pollfd p{fd, POLLIN, 0};
      char byte;
      while (poll(&p, 1, 30000) == 1 && recv(fd, &byte, 1, 0) > 0) {
      }
    }
  }
  close(fd);
}

// A receiving node (a head with node b) and a listener for a FakeSender, for the tests of
// pulls cut short.
class HalfTransferTest : public TransferFixture {
 protected:
  void SetUp() override {
    TransferFixture::SetUp();
    head_ = StartHead({});
    b_ = Node("b", "64M");
    ASSERT_TRUE(b_.store);
    baseline_ = b_.store->Stats()->used_bytes;
    auto listener = ListenTcp("127.0.0.1", 0, &port_);
    ASSERT_TRUE(listener.ok());
    listener_ = *listener;
  }
  void TearDown() override {
    if (listener_ >= 0) close(listener_);
    TransferFixture::TearDown();
  }
  HostPort Sender() const { return HostPort{"127.0.0.1", port_}; }
  // Nothing of `id` is left on b: not sealed, its memory freed.
  void ExpectNothingLeft(const ObjectId& id) {
    EXPECT_FALSE(*b_.store->Contains(id)) << "a half-received object must never be sealed";
    EXPECT_EQ(b_.store->Stats()->used_bytes, baseline_) << "the partial object was not freed";
  }
  std::unique_ptr<Subprocess> head_;
  NodeProcess b_;
  uint64_t baseline_ = 0;
  uint16_t port_ = 0;
  int listener_ = -1;
};

TEST_F(HalfTransferTest, ASenderThatDiesMidTransferLeavesNothingOnTheReceiver) {
  std::thread sender(FakeSender, listener_, 8u << 20, 4u << 20, nullptr);
  ObjectId id = NewId();
  Status st = PullObject(Sender(), token_, id, PullInto(*b_.store));
  sender.join();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st;
  EXPECT_NE(st.message().find("4194304 of 8388608 bytes"), std::string::npos) << st;
  ExpectNothingLeft(id);
}

// A pull that stalls halfway (the sender holds the connection) is ended at once by its
// canceller from another thread, as Ctrl-C ends `cumulus call` reading a large result: Cancelled,
// the partial object freed, long before the 30 s idle timeout. A canceller cancelled before the
// pull starts ends it without connecting.
TEST_F(HalfTransferTest, ACancelledPullEndsAtOnceAndLeavesNothingOnTheReceiver) {
  std::promise<void> sent;
  std::future<void> half_sent = sent.get_future();
  std::thread sender(FakeSender, listener_, 8u << 20, 1u << 20, &sent);
  ObjectId id = NewId();
  FetchCanceller canceller;
  PullOptions options;
  options.canceller = &canceller;
  Status st;
  std::thread puller([&] { st = PullObject(Sender(), token_, id, PullInto(*b_.store), options); });
  ASSERT_EQ(half_sent.wait_for(10s), std::future_status::ready);
  auto cancelled_at = std::chrono::steady_clock::now();
  canceller.Cancel();
  puller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled_at, 5s);
  sender.join();
  close(listener_);
  listener_ = -1;
  EXPECT_EQ(st.code(), StatusCode::kCancelled) << st;
  EXPECT_NE(st.message().find("pulling object " + id.Hex()), std::string::npos) << st;
  ExpectNothingLeft(id);

  // Cancelled before it starts: no connection is made (nothing listens there now).
  Status early = PullObject(Sender(), token_, id, PullInto(*b_.store), options);
  EXPECT_EQ(early.code(), StatusCode::kCancelled) << early;
}

}  // namespace
}  // namespace cumulus
