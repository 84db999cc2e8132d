// bench_collectives: allreduce (float32, sum) of 1 KiB ... 256 MiB with 2 and 4 ranks on loopback,
// each rank a process. Compared in the same run, op for op (interleaved), with raw Gloo (new-style
// gloo::allreduce, ring, its own FileStore rendezvous) and with the bound for a ring,
// 2(n-1)/n * S / B, where B is raw loopback TCP bandwidth measured first.
//
//   build/bin/bench_collectives           1 KiB ... 256 MiB
//   build/bin/bench_collectives --quick   1 KiB ... 64 MiB, fewer repetitions (< 30 s)
//
// Then data-parallel training throughput (samples/s) of examples/fashion_mnist with 1, 2 and 4
// workers, against perfect scaling on this machine's cores, and with one GPU where there is one.
//
// algbw = S / t; busbw = algbw * 2(n-1)/n (what each link carried per second). Times are medians.
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "runtime/base/subprocess.h"
#include "runtime/base/temp_dir.h"
#include "runtime/collective/collective.h"
#include "runtime/head/head_server.h"

using namespace cumulus;
using Steady = std::chrono::steady_clock;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Raw loopback TCP: one connection, `bytes` written in 1 MiB writes; bytes/s, median of 3.
double LoopbackBandwidth(size_t bytes) {
  std::vector<double> rates;
  for (int rep = 0; rep < 3; ++rep) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    listen(ls, 1);
    getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    connect(c, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    int s = accept(ls, nullptr, nullptr);
    std::thread reader([&] {
      std::vector<char> buf(1 << 20);
      size_t got = 0;
      while (got < bytes) {
        ssize_t n = read(s, buf.data(), buf.size());
        if (n <= 0) break;
        got += static_cast<size_t>(n);
      }
    });
    std::vector<char> chunk(1 << 20, 1);
    auto t0 = Steady::now();
    for (size_t sent = 0; sent < bytes;) {
      ssize_t n = write(c, chunk.data(), std::min(chunk.size(), bytes - sent));
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    reader.join();
    rates.push_back(static_cast<double>(bytes) /
                    std::chrono::duration<double>(Steady::now() - t0).count());
    close(c);
    close(s);
    close(ls);
  }
  return Median(rates);
}

struct Setup {
  HostPort head;
  std::string token;
  std::string store_dir;
  bool quick = false;
  double tcp_bytes_per_s = 0;
};

int Rank(const Setup& s, int world, int rank) {
  CollectiveOptions o;
  o.name = "bench-" + std::to_string(world);
  o.world_size = world;
  o.rank = rank;
  o.head = s.head;
  o.token = s.token;
  auto ours = CollectiveGroup::Join(o);
  if (!ours.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, ours.status().ToString().c_str());
    return 1;
  }
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  std::string dir = s.store_dir + "/" + std::to_string(world);
  std::filesystem::create_directories(dir);
  gloo::rendezvous::FileStore store(dir);
  auto raw = std::make_shared<gloo::rendezvous::Context>(rank, world);
  raw->connectFullMesh(store, device);

  std::vector<size_t> sizes = {1 << 10, 16 << 10, 256 << 10, 4 << 20, 64 << 20};
  if (!s.quick) sizes.push_back(256 << 20);
  for (size_t bytes : sizes) {
    size_t n = bytes / sizeof(float);
    std::vector<float> a(n, 1.0f), b(n, 1.0f);
    int reps = bytes <= (16 << 10)    ? 200
               : bytes <= (256 << 10) ? 50
               : bytes <= (4 << 20)   ? 10
               : s.quick              ? 3
                                      : 5;
    std::vector<double> t_ours, t_raw;
    uint32_t tag = 1 << 20;
    // Interleaved, alternating which goes first (neither always runs on a warmer cache).
    auto run_ours = [&] {
      auto t0 = Steady::now();
      Status st = (*ours)->AllReduce(a.data(), n, DType::kFloat32, ReduceOp::kSum);
      if (!st.ok()) {
        std::fprintf(stderr, "rank %d: %s\n", rank, st.ToString().c_str());
        _exit(1);
      }
      return std::chrono::duration<double>(Steady::now() - t0).count();
    };
    auto run_raw = [&] {
      auto t0 = Steady::now();
      gloo::AllreduceOptions opts(raw);
      opts.setInput(b.data(), n);
      opts.setOutput(b.data(), n);
      opts.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      opts.setTag(tag++);
      gloo::allreduce(opts);
      return std::chrono::duration<double>(Steady::now() - t0).count();
    };
    for (int r = -1; r < reps; ++r) {  // r == -1: warm-up
      double to, tr;
      if (r % 2 == 0) {
        to = run_ours();
        tr = run_raw();
      } else {
        tr = run_raw();
        to = run_ours();
      }
      if (r < 0) continue;
      t_ours.push_back(to);
      t_raw.push_back(tr);
      // Keep values bounded (sums of ones grow by the world size each time).
      if (a[0] > 1e6f) std::fill(a.begin(), a.end(), 1.0f), std::fill(b.begin(), b.end(), 1.0f);
    }
    if (rank == 0) {
      double ours_s = Median(t_ours), raw_s = Median(t_raw);
      double factor = 2.0 * (world - 1) / world;
      double busbw = factor * static_cast<double>(bytes) / ours_s;
      double bound_s = factor * static_cast<double>(bytes) / s.tcp_bytes_per_s;
      char size[32];
      if (bytes >= (1 << 20)) {
        std::snprintf(size, sizeof(size), "%zu MiB", bytes >> 20);
      } else {
        std::snprintf(size, sizeof(size), "%zu KiB", bytes >> 10);
      }
      std::printf("| %d | %s | %.1f | %.1f | %.2fx | %.2f | %.2f | %.1f | %.2f |\n", world, size,
                  ours_s * 1e6, raw_s * 1e6, raw_s / ours_s,
                  static_cast<double>(bytes) / ours_s / 1e9, busbw / 1e9, bound_s * 1e6,
                  bound_s / ours_s);
      std::fflush(stdout);
    }
  }
  return 0;
}

