// bench_soak: a long-life test of one node (issue 13). It starts a real head with a node
// (`cumulus start --head --object-store-memory 512M --block`), runs three phases of work through
// it with `cumulus submit --wait`, and checks that what the node holds comes back to where it
// started once the work has ended:
//
//   1. submits   N jobs of a small driver (soak_driver hello 10: ten tiny tasks), one after another
//   2. put       X GiB of 64 MiB objects put, read back and dropped through the 512 MiB store
//   3. tasks     M tiny tasks, in batches of 1,000, by one driver
//
// Measured on the head+node process (one process: `cumulus start --head` runs the node too): disk
// use of its data dir (allocated bytes, recursive), VmRSS, RssShmem, the allocated bytes of the
// store's memfd (memfd:cumulus-objects, st_blocks * 512), open descriptors, and its live child
// processes (workers). At the start (after one warm-up job), after each phase (after --settle s of
// quiet) and at the end (after --quiet s: the store gives freed memory back after ~1 s of quiet).
// Each growth end - start is checked against a bound printed with it; a bound exceeded exits 1.
//
//   build/bin/bench_soak            200 submits, 10 GiB, 1,000,000 tasks
//   build/bin/bench_soak --quick    20 submits, 1 GiB, 100,000 tasks
//   [--submits N] [--gib X] [--tasks M] [--settle S] [--quiet S] [--json]
//
// Anchor: the put phase's rate is compared with memcpy of the same 64 MiB values in this process.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/base/subprocess.h"
#include "runtime/base/temp_dir.h"

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  bool quick = false, json = false;
  uint64_t submits = 200;
  double gib = 10;
  uint64_t tasks = 1000000;
  double settle_s = 3, quiet_s = 5;
};

// What the node holds at one moment.
struct Sample {
  std::string when;
  int64_t disk = 0, rss = 0, shmem = 0, memfd = 0, fds = 0, children = 0;
};

// A measure, its bound on growth (end - start), and how it is printed.
struct Measure {
  const char* name;
  int64_t Sample::*field;
  int64_t bound;
  bool bytes;
};
const Measure kMeasures[] = {
    {"disk (data dir)", &Sample::disk, 64ll << 20, true},
    {"RSS", &Sample::rss, 64ll << 20, true},
    {"RssShmem", &Sample::shmem, 16ll << 20, true},
    {"store memfd", &Sample::memfd, 16ll << 20, true},
    {"open fds", &Sample::fds, 16, false},
    {"child processes", &Sample::children, 4, false},
};

int64_t StatusField(pid_t pid, const std::string& key) {  // in bytes (the file says kB)
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::atoll(line.c_str() + key.size() + 1) * 1024;
  }
  return -1;
}

int64_t DiskUse(const std::string& dir) {
  int64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(
           dir, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st;
    if (lstat(it->path().c_str(), &st) == 0) total += static_cast<int64_t>(st.st_blocks) * 512;
  }
  return total;
}

Sample TakeSample(const std::string& when, pid_t pid, const std::string& data_dir) {
  Sample s;
  s.when = when;
  s.disk = DiskUse(data_dir);
  s.rss = StatusField(pid, "VmRSS");
  s.shmem = StatusField(pid, "RssShmem");
  std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  if (DIR* d = opendir(fd_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      s.fds++;
      std::string path = fd_dir + "/" + e->d_name;
      char link[512] = {0};
      if (readlink(path.c_str(), link, sizeof(link) - 1) > 0 &&
          std::strstr(link, "memfd:cumulus-objects")) {
        struct stat st;
        if (stat(path.c_str(), &st) == 0) s.memfd += static_cast<int64_t>(st.st_blocks) * 512;
      }
    }
    closedir(d);
  }
  if (DIR* d = opendir("/proc")) {  // children: processes whose parent is the node
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      std::ifstream f(std::string("/proc/") + e->d_name + "/stat");
      std::string text((std::istreambuf_iterator<char>(f)), {});
      size_t close_paren = text.rfind(')');
      if (close_paren == std::string::npos) continue;
      std::istringstream rest(text.substr(close_paren + 2));
      std::string state;
      long ppid = 0;
      rest >> state >> ppid;
      if (ppid == pid) s.children++;
    }
    closedir(d);
  }
  return s;
}

