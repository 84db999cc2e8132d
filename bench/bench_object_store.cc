// bench_object_store: the node object store against its physical anchors, measured in one run.
//
//   put throughput (1 KiB, 1 MiB, 64 MiB)     vs memcpy of the same bytes into warm memory
//   cross-process get latency (1 KiB, 1 GiB)  another process's Get of a sealed object (zero-copy)
//   spill throughput (1 MiB, 64 MiB)          vs raw RocksDB Put of the same values, same options
//   restore throughput (1 MiB, 64 MiB)        vs raw RocksDB Get of the same keys
//   --drain: a draining node's handoff (1 GiB in 64 MiB objects: the taker pulls each, the head
//            records each move, the copies go) vs the taker pulling the same objects directly
//
// Every figure is the median of several runs. --quick runs fewer, smaller repetitions.
#include <fcntl.h>
#include <netinet/in.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/base/logging.h"
#include "runtime/base/temp_dir.h"
#include "runtime/head/head_server.h"
#include "runtime/net/tcp.h"
#include "runtime/node/object_handoff.h"
#include "runtime/object_store/object_store.h"
#include "runtime/object_store/spill_store_rocksdb.h"
#include "runtime/object_store/store_client.h"
#include "runtime/object_store/store_server.h"
#include "runtime/transfer/object_transfer.h"

using namespace cumulus;
using Steady = std::chrono::steady_clock;

namespace {

double Seconds(Steady::time_point a, Steady::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string SizeName(uint64_t n) {
  if (n >= (1ull << 30)) return std::to_string(n >> 30) + " GiB";
  if (n >= (1ull << 20)) return std::to_string(n >> 20) + " MiB";
  return std::to_string(n >> 10) + " KiB";
}

std::vector<uint8_t> Bytes(uint64_t n) {
  std::vector<uint8_t> v(n);
  uint64_t x = 88172645463325252ull;
  for (uint64_t i = 0; i + 8 <= n; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(v.data() + i, &x, 8);
  }
  return v;
}

ObjectId NewId() { return ObjectId::FromPut(TaskId::ForNormalTask(JobId::FromInt(9)), 1); }

struct Row {
  std::string metric, size, ours, anchor_name, anchor;
  double ratio;  // < 0: none
  std::string target;
};
std::vector<Row> g_rows;

std::string Gbps(double bytes_per_s) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.2f GB/s", bytes_per_s / 1e9);
  return b;
}
std::string Micros(double s) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.1f us", s * 1e6);
  return b;
}

