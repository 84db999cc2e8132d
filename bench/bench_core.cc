// bench_core: the shape of Ray's core microbenchmarks on a cluster inside this process (a head and
// two nodes; workers are child processes), with the anchors measured in the same run:
//   raw TCP ping-pong between two processes (round trip) and raw loopback TCP bandwidth.
//
//   build/bin/bench_core [--quick]
//   build/bin/bench_core --timeline-overhead [--quick] [--pairs N] [--seed S]
//
// Every figure is the median of several repetitions (3 with --quick, 5 without).
// --timeline-overhead measures what the task timeline (runtime/core/timeline.h) costs on "tasks
// async": it runs this program again as child processes (each its own cluster, measuring only
// tasks async: --only-tasks-async [--tasks N] [--reps R]), N pairs (default 15, 7 with --quick)
// of one run with CUMULUS_TIMELINE=1 and one with =0 in a random order (seeded, the seed printed),
// and prints per metric the medians and the median of the pairs' ratios with its 95 % interval:
// the rate, the CPU time the whole process tree spent per task (time waiting for a CPU another
// program holds is not in it) and the tree's perf counters per task (timeline_overhead.h).
// bench/timeline_instructions.sh counts instructions per task under valgrind instead.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_timing.h"
#include "bench/timeline_overhead.h"
#include "bench/tree_counters.h"
#include "cumulus/cumulus.h"
#include "runtime/head/head_server.h"
#include "runtime/node/node_daemon.h"

namespace {

using cumulus::bench::Clock;
using cumulus::bench::Median;
using cumulus::bench::Seconds;

int Noop(int x) { return x; }
std::vector<uint8_t> MakeBytes(uint64_t n) { return std::vector<uint8_t>(n, 7); }

class Echo {
 public:
  int Call(int x) { return x; }
};
Echo* CreateEcho() { return new Echo(); }

}  // namespace

CUMULUS_REMOTE(Noop, MakeBytes, CreateEcho, &Echo::Call);

namespace {

// ---- anchors ----------------------------------------------------------------------------------

// A blocking listening socket on a free loopback port; `addr` is where it listens.
int ListenLoopback(sockaddr_in* addr) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  addr->sin_family = AF_INET;
  addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr->sin_port = 0;
  bind(ls, reinterpret_cast<sockaddr*>(addr), sizeof(*addr));
  socklen_t len = sizeof(*addr);
  getsockname(ls, reinterpret_cast<sockaddr*>(addr), &len);
  listen(ls, 1);
  return ls;
}

// Round trip of a 64-byte message between this process and a forked echo process.
double RawTcpRttMicros(int rounds) {
  sockaddr_in addr{};
  int ls = ListenLoopback(&addr);
  pid_t child = fork();
  if (child == 0) {
    int c = accept(ls, nullptr, nullptr);
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char buf[64];
    while (true) {
      size_t got = 0;
      while (got < sizeof(buf)) {
        ssize_t n = read(c, buf + got, sizeof(buf) - got);
        if (n <= 0) _exit(0);
        got += static_cast<size_t>(n);
      }
      if (write(c, buf, sizeof(buf)) != static_cast<ssize_t>(sizeof(buf))) _exit(0);
    }
  }
  close(ls);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  int one = 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  char buf[64] = {1};
  std::vector<double> samples;
  for (int i = 0; i < rounds; ++i) {
    auto t0 = Clock::now();
    (void)!write(s, buf, sizeof(buf));
    size_t got = 0;
    while (got < sizeof(buf)) got += static_cast<size_t>(read(s, buf + got, sizeof(buf) - got));
    samples.push_back(Seconds(t0, Clock::now()) * 1e6);
  }
  close(s);
  waitpid(child, nullptr, 0);
  return Median(samples);
}

// A raw CAF request/response between two processes, measured by bench_caf_anchor (next to this
// program) so that this binary, which is also its workers' program, does not load CAF.
cumulus::Result<double> CafRttMicros(int rounds) {
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string cmd = std::filesystem::path(self).parent_path().string() +
                    "/bench_caf_anchor --rounds " + std::to_string(rounds);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return cumulus::Status::Unavailable("cannot run " + cmd);
  double value = 0;
  int got = std::fscanf(p, "caf_rtt_us %lf", &value);
  int rc = pclose(p);
  if (got != 1 || rc != 0) return cumulus::Status::Unavailable(cmd + " failed");
  return value;
}