// Data-parallel training throughput: examples/fashion_mnist (one epoch on `images` training
// images, on its own embedded cluster) with 1, 2 and 4 workers; samples/s, median of `reps` runs.
// The anchor is the 1-worker rate times min(N, cores): perfect scaling on this machine.
struct TrainingRun {
  bool ok = false;
  double accuracy = 0, samples_per_second = 0;
  std::string output;
};

// One epoch of fashion_mnist with `args`; its final line is
// "final test accuracy 84.08% after 1 epochs (20162 samples/s with 2 workers)".
TrainingRun Train(const std::string& bin, std::vector<std::string> args) {
  args.insert(args.begin(), bin);
  Subprocess p(args, /*merge_stderr=*/true);
  TrainingRun run;
  run.output = p.ReadAll(std::chrono::seconds(600));
  size_t at = run.output.find("final test accuracy ");
  run.ok = at != std::string::npos &&
           std::sscanf(run.output.c_str() + at, "final test accuracy %lf%% after %*d epochs (%lf",
                       &run.accuracy, &run.samples_per_second) == 2;
  return run;
}

int TrainingThroughput(bool quick) {
  std::string bin = ExecutableDir() + "/fashion_mnist";
  if (access(bin.c_str(), X_OK) != 0) {
    std::printf("# training: skipped, %s was not built\n", bin.c_str());
    return 0;
  }
  const int images = quick ? 12000 : 60000, reps = quick ? 1 : 3;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf(
      "\n# data-parallel training: %s --workers N --epochs 1 --train-limit %d (MLP "
      "784-256-128-10, global batch 128); %d core%s; median of %d run%s\n",
      bin.c_str(), images, cores, cores == 1 ? "" : "s", reps, reps == 1 ? "" : "s");
  std::printf(
      "| workers | samples/s | vs 1 worker | ideal: 1-worker rate x min(N, cores) | "
      "samples/s / ideal | test accuracy after the epoch |\n");
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  unsetenv("CUMULUS_ADDRESS");
  double one = 0;
  for (int workers : {1, 2, 4}) {
    std::vector<double> rates;
    std::string accuracy = "?";
    for (int rep = 0; rep < reps; ++rep) {
      TrainingRun run = Train(bin, {"--workers", std::to_string(workers), "--epochs", "1",
                                    "--train-limit", std::to_string(images)});
      if (!run.ok) {
        std::printf("# training with %d workers failed:\n%s\n", workers, run.output.c_str());
        return 1;
      }
      rates.push_back(run.samples_per_second);
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.2f%%", run.accuracy);
      accuracy = buf;
    }
    double rate = Median(rates);
    if (workers == 1) one = rate;
    double ideal = one * std::min(workers, cores);
    std::printf("| %d | %.0f | %.2fx | %.0f | %.2f | %s |\n", workers, rate, rate / one, ideal,
                rate / ideal, accuracy.c_str());
    std::fflush(stdout);
  }
  // The same on one GPU (cuBLAS and kernels, a one-rank NCCL group), where a node has one.
  TrainingRun gpu = Train(bin, {"--device", "gpu", "--workers", "1", "--epochs", "1",
                                "--train-limit", std::to_string(images)});
  if (gpu.ok) {
    std::printf("| 1 GPU | %.0f | %.2fx | - | - | %.2f%% |\n", gpu.samples_per_second,
                gpu.samples_per_second / one, gpu.accuracy);
  } else if (gpu.output.find("no GPU is visible to this process") != std::string::npos) {
    std::printf("# GPU: skipped, no GPU is visible here (so the embedded cluster has none)\n");
  } else {
    std::printf("# GPU training failed:\n%s\n", gpu.output.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Setup s;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      s.quick = true;
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: bench_collectives [--quick]\n");
      return 0;
    } else {
      std::fprintf(stderr, "bench_collectives: unknown argument '%s'; run --help\n", a.c_str());
      return 2;
    }
  }
  std::printf("# %s%s\n", argv[0], s.quick ? " --quick" : "");
  TempDir dir;
  setenv("CUMULUS_STATE_DIR", (dir.path() + "/state").c_str(), 1);
  setenv("CUMULUS_LOG_LEVEL", "error", 0);
  Subprocess head({ExecutableDir() + "/cumulus", "start", "--head", "--no-node", "--block",
                   "--port", "0", "--data-dir", dir.path() + "/head"});
  auto ready = head.WaitForLine("cumulus head ready", std::chrono::seconds(30));
  if (!ready) {
    std::fprintf(stderr, "bench_collectives: the head did not start\n");
    return 1;
  }
  auto field = [&](const std::string& key) {
    size_t at = ready->find(key + "=") + key.size() + 1;
    return ready->substr(at, ready->find(' ', at) - at);
  };
  auto hp = ParseHostPort(field("address"));
  auto token = LoadToken(field("token_file"));
  if (!hp.ok() || !token.ok()) return 1;
  s.head = *hp;
  s.token = *token;
  s.store_dir = dir.path() + "/gloo";
  s.tcp_bytes_per_s = LoopbackBandwidth(s.quick ? (256u << 20) : (1024u << 20));
  std::printf("# raw loopback TCP bandwidth B = %.2f GB/s (one connection, median of 3)\n",
              s.tcp_bytes_per_s / 1e9);
  std::printf(
      "| ranks | size | cumulus us | raw gloo us | cumulus vs raw gloo (time ratio) | "
      "algbw GB/s | busbw GB/s | ring bound us (2(n-1)/n*S/B) | bound / cumulus |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  std::fflush(stdout);
  int failed = 0;
  for (int world : {2, 4}) {
    std::vector<pid_t> kids;
    for (int r = 0; r < world; ++r) {
      pid_t pid = fork();
      if (pid == 0) _exit(Rank(s, world, r));
      kids.push_back(pid);
    }
    for (pid_t k : kids) {
      int status = 0;
      waitpid(k, &status, 0);
      failed += WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
    }
  }
  failed += TrainingThroughput(s.quick);
  return failed == 0 ? 0 : 1;
}
