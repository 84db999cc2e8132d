#include "runtime/object_store/store_protocol.h"

#include <capnp/message.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>

#include "runtime/base/subprocess.h"
#include "runtime/base/temp_dir.h"
#include "runtime/object_store/store_client.h"
#include "runtime/object_store/store_server.h"
#include "runtime/proto/store.capnp.h"

namespace cumulus {
namespace {

using namespace std::chrono_literals;

TEST(StoreProtocolTest, ObjectIdsMustHaveTheRightLength) {
  ObjectId id = ObjectId::FromPut(TaskId::ForNormalTask(JobId::FromInt(3)), 4);
  auto back = store_protocol::ParseObjectId(store_protocol::IdBytes(id));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, id);
  uint8_t short_id[5] = {1, 2, 3, 4, 5};
  auto bad = store_protocol::ParseObjectId(capnp::Data::Reader(short_id, 5));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

// A store served in this process, and clients of it: gets that wait for a seal.
class WaitingGetTest : public ::testing::Test {
 protected:
  void Start(StoreServerOptions options = {}) {
    ObjectStoreOptions o;
    o.directory = dir_.path() + "/store";
    o.memory_capacity = 1 << 20;
    auto store = ObjectStore::Open(o);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    auto server = StoreServer::Start(store_.get(), dir_.path() + "/store.sock", options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  std::unique_ptr<StoreClient> Connect() {
    auto c = StoreClient::Connect(server_->socket_path(), {"test", 10'000});
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }
  // Starts `client->Get(id, wait)` on another thread and returns once the store has parked it.
  std::future<Result<ObjectBuffer>> StartWaiting(StoreClient* client, const ObjectId& id,
                                                 Duration wait = 10s) {
    size_t before = server_->waiting_gets();
    auto f = std::async(std::launch::async, [=] { return client->Get(id, wait); });
    EXPECT_TRUE(WaitUntil([&] { return server_->waiting_gets() > before; }, 10'000ms))
        << "the get was not parked";
    EXPECT_EQ(f.wait_for(0s), std::future_status::timeout) << "answered before the seal";
    return f;
  }
  static ObjectId Id(uint64_t n) {  // a new id on each call
    return ObjectId::FromPut(TaskId::ForNormalTask(JobId::FromInt(5)), n);
  }

  TempDir dir_;
  std::unique_ptr<ObjectStore> store_;
  std::unique_ptr<StoreServer> server_;
};

TEST_F(WaitingGetTest, AnsweredWhenAnotherClientSeals) {
  Start();
  auto writer = Connect();
  auto reader = Connect();
  ObjectId id = Id(1);
  auto buf = writer->Create(id, 5);
  ASSERT_TRUE(buf.ok()) << buf.status();
  EXPECT_EQ(reader->Get(id).status().code(), StatusCode::kUnavailable)
      << "a get that does not wait keeps answering at once";
  auto waiting = StartWaiting(reader.get(), id);
  std::memcpy(buf->data, "hello", 5);
  ASSERT_TRUE(writer->Seal(id).ok());
  auto got = waiting.get();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(got->data()), got->size()), "hello");
  EXPECT_EQ(server_->waiting_gets(), 0u);
  EXPECT_EQ(store_->Stats().pinned_objects, 1u) << "the answered get holds a pin";
  got->Reset();
  EXPECT_EQ(store_->Stats().pinned_objects, 0u);
}

TEST_F(WaitingGetTest, HoldsUpNoOtherRequestOfTheSameClient) {
  // As in a worker: one thread pulls an object into the store, another waits to read it.
  Start();
  auto client = Connect();
  ObjectId id = Id(2);
  auto buf = client->Create(id, 3);
  ASSERT_TRUE(buf.ok()) << buf.status();
  auto waiting = StartWaiting(client.get(), id);
  ObjectId other = Id(3);
  ASSERT_TRUE(client->Put(other, "abc", 3).ok());
  EXPECT_TRUE(*client->Contains(other));
  std::memcpy(buf->data, "xyz", 3);
  ASSERT_TRUE(client->Seal(id).ok());
  auto got = waiting.get();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(got->data()), got->size()), "xyz");
}

TEST_F(WaitingGetTest, AnsweredNotFoundWhenTheCreatorAbortsOrDisconnects) {
  Start();
  auto writer = Connect();
  auto reader = Connect();
  ObjectId id = Id(4);
  ASSERT_TRUE(writer->Create(id, 8).ok());
  auto waiting = StartWaiting(reader.get(), id);
  ASSERT_TRUE(writer->Abort(id).ok());
  EXPECT_EQ(waiting.get().status().code(), StatusCode::kNotFound);

  ASSERT_TRUE(writer->Create(id, 8).ok());
  waiting = StartWaiting(reader.get(), id);
  writer.reset();  // the creator's process goes away
  EXPECT_EQ(waiting.get().status().code(), StatusCode::kNotFound);
  EXPECT_EQ(server_->waiting_gets(), 0u);
}

TEST_F(WaitingGetTest, AnsweredUnavailableAtTheDeadline) {
  Start();
  auto writer = Connect();
  auto reader = Connect();
  ObjectId id = Id(5);
  ASSERT_TRUE(writer->Create(id, 8).ok());
  auto start = std::chrono::steady_clock::now();
  auto got = reader->Get(id, 100ms);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(got.status().message().find(id.Hex()), std::string::npos) << got.status();
  EXPECT_EQ(server_->waiting_gets(), 0u);
  ASSERT_TRUE(writer->Seal(id).ok());
  EXPECT_TRUE(reader->Get(id, 100ms).ok()) << "a sealed object is answered at once";
  EXPECT_EQ(reader->Get(Id(6), 10s).status().code(), StatusCode::kNotFound)
      << "a missing object is not waited for";
}

TEST_F(WaitingGetTest, AClientIsBrokenOnlyOnceTheStoreIsGone) {
  Start();
  auto writer = Connect();
  auto reader = Connect();
  ObjectId id = Id(10);
  ASSERT_TRUE(writer->Create(id, 8).ok());
  // The store's own answers (not sealed in time, not there) leave the connection whole.
  EXPECT_EQ(reader->Get(id, 10ms).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(reader->Get(Id(11)).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(reader->broken());
  server_.reset();  // the store goes away (its node died)
  auto gone = reader->Get(id);
  EXPECT_FALSE(gone.ok());
  EXPECT_TRUE(reader->broken()) << gone.status();
}

TEST_F(WaitingGetTest, AnsweredWhenSealedInProcessThroughTheStore) {
  // As when the node daemon receives a pull straight into its ObjectStore.
  Start();
  auto reader = Connect();
  ObjectId id = Id(7);
  auto buf = store_->Create(id, 4);
  ASSERT_TRUE(buf.ok()) << buf.status();
  auto waiting = StartWaiting(reader.get(), id);
  std::memcpy(buf->data, "node", 4);
  ASSERT_TRUE(store_->Seal(id).ok());
  auto got = waiting.get();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(got->data()), got->size()), "node");
}

TEST_F(WaitingGetTest, EachClientMayHaveOnlySoManyGetsWaiting) {
  StoreServerOptions options;
  options.max_waiting_gets_per_client = 2;
  Start(options);
  auto reader = Connect();
  auto other = Connect();
  ObjectId id = Id(8);
  ASSERT_TRUE(store_->Create(id, 1).ok());
  auto first = StartWaiting(reader.get(), id);
  auto second = StartWaiting(reader.get(), id);
  auto refused = reader->Get(id, 10s);
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status();
  auto others = StartWaiting(other.get(), id);  // the limit is per client
  EXPECT_EQ(server_->waiting_gets(), 3u);
  ASSERT_TRUE(store_->Seal(id).ok());
  EXPECT_TRUE(first.get().ok());
  EXPECT_TRUE(second.get().ok());
  EXPECT_TRUE(others.get().ok());
  EXPECT_EQ(server_->waiting_gets(), 0u);
}

TEST_F(WaitingGetTest, AClientThatDisconnectsDropsItsWaitingGets) {
  Start();
  ObjectId id = Id(9);
  ASSERT_TRUE(store_->Create(id, 1).ok());
  // A raw connection: a process that sends waiting gets and exits without reading the answers.
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, server_->socket_path().c_str());
  int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  ASSERT_GE(sock, 0);
  ASSERT_EQ(connect(sock, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  for (uint64_t request = 1; request <= 3; ++request) {
    capnp::MallocMessageBuilder message;
    auto req = message.initRoot<proto::StoreRequest>();
    req.setRequestId(request);
    auto g = req.initGetWait();
    g.setObjectId(store_protocol::IdBytes(id));
    g.setWaitMillis(60'000);
    ASSERT_TRUE(store_protocol::Send(sock, message).ok());
  }
  EXPECT_TRUE(WaitUntil([&] { return server_->waiting_gets() == 3; }, 10'000ms));
  close(sock);
  EXPECT_TRUE(WaitUntil([&] { return server_->waiting_gets() == 0; }, 10'000ms))
      << "the server still holds the gets of a client that went away";
  EXPECT_TRUE(store_->Seal(id).ok());
  EXPECT_EQ(store_->Stats().pinned_objects, 0u);
}

}  // namespace
}  // namespace cumulus