// Bytes per second through one loopback TCP connection (1 MiB writes), between two threads.
double RawTcpBandwidth(uint64_t total) {
  sockaddr_in addr{};
  int ls = ListenLoopback(&addr);
  std::thread sender([&] {
    int c = accept(ls, nullptr, nullptr);
    std::vector<char> chunk(1 << 20, 1);
    uint64_t sent = 0;
    while (sent < total) {
      ssize_t n = write(c, chunk.data(), std::min<uint64_t>(chunk.size(), total - sent));
      if (n <= 0) break;
      sent += static_cast<uint64_t>(n);
    }
    close(c);
  });
  int s = socket(AF_INET, SOCK_STREAM, 0);
  connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  std::vector<char> buf(1 << 20);
  auto t0 = Clock::now();
  uint64_t got = 0;
  while (got < total) {
    ssize_t n = read(s, buf.data(), buf.size());
    if (n <= 0) break;
    got += static_cast<uint64_t>(n);
  }
  double secs = Seconds(t0, Clock::now());
  sender.join();
  close(s);
  close(ls);
  return static_cast<double>(got) / secs;
}

// ---- measurements -----------------------------------------------------------------------------

template <typename F>
double Rate(int reps, int n, F body) {
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    body(n);
    rates.push_back(n / Seconds(t0, Clock::now()));
  }
  return Median(rates);
}