std::string Field(const std::string& line, const std::string& key) {
  size_t at = line.find(key + "=");
  if (at == std::string::npos) return "";
  at += key.size() + 1;
  return line.substr(at, line.find(' ', at) - at);
}

std::string Human(int64_t v, bool bytes) {
  char buf[64];
  if (!bytes) {
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(v));
  } else {
    double mib = static_cast<double>(v) / (1 << 20);
    std::snprintf(buf, sizeof(buf), "%.1f MiB", mib);
  }
  return buf;
}

// Runs one job with `cumulus submit --wait`; returns the seconds its driver reported, or nullopt.
std::optional<double> Submit(const std::string& address, const std::string& token_file,
                             const std::vector<std::string>& driver_args, std::string* output) {
  std::vector<std::string> argv{cumulus::ExecutableDir() + "/cumulus",
                                "submit",
                                "--address",
                                address,
                                "--token-file",
                                token_file,
                                "--wait",
                                "--",
                                cumulus::ExecutableDir() + "/soak_driver"};
  argv.insert(argv.end(), driver_args.begin(), driver_args.end());
  cumulus::Subprocess p(argv, /*merge_stderr=*/true);
  *output = p.ReadAll(2h);
  auto status = p.Wait(60s);
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) return std::nullopt;
  size_t at = output->find("soak_driver result ");
  if (at == std::string::npos) return std::nullopt;
  return std::atof(output->c_str() + at + std::strlen("soak_driver result "));
}

double MemcpyGiBps() {
  const size_t kValue = 64u << 20;
  std::vector<char> a(kValue, 1), b(kValue, 0);
  std::memcpy(b.data(), a.data(), kValue);  // warm
  auto t0 = Clock::now();
  const int kReps = 16;
  for (int i = 0; i < kReps; ++i) {
    a[static_cast<size_t>(i)] = static_cast<char>(i);
    std::memcpy(b.data(), a.data(), kValue);
  }
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  volatile char sink = b[5];
  (void)sink;
  return kReps * 64.0 / 1024 / s;
}

bool ParseNumber(const std::string& flag, const char* text, double* out) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (*text == '\0' || *end != '\0' || !std::isfinite(v) || v < 0) {
    std::fprintf(stderr, "bench_soak: %s needs a number >= 0, not '%s'\n", flag.c_str(), text);
    return false;
  }
  *out = v;
  return true;
}

