// Objects moving between real node processes over the bulk channel: a 256 MiB object made on one
// node is pulled into another's store and read there by a third process, checksummed.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <random>
#include <thread>

#include "cluster_fixture.h"
#include "runtime/object_store/store_client.h"
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

TEST_F(TransferFixture, WrongTokenUnknownObjectAndADeadSenderLeaveNothingBehind) {
  auto head = StartHead({});
  NodeProcess a = Node("a", "600M"), b = Node("b", "600M");
  ASSERT_TRUE(a.store && b.store);
  ObjectId id = NewId();
  auto data = Random(512u << 20, 3);
  ASSERT_TRUE(a.store->Put(id, data.data(), data.size()).ok());
  uint64_t baseline = b.store->Stats()->used_bytes;

  Status bad = PullObject(a.transfer, std::string(64, '0'), id, PullInto(*b.store));
  EXPECT_EQ(bad.code(), StatusCode::kUnauthenticated) << bad;
  Status unknown = PullObject(a.transfer, token_, NewId(), PullInto(*b.store));
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound) << unknown;
  EXPECT_EQ(b.store->Stats()->used_bytes, baseline);

  // The sender stops mid-transfer, then dies: the half-written object is aborted on the receiver.
  Status result;
  std::thread pull([&] { result = PullObject(a.transfer, token_, id, PullInto(*b.store)); });
  ASSERT_TRUE(WaitUntil([&] { return b.store->Stats()->used_bytes > baseline; }, 10s))
      << "the pull never began";
  a.process->Kill(SIGSTOP);
  EXPECT_FALSE(*b.store->Contains(id)) << "an object being received must not be visible";
  a.process->Kill(SIGKILL);
  pull.join();
  EXPECT_FALSE(result.ok())
      << "the pull finished before the sender was stopped: raise the object size";
  EXPECT_EQ(result.code(), StatusCode::kUnavailable) << result;
  EXPECT_FALSE(*b.store->Contains(id));
  EXPECT_EQ(b.store->Stats()->used_bytes, baseline) << "the partial object was not freed";
}

}  // namespace
}  // namespace cumulus
