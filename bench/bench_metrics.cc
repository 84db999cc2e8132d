// bench_metrics: what one scrape of a node's metrics endpoint costs as the node's object store
// fills, against the store's own statistics walk (ObjectStore::Stats, which the page calls) in the
// same run.
//
//   build/bin/bench_metrics [--objects N,N,...] [--runs K]
//
// For each N (default 0, 10000, 100000): a store holding N objects of 64 bytes, and
//   anchor   ObjectStore::Stats() alone
//   render   NodeMetrics::Render(): the router's counts, resources, the store, /proc, NVML
//   scrape   GET /metrics through MetricsEndpoint on loopback (connect, render, read, close)
// each the median of K runs (default 50), in microseconds, with render / anchor.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/base/temp_dir.h"
#include "runtime/metrics/http_endpoint.h"
#include "runtime/metrics/node_metrics.h"
#include "runtime/net/tcp.h"
#include "runtime/object_store/object_store.h"

using namespace cumulus;
using Steady = std::chrono::steady_clock;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double MedianMicros(int runs, F fn) {
  std::vector<double> us;
  for (int i = 0; i < runs; ++i) {
    auto t0 = Steady::now();
    fn();
    us.push_back(std::chrono::duration<double, std::micro>(Steady::now() - t0).count());
  }
  return Median(us);
}

size_t Scrape(uint16_t port) {
  auto fd = ConnectTcp(HostPort{"127.0.0.1", port}, std::chrono::seconds(2));
  if (!fd.ok()) return 0;
  std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  size_t got = 0;
  if (SendAll(*fd, reinterpret_cast<const uint8_t*>(req.data()), req.size(),
              std::chrono::seconds(2))
          .ok()) {
    char buf[16384];
    while (true) {
      pollfd p{*fd, POLLIN, 0};
      if (poll(&p, 1, 2000) <= 0) break;
      ssize_t n = recv(*fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
  }
  close(*fd);
  return got;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint64_t> counts = {0, 10000, 100000};
  int runs = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--objects")) {
      counts.clear();
      for (char* p = argv[i + 1]; *p;) {
        counts.push_back(std::strtoull(p, &p, 10));
        if (*p == ',') ++p;
      }
    } else if (!std::strcmp(argv[i], "--runs")) {
      runs = std::max(1, std::atoi(argv[i + 1]));
    }
  }
  std::printf("command: %s", argv[0]);
  for (int i = 1; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\n%10s %12s %12s %12s %14s %10s\n", "objects", "anchor us", "render us", "scrape us",
              "render/anchor", "page B");
  for (uint64_t n : counts) {
    TempDir dir;
    ObjectStoreOptions o;
    o.directory = dir.path() + "/store";
    o.memory_capacity = std::max<uint64_t>(64ull << 20, (n * 64 + (16u << 20)) & ~4095ull);
    auto store = ObjectStore::Open(o);
    if (!store.ok()) {
      std::fprintf(stderr, "bench_metrics: %s\n", store.status().ToString().c_str());
      return 1;
    }
    char payload[64] = {1};
    TaskId task = TaskId::ForNormalTask(JobId::FromInt(1));
    for (uint64_t i = 0; i < n; ++i) {
      Status st = (*store)->Put(ObjectId::FromPut(task, static_cast<uint32_t>(i + 1)), payload,
                                sizeof(payload));
      if (!st.ok()) {
        std::fprintf(stderr, "bench_metrics: put %llu: %s\n", static_cast<unsigned long long>(i),
                     st.ToString().c_str());
        return 1;
      }
    }
    ObjectStore* s = store->get();
    metrics::NodeMetricsSource src;
    src.node_id = [] { return std::string("00112233445566778899aabbccddeeff"); };
    src.hostname = "bench";
    src.total = *ResourceSet::Parse("CPU=8,GPU=0,memory=16G,custom=4");
    src.available = [&] { return src.total; };
    src.router = [] {
      RouterMetrics r;
      r.tasks["RUNNING"] = 8;
      return r;
    };
    src.store = [s] { return s->Stats(); };
    metrics::NodeMetrics page(src);
    size_t bytes = page.Render().size();
    double anchor = MedianMicros(runs, [&] { (void)s->Stats(); });
    double render = MedianMicros(runs, [&] { (void)page.Render(); });
    auto endpoint = metrics::MetricsEndpoint::Start({}, [&] { return page.Render(); });
    if (!endpoint.ok()) {
      std::fprintf(stderr, "bench_metrics: %s\n", endpoint.status().ToString().c_str());
      return 1;
    }
    double scrape = MedianMicros(runs, [&] { (void)Scrape((*endpoint)->port()); });
    std::printf("%10llu %12.1f %12.1f %12.1f %14.2f %10zu\n", static_cast<unsigned long long>(n),
                anchor, render, scrape, anchor > 0 ? render / anchor : 0.0, bytes);
  }
  return 0;
}