constexpr const char* kUsage =
    "usage: bench_soak [--quick] [--submits N] [--gib X] [--tasks M] [--settle S] [--quiet S] "
    "[--json]\n";

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick") {
      cfg.quick = true;
      cfg.submits = 20;
      cfg.gib = 1;
      cfg.tasks = 100000;
    }
  }
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") continue;
    if (a == "--json") {
      cfg.json = true;
      continue;
    }
    if (a == "-h" || a == "--help") {
      std::printf("%s", kUsage);
      return 0;
    }
    double* target = nullptr;
    double submits = static_cast<double>(cfg.submits), tasks = static_cast<double>(cfg.tasks);
    if (a == "--submits") target = &submits;
    if (a == "--gib") target = &cfg.gib;
    if (a == "--tasks") target = &tasks;
    if (a == "--settle") target = &cfg.settle_s;
    if (a == "--quiet") target = &cfg.quiet_s;
    if (!target) {
      std::fprintf(stderr, "bench_soak: unknown argument '%s'; run bench_soak --help\n", a.c_str());
      return 2;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bench_soak: %s needs a value\n", a.c_str());
      return 2;
    }
    if (!ParseNumber(a, argv[++i], target)) return 2;
    if ((a == "--submits" || a == "--tasks") && *target != std::floor(*target)) {
      std::fprintf(stderr, "bench_soak: %s needs a whole number, not '%s'\n", a.c_str(), argv[i]);
      return 2;
    }
    cfg.submits = static_cast<uint64_t>(submits);
    cfg.tasks = static_cast<uint64_t>(tasks);
  }
  uint64_t put_mib = static_cast<uint64_t>(std::llround(cfg.gib * 1024));

  char command[256];
  std::snprintf(command, sizeof(command),
                "build/bin/bench_soak --submits %llu --gib %g --tasks %llu",
                static_cast<unsigned long long>(cfg.submits), cfg.gib,
                static_cast<unsigned long long>(cfg.tasks));
  if (cfg.settle_s != Config{}.settle_s || cfg.quiet_s != Config{}.quiet_s) {
    size_t len = std::strlen(command);
    std::snprintf(command + len, sizeof(command) - len, " --settle %g --quiet %g", cfg.settle_s,
                  cfg.quiet_s);
  }
  if (!cfg.json) {
    std::printf("# %s%s\n", command, cfg.quick ? "   (--quick)" : "");
    std::printf(
        "# one head+node (cumulus start --head --object-store-memory 512M), %llu submits of "
        "soak_driver hello 10, %llu MiB of 64 MiB puts, %llu tasks; %gs settle, %gs quiet\n",
        static_cast<unsigned long long>(cfg.submits), static_cast<unsigned long long>(put_mib),
        static_cast<unsigned long long>(cfg.tasks), cfg.settle_s, cfg.quiet_s);
    std::fflush(stdout);
  }

  cumulus::TempDir dir;
  setenv("CUMULUS_STATE_DIR", (dir.path() + "/state").c_str(), 1);  // not the user's ~/.cumulus
  std::string data_dir = dir.path() + "/head";
  // The head's log lines go to a file beside (not in) its data dir: a terminal's, not its disk.
  std::string head_log = dir.path() + "/head.stderr";
  cumulus::Subprocess head({"/bin/sh", "-c",
                            "exec \"$0\" start --head --port 0 --data-dir \"$1\" "
                            "--object-store-memory 512M --block 2>>\"$2\"",
                            cumulus::ExecutableDir() + "/cumulus", data_dir, head_log});
  auto ready = head.WaitForLine("cumulus head ready", 60s);
  if (!ready) {
    std::fprintf(stderr, "bench_soak: the head did not start\n");
    return 1;
  }
  std::string address = Field(*ready, "address"), token_file = Field(*ready, "token_file");
  pid_t pid = static_cast<pid_t>(std::atol(Field(*ready, "pid").c_str()));
  if (pid <= 0) pid = head.pid();

  auto fail = [&](const char* what, const std::string& output) {
    std::fprintf(stderr, "bench_soak: %s failed:\n%s\n", what, output.c_str());
    head.Kill(SIGTERM);
    (void)head.Wait(30s);
    return 1;
  };
  auto sleep_s = [](double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); };

  std::string out;
  if (!Submit(address, token_file, {"hello", "10"}, &out)) return fail("the warm-up job", out);
  sleep_s(cfg.quiet_s);
  std::vector<Sample> samples{TakeSample("start", pid, data_dir)};

  // The most each measure reached while a phase ran (sampled every 100 ms): the store's memory
  // is expected to rise there and fall back after.
  Sample peak;
  peak.when = "peak (phases)";
  std::atomic<bool> phases_done{false};
  std::thread sampler([&] {
    while (!phases_done) {
      Sample now = TakeSample("", pid, data_dir);
      for (const Measure& me : kMeasures) peak.*me.field = std::max(peak.*me.field, now.*me.field);
      std::this_thread::sleep_for(100ms);
    }
  });
  auto fail_phase = [&](const char* what, const std::string& output) {
    phases_done = true;
    sampler.join();
    return fail(what, output);
  };

  struct Rate {
    std::string phase, unit;
    double seconds = 0, per_s = 0;
  };
  std::vector<Rate> rates;

  auto t0 = Clock::now();
  for (uint64_t i = 0; i < cfg.submits; ++i) {
    if (!Submit(address, token_file, {"hello", "10"}, &out)) return fail_phase("a submit", out);
  }
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  rates.push_back(
      {"submits", "jobs/s (submit --wait, end to end)", s, static_cast<double>(cfg.submits) / s});
  sleep_s(cfg.settle_s);
  samples.push_back(TakeSample("after submits", pid, data_dir));

  auto put_s = Submit(address, token_file, {"put", std::to_string(put_mib)}, &out);
  if (!put_s) return fail_phase("the put job", out);
  rates.push_back({"put", "GiB/s (64 MiB Put + Get, in the driver)", *put_s,
                   static_cast<double>(put_mib) / 1024 / *put_s});
  sleep_s(cfg.settle_s);
  samples.push_back(TakeSample("after put", pid, data_dir));

  auto tasks_s = Submit(address, token_file, {"tasks", std::to_string(cfg.tasks)}, &out);
  if (!tasks_s) return fail_phase("the tasks job", out);
  rates.push_back({"tasks", "tasks/s (batches of 1,000, in the driver)", *tasks_s,
                   static_cast<double>(cfg.tasks) / *tasks_s});
  sleep_s(cfg.settle_s);
  samples.push_back(TakeSample("after tasks", pid, data_dir));

  phases_done = true;
  sampler.join();
  sleep_s(cfg.quiet_s);
  samples.push_back(TakeSample("end", pid, data_dir));
  double memcpy_gibps = MemcpyGiBps();

  head.Kill(SIGTERM);
  bool stopped = head.Wait(30s).has_value();

  const Sample& first = samples.front();
  const Sample& last = samples.back();
  bool all_within = true;
  if (cfg.json) {
    std::printf("{\"command\": \"%s\", \"submits\": %llu, \"put_mib\": %llu, \"tasks\": %llu,\n",
                command, static_cast<unsigned long long>(cfg.submits),
                static_cast<unsigned long long>(put_mib),
                static_cast<unsigned long long>(cfg.tasks));
    std::printf(" \"measures\": [");
    for (size_t m = 0; m < std::size(kMeasures); ++m) {
      const Measure& me = kMeasures[m];
      int64_t growth = last.*me.field - first.*me.field;
      bool within = growth <= me.bound;
      all_within &= within;
      std::printf("%s\n  {\"name\": \"%s\", \"unit\": \"%s\"", m ? "," : "", me.name,
                  me.bytes ? "bytes" : "count");
      for (auto& smp : samples)
        std::printf(", \"%s\": %lld", smp.when.c_str(), static_cast<long long>(smp.*me.field));
      std::printf(", \"peak\": %lld", static_cast<long long>(peak.*me.field));
      std::printf(", \"growth\": %lld, \"bound\": %lld, \"within_bound\": %s}",
                  static_cast<long long>(growth), static_cast<long long>(me.bound),
                  within ? "true" : "false");
    }
    std::printf("],\n \"phases\": [");
    for (size_t r = 0; r < rates.size(); ++r) {
      std::printf("%s\n  {\"phase\": \"%s\", \"seconds\": %.3f, \"rate\": %.3f, \"unit\": \"%s\"}",
                  r ? "," : "", rates[r].phase.c_str(), rates[r].seconds, rates[r].per_s,
                  rates[r].unit.c_str());
    }
    std::printf(
        "],\n \"memcpy_gib_per_s\": %.3f, \"put_vs_memcpy\": %.4f, \"within_bounds\": %s}\n",
        memcpy_gibps, rates[1].per_s / memcpy_gibps, all_within ? "true" : "false");
  } else {
    std::printf("\n| measure |");
    for (auto& smp : samples) std::printf(" %s |", smp.when.c_str());
    std::printf(" peak (during phases) | growth end-start | bound | within bound |\n|---|");
    for (size_t i = 0; i < samples.size() + 4; ++i) std::printf("---|");
    std::printf("\n");
    for (const Measure& me : kMeasures) {
      int64_t growth = last.*me.field - first.*me.field;
      bool within = growth <= me.bound;
      all_within &= within;
      std::printf("| %s |", me.name);
      for (auto& smp : samples) std::printf(" %s |", Human(smp.*me.field, me.bytes).c_str());
      std::printf(" %s |", Human(peak.*me.field, me.bytes).c_str());
      std::printf(" %s%s | +%s | %s |\n", growth >= 0 ? "+" : "", Human(growth, me.bytes).c_str(),
                  Human(me.bound, me.bytes).c_str(), within ? "yes" : "NO");
    }
    std::printf("\n| phase | seconds | rate |\n|---|---|---|\n");
    for (auto& r : rates) {
      std::printf("| %s | %.1f | %.1f %s |\n", r.phase.c_str(), r.seconds, r.per_s, r.unit.c_str());
    }
    std::printf("\nanchor: memcpy of 64 MiB values %.2f GiB/s; put phase %.3fx of it\n",
                memcpy_gibps, rates[1].per_s / memcpy_gibps);
    std::printf("%s\n", all_within ? "all within bounds" : "A BOUND WAS EXCEEDED");
  }
  if (!stopped) std::fprintf(stderr, "bench_soak: the head did not stop within 30 s of SIGTERM\n");
  std::fflush(stdout);
  return all_within ? 0 : 1;
}
