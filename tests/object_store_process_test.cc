// The object store across real processes: a `cumulus object-store serve` process, readers and
// writers in other processes, and SIGKILLs.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <xxhash.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "runtime/base/subprocess.h"
#include "runtime/base/temp_dir.h"
#include "runtime/object_store/store_client.h"

namespace cumulus {
namespace {

using namespace std::chrono_literals;
using cumulus::Subprocess;
using cumulus::WaitUntil;

const std::string kBin = CUMULUS_BIN_DIR;

ObjectId NewId() { return ObjectId::FromPut(TaskId::ForNormalTask(JobId::FromInt(2)), 1); }

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> v(n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x = rng();
    std::memcpy(v.data() + i, &x, 8);
  }
  for (; i < n; ++i) v[i] = static_cast<uint8_t>(rng());
  return v;
}

uint64_t Checksum(const void* p, size_t n) { return XXH3_64bits(p, n); }

class ObjectStoreProcessTest : public ::testing::Test {
 protected:
  std::string socket() const { return dir_.path() + "/store.sock"; }

  // Starts `cumulus object-store serve` and waits until it is ready.
  std::unique_ptr<Subprocess> StartStore(const std::string& memory) {
    auto p = std::make_unique<Subprocess>(
        std::vector<std::string>{kBin + "/cumulus", "object-store", "serve", "--dir",
                                 dir_.path() + "/store", "--socket", socket(), "--memory", memory});
    auto ready = p->WaitForLine("object store ready", 20s);
    EXPECT_TRUE(ready) << "the object store process did not become ready";
    return p;
  }
  std::unique_ptr<StoreClient> Connect() {
    auto c = StoreClient::Connect(socket(), {"test", 10'000});
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }
  uint64_t Pinned(StoreClient& c) { return c.Stats()->pinned_objects; }

  TempDir dir_;
};

TEST_F(ObjectStoreProcessTest, AnotherProcessReadsObjectsInPlace) {
  auto store = StartStore("64M");
  auto client = Connect();
  ASSERT_TRUE(client);
  struct stat st {};
  ASSERT_EQ(stat(socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "only the store's user may connect";
  std::mt19937_64 rng(1);
  for (size_t size : {size_t{1024}, size_t{1} << 20, size_t{16} << 20}) {
    ObjectId id = NewId();
    auto data = RandomBytes(rng, size);
    ASSERT_TRUE(client->Put(id, data.data(), data.size()).ok());
    Subprocess reader({kBin + "/store_probe", "read", socket(), id.Hex()});
    auto line = reader.WaitForLine("read ", 10s);
    ASSERT_TRUE(line) << "reader printed nothing";
    char expect[160];
    std::snprintf(expect, sizeof(expect), "read size=%zu checksum=%016llx in_shared_region=1", size,
                  static_cast<unsigned long long>(Checksum(data.data(), size)));
    EXPECT_EQ(*line, expect);
    reader.CloseStdin();
    auto status = reader.Wait(10s);
    ASSERT_TRUE(status);
    EXPECT_EQ(WEXITSTATUS(*status), 0);
  }
}

// Bytes of shared memory the store process's object region holds (its memfd's allocated pages).
int64_t RegionBytes(pid_t pid) {
  std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  for (auto& entry : std::filesystem::directory_iterator(fds)) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(entry.path(), ec);
    if (ec || target.string().find("memfd:cumulus-objects") == std::string::npos) continue;
    struct stat st {};
    if (stat(entry.path().c_str(), &st) == 0) return static_cast<int64_t>(st.st_blocks) * 512;
  }
  return -1;
}

TEST_F(ObjectStoreProcessTest, FreedMemoryGoesBackToTheSystem) {
  // 256 MiB put and freed: the store's memory falls back once it is quiet (it used to keep every
  // page it ever held until it exited, and the memory monitor counted it).
  auto store = StartStore("512M");
  auto client = Connect();
  ASSERT_TRUE(client);
  int64_t at_start = RegionBytes(store->pid());
  ASSERT_GE(at_start, 0) << "the store's region is not among its descriptors";
  std::vector<uint8_t> data(256u << 20, 7);
  ObjectId id = NewId();
  ASSERT_TRUE(client->Put(id, data.data(), data.size()).ok());
  int64_t holding = RegionBytes(store->pid());
  EXPECT_GE(holding, static_cast<int64_t>(data.size())) << "the object's pages are resident";
  ASSERT_TRUE(client->Delete(id).ok());
  EXPECT_TRUE(WaitUntil([&] { return RegionBytes(store->pid()) <= at_start + (8 << 20); }, 10s))
      << "after the delete the region still holds " << RegionBytes(store->pid()) << " bytes ("
      << at_start << " at the start, " << holding << " with the object)";
  // The memory is usable again.
  ASSERT_TRUE(client->Put(NewId(), data.data(), data.size()).ok());
}

TEST_F(ObjectStoreProcessTest, KilledProcessesReleaseTheirPinsAndUnsealedObjects) {
  auto store = StartStore("64M");
  auto client = Connect();
  ASSERT_TRUE(client);
  ObjectId id = NewId();
  std::vector<uint8_t> data(1 << 20, 7);
  ASSERT_TRUE(client->Put(id, data.data(), data.size()).ok());
  uint64_t used_with_object = client->Stats()->used_bytes;

  Subprocess reader({kBin + "/store_probe", "read", socket(), id.Hex()});
  ASSERT_TRUE(reader.WaitForLine("pinned", 10s));
  EXPECT_EQ(Pinned(*client), 1u);
  reader.Kill(SIGKILL);
  ASSERT_TRUE(reader.Wait(10s));
  // At once (the connection closes); the deadline only guards against a hang under load.
  EXPECT_TRUE(WaitUntil([&] { return Pinned(*client) == 0; }, 30s))
      << "the store kept the pin of a reader killed with SIGKILL";

  ObjectId unsealed = NewId();
  Subprocess writer({kBin + "/store_probe", "create", socket(), unsealed.Hex(), "4000000"});
  ASSERT_TRUE(writer.WaitForLine("created", 10s));
  EXPECT_GT(client->Stats()->used_bytes, used_with_object);
  writer.Kill(SIGKILL);
  ASSERT_TRUE(writer.Wait(10s));
  EXPECT_TRUE(WaitUntil([&] { return client->Stats()->used_bytes == used_with_object; }, 30s))
      << "the unsealed object of a killed writer was not freed";
  EXPECT_FALSE(*client->Contains(unsealed));
  // With its pin gone, the object can be deleted and its memory comes back.
  ASSERT_TRUE(client->Delete(id).ok());
  EXPECT_EQ(client->Stats()->used_bytes, 0u);
}

TEST_F(ObjectStoreProcessTest, DurableObjectsSurviveKillingTheStoreProcess) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::map<ObjectId, uint64_t> durable;  // id -> checksum
  std::vector<ObjectId> transient;
  {
    auto store = StartStore("32M");
    auto client = Connect();
    ASSERT_TRUE(client);
    for (int i = 0; i < 20; ++i) {
      ObjectId id = NewId();
      auto data = RandomBytes(rng, rng() % (2 << 20));
      ASSERT_TRUE(client->Put(id, data.data(), data.size(), /*durable=*/true).ok());
      durable[id] = Checksum(data.data(), data.size());
      ObjectId t = NewId();
      ASSERT_TRUE(client->Put(t, data.data(), std::min<size_t>(data.size(), 1000)).ok());
      transient.push_back(t);
    }
    store->Kill(SIGKILL);
    ASSERT_TRUE(store->Wait(10s));
  }
  auto store = StartStore("32M");
  auto client = Connect();
  ASSERT_TRUE(client);
  for (auto& [id, sum] : durable) {
    auto b = client->Get(id);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(Checksum(b->data(), b->size()), sum) << id;
  }
  for (auto& id : transient) {
    EXPECT_EQ(client->Get(id).status().code(), StatusCode::kNotFound);
  }
}

TEST_F(ObjectStoreProcessTest, SpillAndRestoreUnderMemoryPressureLoseNothing) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto store = StartStore("16M");
  auto client = Connect();
  ASSERT_TRUE(client);
  std::vector<std::pair<ObjectId, uint64_t>> objects;
  uint64_t total = 0;
  while (total < (120u << 20)) {
    size_t size = rng() % 4 == 0 ? rng() % 100 : rng() % (3 << 20);
    ObjectId id = NewId();
    auto data = RandomBytes(rng, size);
    Status st = client->Put(id, data.data(), data.size());
    ASSERT_TRUE(st.ok()) << st;
    objects.emplace_back(id, Checksum(data.data(), data.size()));
    total += size;
  }
  std::shuffle(objects.begin(), objects.end(), rng);
  for (auto& [id, sum] : objects) {
    auto b = client->Get(id);
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_EQ(Checksum(b->data(), b->size()), sum) << "object " << id << " came back different";
  }
  auto stats = client->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_GT(stats->spill_count, 0u);
  EXPECT_GT(stats->restore_count, 0u);
  EXPECT_LE(stats->used_bytes, 16u << 20);
}

TEST_F(ObjectStoreProcessTest, GarbageOnTheSocketDoesNotHurtTheStore) {
  auto store = StartStore("16M");
  auto client = Connect();
  ASSERT_TRUE(client);
  ObjectId id = NewId();
  ASSERT_TRUE(client->Put(id, "still here", 10).ok());
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200; ++i) {
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, socket().c_str());
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    // Random lengths, including ones that are not whole Cap'n Proto words, and bytes that look
    // like a segment table pointing far past the message.
    auto junk = RandomBytes(rng, 1 + rng() % 3000);
    if (i % 3 == 0 && junk.size() >= 8) std::memset(junk.data(), 0, 4);
    send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
    if (i % 2 == 0) {
      char reply[256];
      recv(fd, reply, sizeof(reply), 0);  // an error reply, or the connection closes
    }
    close(fd);
  }
  EXPECT_TRUE(store->running());
  auto again = Connect();
  ASSERT_TRUE(again);
  auto b = again->Get(id);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b->data()), b->size()), "still here");
  EXPECT_EQ(again->Stats()->pinned_objects, 1u);
}

}  // namespace
}  // namespace cumulus