void Row(const char* name, double value, const char* unit, const std::string& note) {
  std::printf("| %-34s | %12.1f %-8s | %s |\n", name, value, unit, note.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (cumulus::IsWorker()) (void)cumulus::Init(argc, argv);  // workers never return from Init
  bool quick = false, only_tasks_async = false, timeline_overhead = false;
  cumulus::bench::OverheadOptions overhead;
  int tasks = 0, task_reps = 0;  // --only-tasks-async: the run's size (0: as --quick says)
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") quick = true;
    if (a == "--only-tasks-async") only_tasks_async = true;
    if (a == "--timeline-overhead") timeline_overhead = true;
    if (a == "--pairs" && i + 1 < argc) overhead.pairs = std::max(1, std::atoi(argv[++i]));
    if (a == "--seed" && i + 1 < argc) overhead.seed = std::strtoull(argv[++i], nullptr, 10);
    if (a == "--tasks" && i + 1 < argc) tasks = std::max(1, std::atoi(argv[++i]));
    if (a == "--reps" && i + 1 < argc) task_reps = std::max(1, std::atoi(argv[++i]));
  }
  if (timeline_overhead) {
    overhead.quick = quick;
    return cumulus::bench::TimelineOverhead(argv[0], overhead);
  }
  // Opened before the cluster starts, so that its threads and workers count with this process.
  std::optional<cumulus::bench::TreeCounters> counters;
  if (only_tasks_async) counters.emplace(cumulus::bench::TreeCounters::Open());
  const int reps = task_reps ? task_reps : quick ? 3 : 5;
  if (!only_tasks_async) std::printf("command: %s%s\n", argv[0], quick ? " --quick" : "");
  auto caf_rtt = only_tasks_async ? cumulus::Result<double>(cumulus::Status::Cancelled("not asked"))
                                  : CafRttMicros(quick ? 2000 : 10000);

  // A head and two nodes in this process; the driver attaches to node A.
  char tmpl[] = "/tmp/cumulus-bench-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  auto token = cumulus::CreateOrLoadToken(dir + "/token");
  cumulus::HeadOptions ho;
  ho.port = 0;
  ho.data_dir = dir + "/head";
  ho.token = *token;
  std::filesystem::create_directories(ho.data_dir);
  auto head = cumulus::HeadServer::Start(ho);
  if (!head.ok()) {
    std::fprintf(stderr, "head: %s\n", head.status().ToString().c_str());
    return 1;
  }
  auto start_node = [&](const std::string& name) {
    cumulus::NodeDaemonOptions no;
    no.head = cumulus::HostPort{"127.0.0.1", (*head)->port()};
    no.token = *token;
    no.data_dir = dir + "/" + name;
    no.object_store_memory = 640ull << 20;
    no.prefault_object_store = true;  // page faults on fresh shared memory cost ~11 us here
    no.labels = {{"bench", name}};
    std::filesystem::create_directories(no.data_dir);
    return cumulus::NodeDaemon::Start(no);
  };
  auto node_a = start_node("a");
  auto node_b = start_node("b");
  if (!node_a.ok() || !node_b.ok()) {
    std::fprintf(stderr, "nodes did not start\n");
    return 1;
  }
  cumulus::InitOptions io;
  io.address = "127.0.0.1:" + std::to_string((*head)->port());
  io.token_file = dir + "/token";
  if (auto st = cumulus::Init(argc, argv, io); !st.ok()) {
    std::fprintf(stderr, "init: %s\n", st.ToString().c_str());
    return 1;
  }
  cumulus::NodeId b_id = (*node_b)->node_id();
  if (cumulus::CurrentNodeId() == b_id) std::swap(*node_a, *node_b), b_id = (*node_b)->node_id();

  // The cluster down and its directory gone, in the order they were started.
  auto teardown = [&] {
    cumulus::Shutdown();
    node_b->reset();
    node_a->reset();
    head->reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return 0;
  };

  // Warm the worker pool.
  cumulus::Get(cumulus::Task(Noop).Remote(1));
  if (only_tasks_async) {
    auto async_run = [](int n) {
      std::vector<cumulus::ObjectRef<int>> refs;
      refs.reserve(n);
      for (int i = 0; i < n; ++i) refs.push_back(cumulus::Task(Noop).Remote(i));
      for (auto& r : refs) cumulus::Get(r);
    };
    const int n = tasks ? tasks : quick ? 5000 : 20000;
    async_run(n);  // warm: the workers of a burst are started
    cumulus::bench::TreeReading before = counters->Read();
    // Under valgrind --tool=callgrind --trace-children=yes (bench/timeline_instructions.sh):
    // every process's counts are zeroed at the window's start and dumped at its end (workers
    // are killed with their job, so what they count at exit would never be written).
    const bool callgrind = std::getenv("CUMULUS_BENCH_CALLGRIND") != nullptr;
    if (callgrind) (void)!std::system("callgrind_control -z >/dev/null 2>&1");
    uint64_t cpu0 = cumulus::bench::TreeCpuNanos();
    auto window0 = Clock::now();
    double rate = Rate(reps, n, async_run);
    auto window1 = Clock::now();
    uint64_t cpu1 = cumulus::bench::TreeCpuNanos();
    if (callgrind) (void)!std::system("callgrind_control -d window >/dev/null 2>&1");
    cumulus::bench::TreeReading after = counters->Read();
    std::printf("TASKS_ASYNC %.1f\n", rate);
    // The measured window in CLOCK_MONOTONIC seconds, for `perf record -k CLOCK_MONOTONIC` and
    // `perf report --time START,END` (a profile of the window alone).
    std::printf("TASKS_ASYNC_WINDOW %.6f,%.6f\n",
                std::chrono::duration<double>(window0.time_since_epoch()).count(),
                std::chrono::duration<double>(window1.time_since_epoch()).count());
    std::printf("TASKS_ASYNC_CPU_NS %.1f\n", static_cast<double>(cpu1 - cpu0) / (1.0 * reps * n));
    for (size_t i = 0; i < after.values.size() && i < before.values.size(); ++i) {
      std::printf("TASKS_ASYNC_PER_TASK %s=%.3f\n", after.values[i].first.c_str(),
                  (after.values[i].second - before.values[i].second) / (1.0 * reps * n));
    }
    for (const std::string& m : counters->missing())
      std::printf("TASKS_ASYNC_MISSING %s\n", m.c_str());
    std::fflush(stdout);
    return teardown();
  }

  double rtt_us = RawTcpRttMicros(quick ? 2000 : 10000);
  std::printf("\n| %-34s | %21s | %s |\n", "benchmark", "result", "compared with");
  std::printf("|%s|%s|%s|\n", std::string(36, '-').c_str(), std::string(23, '-').c_str(),
              std::string(40, '-').c_str());
  Row("raw TCP round trip (2 processes)", rtt_us, "us", "anchor");
  if (caf_rtt.ok()) {
    Row("raw CAF request/response (2 proc.)", *caf_rtt, "us", "anchor (middleman, loopback)");
  } else {
    std::printf("| %-34s | %21s | %s |\n", "raw CAF request/response (2 proc.)", "failed",
                caf_rtt.status().ToString().c_str());
  }

  int n_sync = quick ? 500 : 2000;
  double tasks_sync = Rate(reps, n_sync, [](int n) {
    for (int i = 0; i < n; ++i) cumulus::Get(cumulus::Task(Noop).Remote(i));
  });
  Row("tasks sync", tasks_sync, "/s", "target >= 5,000/s; Ray (64 vCPU) 981/s");

  int n_async = quick ? 5000 : 20000;
  double tasks_async = Rate(reps, n_async, [](int n) {
    std::vector<cumulus::ObjectRef<int>> refs;
    refs.reserve(n);
    for (int i = 0; i < n; ++i) refs.push_back(cumulus::Task(Noop).Remote(i));
    for (auto& r : refs) cumulus::Get(r);
  });
  Row("tasks async", tasks_async, "/s", "target >= 20,000/s; Ray 8,041/s");

  auto actor = cumulus::Actor(CreateEcho).Remote();
  cumulus::Get(actor.Task(&Echo::Call).Remote(0));
  std::vector<double> lat;
  int n_actor_sync = quick ? 2000 : 10000;
  auto t0 = Clock::now();
  for (int i = 0; i < n_actor_sync; ++i) {
    auto s = Clock::now();
    cumulus::Get(actor.Task(&Echo::Call).Remote(i));
    lat.push_back(Seconds(s, Clock::now()) * 1e6);
  }
  double actor_sync = n_actor_sync / Seconds(t0, Clock::now());
  double p50 = Median(lat);
  Row("actor calls sync", actor_sync, "/s", "Ray 2,012/s");
  char buf[128];
  if (caf_rtt.ok()) {
    std::snprintf(buf, sizeof(buf), "%.2fx raw TCP RTT (target <= 3x); %.2fx raw CAF", p50 / rtt_us,
                  p50 / *caf_rtt);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2fx raw TCP RTT (target <= 3x)", p50 / rtt_us);
  }
  Row("actor call sync p50", p50, "us", buf);

  int n_actor_async = quick ? 20000 : 100000;
  double actor_async = Rate(reps, n_actor_async, [&](int n) {
    std::vector<cumulus::ObjectRef<int>> refs;
    refs.reserve(n);
    for (int i = 0; i < n; ++i) refs.push_back(actor.Task(&Echo::Call).Remote(i));
    for (auto& r : refs) cumulus::Get(r);
  });
  Row("actor calls async 1:1", actor_async, "/s", "target >= 50,000/s; Ray 8,664/s");

  {
    const int callers = 2;
    std::vector<cumulus::ActorHandle<Echo>> actors;
    for (int i = 0; i < callers; ++i) actors.push_back(cumulus::Actor(CreateEcho).Remote());
    for (auto& a : actors) cumulus::Get(a.Task(&Echo::Call).Remote(0));
    double nn = Rate(reps, n_actor_async, [&](int n) {
      std::vector<std::thread> threads;
      for (int c = 0; c < callers; ++c) {
        threads.emplace_back([&, c] {
          std::vector<cumulus::ObjectRef<int>> refs;
          for (int i = 0; i < n / callers; ++i)
            refs.push_back(actors[c].Task(&Echo::Call).Remote(i));
          for (auto& r : refs) cumulus::Get(r);
        });
      }
      for (auto& t : threads) t.join();
    });
    Row("actor calls async n:n (n=2)", nn, "/s", "2 caller threads, 2 actors");
    for (auto& a : actors) (void)a.Kill();
  }

  int n_put = quick ? 20000 : 100000;
  double puts = Rate(reps, n_put, [](int n) {
    for (int i = 0; i < n; ++i) cumulus::Put(i);
  });
  Row("put calls (small)", puts, "/s", "");
  auto small = cumulus::Put(42);
  double gets = Rate(reps, n_put, [&](int n) {
    for (int i = 0; i < n; ++i) cumulus::Get(small);
  });
  Row("get calls (small)", gets, "/s", "");

  {
    const uint64_t size = quick ? (64ull << 20) : (256ull << 20);
    std::vector<uint8_t> big(size, 3);
    std::vector<double> rates, memcpy_rates;
    std::vector<uint8_t> dst(size);
    for (int r = 0; r < reps; ++r) {
      auto s = Clock::now();
      auto ref = cumulus::Put(big);
      rates.push_back(size / Seconds(s, Clock::now()));
      s = Clock::now();
      std::memcpy(dst.data(), big.data(), size);
      memcpy_rates.push_back(size / Seconds(s, Clock::now()));
    }
    double put_bw = Median(rates), mc = Median(memcpy_rates);
    std::snprintf(buf, sizeof(buf), "%.2fx memcpy (%.1f GB/s); Ray 19.9 GB/s", put_bw / mc,
                  mc / 1e9);
    Row(quick ? "put 64 MiB" : "put 256 MiB", put_bw / 1e9, "GB/s", buf);
  }

  {
    std::vector<cumulus::ObjectRef<int>> refs;
    for (int i = 0; i < 1000; ++i) refs.push_back(cumulus::Task(Noop).Remote(i));
    std::vector<double> times;
    cumulus::Wait(refs, refs.size());
    for (int r = 0; r < reps; ++r) {
      auto s = Clock::now();
      auto w = cumulus::Wait(refs, refs.size());
      times.push_back(Seconds(s, Clock::now()) * 1e6);
      if (w.ready.size() != refs.size()) std::printf("wait returned early\n");
    }
    Row("wait on 1,000 ready refs", Median(times), "us", "");
  }
  {
    // One bundle on the driver's node; then two bundles on two nodes (a reservation round trip to
    // the other node). Removal is asynchronous: the next create waits for the freed CPU.
    auto measure = [&](std::vector<std::map<std::string, double>> bundles,
                       cumulus::PlacementGroupStrategy strategy, int n) {
      return Rate(reps, n, [&](int count) {
        for (int i = 0; i < count; ++i) {
          auto g = cumulus::CreatePlacementGroup(bundles, strategy, std::chrono::seconds(30));
          if (!g.ok()) {
            std::printf("placement group: %s\n", g.status().ToString().c_str());
            return;
          }
          (void)cumulus::RemovePlacementGroup(*g);
        }
      });
    };
    int n = quick ? 100 : 500;
    Row("placement group create+remove",
        measure({{{"CPU", 1}}}, cumulus::PlacementGroupStrategy::kPack, n), "/s",
        "1 bundle {CPU=1}, local node");
    Row("  2 bundles STRICT_SPREAD",
        measure({{{"CPU", 1}}, {{"CPU", 1}}}, cumulus::PlacementGroupStrategy::kStrictSpread, n),
        "/s", "one bundle reserved on the other node");
  }

  {
    const uint64_t size = quick ? (64ull << 20) : (256ull << 20);
    std::vector<double> rates, raws;
    for (int r = 0; r < reps; ++r) {
      raws.push_back(RawTcpBandwidth(size));  // the anchor, interleaved: same machine state
      auto ref = cumulus::Task(MakeBytes).SetNodeAffinity(b_id).Remote(size);
      cumulus::Wait(std::vector<cumulus::ObjectRef<std::vector<uint8_t>>>{ref}, 1);
      auto s = Clock::now();
      auto payload = cumulus::internal::CurrentRuntime()->Get(ref.id(), -1);  // the pull, no decode
      double secs = Seconds(s, Clock::now());
      if (!payload.ok() || payload->bytes.size() < size) {
        std::printf("transfer failed: %s\n", payload.status().ToString().c_str());
        break;
      }
      rates.push_back(size / secs);
    }
    double raw = Median(raws);
    double moved = Median(rates);
    std::snprintf(buf, sizeof(buf), "%.2fx raw TCP (%.2f GB/s, median of %d; target >= 0.8x)",
                  moved / raw, raw / 1e9, reps);
    Row("cross-node Get (pull) GB/s", moved / 1e9, "GB/s", buf);
  }

  {
    // Cold start: spawn to hello, as the node measured it for every worker it started.
    std::vector<int64_t> starts = (*node_a)->router().WorkerStartupMicros();
    auto more = (*node_b)->router().WorkerStartupMicros();
    starts.insert(starts.end(), more.begin(), more.end());
    std::vector<double> ms;
    for (auto us : starts) ms.push_back(us / 1000.0);
    std::snprintf(buf, sizeof(buf), "median of %zu workers; max %.1f ms (target <= 50 ms)",
                  ms.size(), ms.empty() ? 0.0 : *std::max_element(ms.begin(), ms.end()));
    Row("worker cold start", Median(ms), "ms", buf);
    std::vector<double> creation;
    for (int r = 0; r < reps; ++r) {
      auto s = Clock::now();
      auto a = cumulus::Actor(CreateEcho).SetResource("CPU", 0.01).Remote();
      cumulus::Get(a.Task(&Echo::Call).Remote(1));
      creation.push_back(Seconds(s, Clock::now()) * 1000);
      (void)a.Kill();
    }
    Row("actor create + first call", Median(creation), "ms",
        "an idle pooled worker becomes the actor");
  }

  return teardown();
}
