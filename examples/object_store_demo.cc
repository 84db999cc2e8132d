// object_store_demo: the node object store doing its job, across real processes.
//
// 1. starts `cumulus object-store serve` with a 64 MiB memory tier;
// 2. writes 160 MiB of objects into it, so most are spilled to RocksDB;
// 3. a second process reads every object back in place (zero-copy), restoring spilled ones, and
//    checks each checksum;
// 4. writes a durable object, kills the store with SIGKILL, restarts it, and reads the object.
#include <unistd.h>
#include <xxhash.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/base/subprocess.h"
#include "runtime/base/temp_dir.h"
#include "runtime/object_store/store_client.h"

using namespace cumulus;
using namespace std::chrono_literals;

namespace {

std::vector<uint8_t> Content(int i, size_t size) {
  std::vector<uint8_t> v(size);
  uint64_t x = 0x9E3779B97F4A7C15ull * (i + 1);
  for (size_t k = 0; k + 8 <= size; k += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(v.data() + k, &x, 8);
  }
  return v;
}

int Fail(const std::string& what, const Status& st) {
  std::fprintf(stderr, "object_store_demo: %s: %s\n", what.c_str(), st.ToString().c_str());
  return 1;
}

// The second process: reads each object in place and checks it against its expected checksum.
int Reader(const std::string& socket, int argc, char** argv) {
  auto client = StoreClient::Connect(socket, {"demo-reader", 10'000});
  if (!client.ok()) return Fail("reader connect", client.status());
  int ok = 0, in_place = 0;
  double slowest = 0;
  for (int i = 0; i + 1 < argc; i += 2) {
    auto id = ObjectId::FromHex(argv[i]);
    if (!id.ok()) return Fail("reader id", id.status());
    auto t0 = std::chrono::steady_clock::now();
    auto buf = (*client)->Get(*id);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!buf.ok()) return Fail("reader get", buf.status());
    slowest = std::max(slowest, ms);
    in_place += (*client)->region().Contains(buf->data(), buf->size());
    ok += XXH3_64bits(buf->data(), buf->size()) == std::stoull(argv[i + 1], nullptr, 16);
  }
  std::printf(
      "reader (pid %d): %d objects read, %d checksums match, %d read in place from shared "
      "memory; slowest Get %.1f ms (a restore from disk)\n",
      getpid(), argc / 2, ok, in_place, slowest);
  return ok == argc / 2 ? 0 : 1;
}

std::unique_ptr<Subprocess> StartStore(const std::string& dir) {
  auto p = std::make_unique<Subprocess>(
      std::vector<std::string>{ExecutableDir() + "/cumulus", "object-store", "serve", "--dir",
                               dir + "/store", "--memory", "64M"});
  auto ready = p->WaitForLine("object store ready", 20s);
  if (!ready) return nullptr;
  std::printf("  %s\n", ready->c_str());
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--reader") return Reader(argv[2], argc - 3, argv + 3);
  setenv("CUMULUS_LOG_LEVEL", "warn", 0);
  TempDir dir("cumulus-demo");
  std::string socket = dir.path() + "/store/store.sock";

  std::printf("1. starting a node object store with 64 MiB of shared memory\n");
  auto store = StartStore(dir.path());
  if (!store) return Fail("start", Status::Unavailable("the store process did not become ready"));
  auto client = StoreClient::Connect(socket, {"demo", 10'000});
  if (!client.ok()) return Fail("connect", client.status());

  const int kObjects = 40;
  const size_t kSize = 4 << 20;
  std::printf("2. writing %d objects of 4 MiB (%d MiB in all)\n", kObjects, kObjects * 4);
  std::vector<std::string> reader_args = {ExecutableDir() + "/object_store_demo", "--reader",
                                          socket};
  for (int i = 0; i < kObjects; ++i) {
    ObjectId id = ObjectId::FromPut(TaskId::ForDriver(JobId::FromInt(1)), i + 1);
    auto data = Content(i, kSize);
    Status st = (*client)->Put(id, data.data(), data.size());
    if (!st.ok()) return Fail("put", st);
    char sum[32];
    std::snprintf(sum, sizeof(sum), "%016llx",
                  static_cast<unsigned long long>(XXH3_64bits(data.data(), kSize)));
    reader_args.push_back(id.Hex());
    reader_args.push_back(sum);
  }
  auto stats = (*client)->Stats();
  if (!stats.ok()) return Fail("stats", stats.status());
  std::printf("   in memory: %llu objects (%llu of %llu bytes); spilled to RocksDB: %llu objects\n",
              static_cast<unsigned long long>(stats->objects_in_memory),
              static_cast<unsigned long long>(stats->used_bytes),
              static_cast<unsigned long long>(stats->capacity_bytes),
              static_cast<unsigned long long>(stats->objects_on_disk_only));
  if (stats->objects_on_disk_only == 0) {
    return Fail("spill", Status::Internal("160 MiB in a 64 MiB store spilled nothing to disk"));
  }

  std::printf("3. another process reads every object back\n");
  std::fflush(stdout);
  {
    Subprocess reader(reader_args);
    auto line = reader.WaitForLine("reader", 60s);
    if (!line) return Fail("reader", Status::Unavailable("the reader process printed nothing"));
    std::printf("   %s\n", line->c_str());
    auto rc = reader.Wait(10s);
    if (!rc || *rc != 0) return Fail("reader", Status::Internal("the reader process failed"));
  }
  stats = (*client)->Stats();
  if (!stats.ok()) return Fail("stats", stats.status());
  std::printf("   store: %llu spills, %llu restores so far\n",
              static_cast<unsigned long long>(stats->spill_count),
              static_cast<unsigned long long>(stats->restore_count));
  if (stats->restore_count == 0) {
    return Fail("restore", Status::Internal("reading every object back restored none from disk"));
  }

  std::printf("4. a durable object survives kill -9 of the store\n");
  ObjectId durable = ObjectId::FromPut(TaskId::ForDriver(JobId::FromInt(1)), 1000);
  auto payload = Content(1000, 1 << 20);
  Status st = (*client)->Put(durable, payload.data(), payload.size(), /*durable=*/true);
  if (!st.ok()) return Fail("durable put", st);
  client->reset();
  store->Kill(SIGKILL);
  store->Wait(10s);
  std::printf("   store killed with SIGKILL; restarting on the same directory\n");
  store = StartStore(dir.path());
  if (!store) return Fail("restart", Status::Unavailable("the store process did not come back"));
  auto again = StoreClient::Connect(socket, {"demo", 10'000});
  if (!again.ok()) return Fail("reconnect", again.status());
  auto back = (*again)->Get(durable);
  if (!back.ok()) return Fail("durable get", back.status());
  bool same = back->size() == payload.size() &&
              std::memcmp(back->data(), payload.data(), payload.size()) == 0;
  std::printf("   durable object %s: %s\n", durable.Hex().c_str(), same ? "intact" : "CORRUPT");
  back->Reset();
  again->reset();
  store->Kill(SIGTERM);
  store->Wait(10s);
  std::printf("done.\n");
  return same ? 0 : 1;
}