std::unique_ptr<ObjectStore> OpenStore(const std::string& dir, uint64_t capacity) {
  ObjectStoreOptions o;
  o.directory = dir;
  o.memory_capacity = capacity;
  auto s = ObjectStore::Open(o);
  if (!s.ok()) {
    std::fprintf(stderr, "bench_object_store: %s\n", s.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*s);
}

void Check(const Status& st, const char* what) {
  if (!st.ok()) {
    std::fprintf(stderr, "bench_object_store: %s: %s\n", what, st.ToString().c_str());
    std::exit(1);
  }
}

// put vs memcpy: `batch` objects per timed round, deleted between rounds (so memory is warm, as in
// a store that has been running).
void BenchPut(uint64_t size, int batch, int runs) {
  TempDir dir("bench-put");
  auto store = OpenStore(dir.path(), size * batch + (64 << 20));
  auto src = Bytes(size);
  std::vector<std::vector<uint8_t>> dst(batch, std::vector<uint8_t>(size, 1));
  std::vector<double> ours, anchor;
  for (int r = 0; r <= runs; ++r) {  // round 0 warms up
    std::vector<ObjectId> ids(batch);
    for (auto& id : ids) id = NewId();
    auto t0 = Steady::now();
    for (auto& id : ids) Check(store->Put(id, src.data(), size), "put");
    auto t1 = Steady::now();
    for (auto& d : dst) std::memcpy(d.data(), src.data(), size);
    auto t2 = Steady::now();
    for (auto& id : ids) Check(store->Delete(id), "delete");
    if (r == 0) continue;
    ours.push_back(size * batch / Seconds(t0, t1));
    anchor.push_back(size * batch / Seconds(t1, t2));
  }
  double o = Median(ours), a = Median(anchor);
  g_rows.push_back({"put throughput", SizeName(size), Gbps(o), "memcpy", Gbps(a), o / a,
                    size == (64u << 20) ? ">= 0.5" : ""});
}

// Spill and restore vs raw RocksDB with the store's own options. Both databases are flushed
// before the reads, so values come from blob files as they do once a store has spilled more than
// a memtable holds. Odd runs measure the anchor first, so neither side always gets a cold disk.
void BenchSpillRestore(uint64_t size, int count, int runs) {
  std::vector<double> spill, put, restore, get;
  auto src = Bytes(size);
  for (int r = 0; r < runs; ++r) {
    TempDir dir("bench-spill");
    auto store = OpenStore(dir.path() + "/store", size * count + (64 << 20));
    std::vector<ObjectId> ids(count);
    for (auto& id : ids) {
      id = NewId();
      Check(store->Put(id, src.data(), size), "put");
    }
    rocksdb::Options options;
    SpillStoreOptions defaults;
    ConfigureSpillDb(defaults, &options);
    rocksdb::WriteOptions wo;
    ConfigureSpillWrite(&wo);
    rocksdb::DB* raw = nullptr;
    if (!rocksdb::DB::Open(options, dir.path() + "/raw", &raw).ok()) {
      Check(Status::Internal("cannot open the raw RocksDB anchor"), "raw open");
    }
    std::unique_ptr<rocksdb::DB> db(raw);

    auto ours_write = [&] {
      auto t0 = Steady::now();
      for (auto& id : ids) Check(store->Spill(id), "spill");
      spill.push_back(size * count / Seconds(t0, Steady::now()));
    };
    auto raw_write = [&] {
      auto t0 = Steady::now();
      for (auto& id : ids) {
        auto s = db->Put(wo, "d" + id.Binary(),
                         rocksdb::Slice(reinterpret_cast<const char*>(src.data()), size));
        if (!s.ok()) Check(Status::Internal(s.ToString()), "raw put");
      }
      put.push_back(size * count / Seconds(t0, Steady::now()));
    };
    auto ours_read = [&] {
      auto t0 = Steady::now();
      for (auto& id : ids) Check(store->Get(id).status(), "restore");
      restore.push_back(size * count / Seconds(t0, Steady::now()));
    };
    auto raw_read = [&] {
      uint64_t sink = 0;
      auto t0 = Steady::now();
      for (auto& id : ids) {
        rocksdb::PinnableSlice v;
        auto s = db->Get(rocksdb::ReadOptions(), db->DefaultColumnFamily(), "d" + id.Binary(), &v);
        if (!s.ok()) Check(Status::Internal(s.ToString()), "raw get");
        sink += v.size();
      }
      get.push_back(size * count / Seconds(t0, Steady::now()));
      if (sink != size * count) Check(Status::Internal("raw get size mismatch"), "raw get");
    };
    if (r % 2 == 0) {
      ours_write();
      raw_write();
    } else {
      raw_write();
      ours_write();
    }
    Check(store->spill_store().Flush(), "flush");
    if (!db->Flush(rocksdb::FlushOptions()).ok()) Check(Status::Internal("raw flush"), "flush");
    if (r % 2 == 0) {
      ours_read();
      raw_read();
    } else {
      raw_read();
      ours_read();
    }
    db->Close();
  }
  double s = Median(spill), p = Median(put), rs = Median(restore), g = Median(get);
  g_rows.push_back(
      {"spill throughput", SizeName(size), Gbps(s), "raw RocksDB Put", Gbps(p), s / p, ">= 0.7"});
  g_rows.push_back({"restore throughput", SizeName(size), Gbps(rs), "raw RocksDB Get", Gbps(g),
                    rs / g, ">= 0.7"});
}

// Raw TCP over loopback: one thread sends `size` bytes from memory, this one receives them into
// memory, in the same 8 MiB chunks as the object channel, with the kernel's buffer autotuning (as
// the channel uses). Returns bytes/s.
double RawTcp(const std::vector<uint8_t>& src, std::vector<uint8_t>& dst) {
  uint16_t port = 0;
  auto listener = ListenTcp("127.0.0.1", 0, &port);
  Check(listener.status(), "listen");
  std::thread sender([&] {
    auto fd = ConnectTcp(HostPort{"127.0.0.1", port}, std::chrono::seconds(5));
    Check(fd.status(), "connect");
    int flags = fcntl(*fd, F_GETFL);
    fcntl(*fd, F_SETFL, flags & ~O_NONBLOCK);
    for (size_t off = 0; off < src.size();) {
      ssize_t n =
          send(*fd, src.data() + off, std::min<size_t>(src.size() - off, 8u << 20), MSG_NOSIGNAL);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(*fd);
  });
  int lfd = *listener;
  int flags = fcntl(lfd, F_GETFL);
  fcntl(lfd, F_SETFL, flags & ~O_NONBLOCK);
  int fd = accept(lfd, nullptr, nullptr);
  auto t0 = Steady::now();
  size_t got = 0;
  while (got < dst.size()) {
    ssize_t n = recv(fd, dst.data() + got, std::min<size_t>(dst.size() - got, 8u << 20), 0);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  double s = Seconds(t0, Steady::now());
  sender.join();
  close(fd);
  close(lfd);
  if (got != dst.size()) Check(Status::Internal("raw TCP moved too few bytes"), "raw tcp");
  return dst.size() / s;
}

// Cross-node transfer: node A's store serves, node B's store pulls (both in this process, over
// loopback TCP as between two machines' processes) vs raw TCP of the same bytes.
void BenchTransfer(uint64_t size, int runs) {
  TempDir dir("bench-xfer");
  auto a = OpenStore(dir.path() + "/a", size + (64 << 20));
  auto b = OpenStore(dir.path() + "/b", size + (64 << 20));
  auto server = ObjectTransferServer::Start(a.get(), "127.0.0.1", 0, "bench-token");
  Check(server.status(), "transfer server");
  HostPort from{"127.0.0.1", (*server)->port()};
  auto src = Bytes(size);
  std::vector<uint8_t> dst(size, 1);
  ObjectId id = NewId();
  Check(a->Put(id, src.data(), size), "put");
  std::vector<double> ours, anchor;
  for (int r = 0; r <= runs; ++r) {  // round 0 warms both sides' memory
    auto t0 = Steady::now();
    Check(PullObject(from, "bench-token", id, PullInto(*b)), "pull");
    double s = Seconds(t0, Steady::now());
    Check(b->Delete(id), "delete");
    double raw = RawTcp(src, dst);
    if (r == 0) continue;
    ours.push_back(size / s);
    anchor.push_back(raw);
  }
  double o = Median(ours), t = Median(anchor);
  g_rows.push_back({"cross-node transfer", SizeName(size), Gbps(o), "raw TCP loopback", Gbps(t),
                    o / t, ">= 0.8"});
}

// A draining node's handoff of `total` bytes in `object`-sized objects (ObjectHandoff: the taker
// pulls each over the object channel, an in-process head records each move, the copies are
// deleted) against the anchor: the taker pulling the same objects from the same node directly.
// Runs alternate which side goes first; the objects are put again (not timed) before each.
void BenchDrain(uint64_t total, uint64_t object, int runs) {
  TempDir dir("bench-drain");
  const std::string token = "bench-token-bench-token-bench-token";
  HeadOptions ho;
  ho.port = 0;
  ho.data_dir = dir.path() + "/head";
  ho.token = token;
  std::filesystem::create_directories(ho.data_dir);
  auto head = HeadServer::Start(ho);
  Check(head.status(), "head");
  auto a = OpenStore(dir.path() + "/a", total + (64 << 20));
  auto b = OpenStore(dir.path() + "/b", total + (64 << 20));
  auto server_a = ObjectTransferServer::Start(a.get(), "127.0.0.1", 0, token);
  auto server_b = ObjectTransferServer::Start(b.get(), "127.0.0.1", 0, token);
  Check(server_a.status(), "transfer server a");
  Check(server_b.status(), "transfer server b");
  HostPort from{"127.0.0.1", (*server_a)->port()};
  NodeRecord taker;
  taker.id = NodeId::FromRandom();
  taker.object_store_address = "127.0.0.1:" + std::to_string((*server_b)->port());
  auto src = Bytes(object);
  const size_t count = total / object;
  std::vector<ObjectId> ids;
  auto fill = [&] {
    ids.clear();
    for (size_t i = 0; i < count; ++i) {
      ids.push_back(NewId());
      Check(a->Put(ids.back(), src.data(), object), "put");
    }
  };
  auto clear_b = [&] {
    for (auto& id : ids) Check(b->Delete(id), "delete");
  };
  std::vector<double> ours, anchor;
  for (int r = 0; r <= runs; ++r) {  // round 0 warms both sides' memory
    double handoff_s = 0, pull_s = 0;
    for (int side = 0; side < 2; ++side) {
      fill();
      bool handoff = (side == 0) == (r % 2 == 0);
      auto t0 = Steady::now();
      if (handoff) {
        ObjectHandoffOptions o;
        o.store = a.get();
        o.self = NodeId::FromRandom();
        o.self_transfer = from.ToString();
        o.head = HostPort{"127.0.0.1", (*head)->port()};
        o.token = token;
        ObjectHandoff h(o);
        h.Step({taker}, count);
        while (h.running()) std::this_thread::sleep_for(std::chrono::microseconds(200));
        handoff_s = Seconds(t0, Steady::now());
        if (h.objects_moved() != count || h.Step({taker}, 0) != "") {
          Check(Status::Internal("the handoff did not move every object"), "handoff");
        }
      } else {
        for (auto& id : ids) Check(PullObject(from, token, id, PullInto(*b)), "pull");
        pull_s = Seconds(t0, Steady::now());
        for (auto& id : ids) Check(a->Delete(id), "delete");
      }
      clear_b();
    }
    if (r == 0) continue;
    ours.push_back(total / handoff_s);
    anchor.push_back(total / pull_s);
  }
  double o = Median(ours), t = Median(anchor);
  g_rows.push_back(
      {"drain handoff", SizeName(total), Gbps(o), "direct pulls", Gbps(t), o / t, ">= 0.8"});
}

// The other process of the get benchmark: prints the median Get latency of each object.
int GetClient(const std::string& socket, const std::vector<std::string>& ids_hex, int iterations) {
  auto client = StoreClient::Connect(socket, {"bench", 10'000});
  Check(client.status(), "connect");
  for (auto& hex : ids_hex) {
    auto id = ObjectId::FromHex(hex);
    Check(id.status(), "id");
    std::vector<double> lat;
    uint64_t sink = 0;
    for (int i = 0; i < iterations; ++i) {
      auto t0 = Steady::now();
      auto b = (*client)->Get(*id);
      auto t1 = Steady::now();
      Check(b.status(), "get");
      sink += b->data()[b->size() - 1];  // touch the object: it is really there
      lat.push_back(Seconds(t0, t1));
    }
    std::printf("%s %.9f %llu\n", hex.c_str(), Median(lat), static_cast<unsigned long long>(sink));
  }
  return 0;
}

void BenchCrossProcessGet(int iterations) {
  TempDir dir("bench-get");
  const uint64_t big = 1ull << 30, small = 1ull << 10;
  auto store = OpenStore(dir.path(), big + (64 << 20));
  ObjectId big_id = NewId(), small_id = NewId();
  {
    auto b = store->Create(big_id, big);
    Check(b.status(), "create 1 GiB");
    std::memset(b->data, 0x5a, big);
    Check(store->Seal(big_id), "seal");
  }
  std::vector<uint8_t> s(small, 1);
  Check(store->Put(small_id, s.data(), small), "put");
  auto server = StoreServer::Start(store.get(), dir.path() + "/s.sock");
  Check(server.status(), "serve");
  char self[4096] = {0};
  if (readlink("/proc/self/exe", self, sizeof(self) - 1) <= 0)
    Check(Status::Internal("readlink"), "self");
  std::string cmd = std::string(self) + " --get-client " + dir.path() + "/s.sock " +
                    small_id.Hex() + " " + big_id.Hex() + " " + std::to_string(iterations);
  FILE* p = popen(cmd.c_str(), "r");
  double lat_small = -1, lat_big = -1;
  char hex[80];
  double lat;
  unsigned long long sink;
  while (p && std::fscanf(p, "%79s %lf %llu", hex, &lat, &sink) == 3) {
    if (small_id.Hex() == hex) lat_small = lat;
    if (big_id.Hex() == hex) lat_big = lat;
  }
  if (!p || pclose(p) != 0 || lat_small < 0 || lat_big < 0) {
    Check(Status::Internal("the get client process failed"), "cross-process get");
  }
  g_rows.push_back({"cross-process get latency", "1 KiB", Micros(lat_small), "", "", -1, ""});
  g_rows.push_back({"cross-process get latency", "1 GiB", Micros(lat_big), "1 KiB get",
                    Micros(lat_small), lat_big / lat_small, "< 1000 us"});
}

}  // namespace

void BenchAll(bool quick, int runs);

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "--get-client" && args.size() == 5) {
    return GetClient(args[1], {args[2], args[3]}, std::stoi(args[4]));
  }
  bool quick = false, drain = false;
  for (auto& a : args) {
    if (a == "--quick")
      quick = true;
    else if (a == "--drain")
      drain = true;
    else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: bench_object_store [--quick] [--drain]\n"
          "  --drain  only a draining node's handoff of 1 GiB (--quick: 256 MiB) of 64 MiB\n"
          "           objects, against direct pulls of the same objects\n");
      return 0;
    } else {
      std::fprintf(stderr,
                   "bench_object_store: unknown argument '%s'; usage: bench_object_store "
                   "[--quick] [--drain]\n",
                   a.c_str());
      return 2;
    }
  }
  setenv("CUMULUS_LOG_LEVEL", "warn", 0);
  SetLogLevel(LogLevel::kWarn);
  const int runs = quick ? 3 : 7;
  auto start = Steady::now();
  if (drain) {
    BenchDrain(quick ? (256u << 20) : (1u << 30), 64u << 20, runs);
  } else {
    BenchAll(quick, runs);
  }
  std::string flags = std::string(quick ? " --quick" : "") + (drain ? " --drain" : "");
  std::printf(
      "\nbench_object_store: node object store vs its anchors (median of %d runs; %.1f s)\n", runs,
      Seconds(start, Steady::now()));
  std::printf("reproduce: build/bin/bench_object_store%s\n\n", flags.c_str());
  std::printf("%-27s %-7s %-12s %-16s %-12s %-7s %s\n", "metric", "size", "cumulus", "anchor",
              "anchor value", "ratio", "target");
  for (auto& r : g_rows) {
    char ratio[16] = "";
    if (r.ratio >= 0) std::snprintf(ratio, sizeof(ratio), "%.2f", r.ratio);
    std::printf("%-27s %-7s %-12s %-16s %-12s %-7s %s\n", r.metric.c_str(), r.size.c_str(),
                r.ours.c_str(), r.anchor_name.c_str(), r.anchor.c_str(), ratio, r.target.c_str());
  }
  return 0;
}

void BenchAll(bool quick, int runs) {
  BenchPut(1 << 10, quick ? 2000 : 20000, runs);
  BenchPut(1 << 20, quick ? 100 : 400, runs);
  BenchPut(64 << 20, quick ? 4 : 8, runs);
  BenchCrossProcessGet(quick ? 200 : 2000);
  BenchSpillRestore(1 << 20, quick ? 32 : 256, runs);
  BenchSpillRestore(64 << 20, quick ? 2 : 8, runs);
  BenchTransfer(quick ? (64u << 20) : (256u << 20), runs);
}
