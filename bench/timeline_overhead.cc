// bench_core --timeline-overhead (timeline_overhead.h): child runs with the timeline on and off,
// and the timeline's own work timed alone.
#include "bench/timeline_overhead.h"

#include <capnp/serialize.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "cumulus/ids.h"
#include "runtime/core/messages.h"
#include "runtime/core/timeline.h"
#include "runtime/net/frame.h"
#include "workers/timeline_batch.h"

namespace cumulus::bench {
namespace {

// One child run of --timeline-overhead: its tasks-async rate and the CPU time its process tree
// spent per task (0 if it failed).
struct ChildRun {
  double rate = 0;
  double cpu_ns_per_task = 0;
};
ChildRun TasksAsyncChild(bool timeline, bool quick) {
  char self[4096] = {0};
  if (readlink("/proc/self/exe", self, sizeof(self) - 1) <= 0) return {};
  std::string command = std::string("CUMULUS_TIMELINE=") + (timeline ? "1" : "0") + " '" + self +
                        "' --only-tasks-async" + (quick ? " --quick" : "") + " 2>/dev/null";
  FILE* p = popen(command.c_str(), "r");
  if (!p) return {};
  char line[512];
  ChildRun run;
  while (std::fgets(line, sizeof(line), p)) {
    if (std::strncmp(line, "TASKS_ASYNC ", 12) == 0) run.rate = std::atof(line + 12);
    if (std::strncmp(line, "TASKS_ASYNC_CPU_NS ", 19) == 0) {
      run.cpu_ns_per_task = std::atof(line + 19);
    }
  }
  pclose(p);
  return run;
}

// The timeline's own work per task, timed alone in this process (median of `reps` runs of `n`
// tasks' worth): what a worker does for one run (five clock reads, filling its event, its share
// of encoding a batch of 128 and of writing that frame to its node over a Unix socket) and what
// the node does (two clock reads and its scheduling event, its share of reading and decoding the
// batch, two ring insertions). With the timeline off none of it runs, so this is the work the
// switch adds; not in it: what the extra bytes and the ring do to caches elsewhere.
double TimelineWorkNsPerTask(int reps, int n) {
  TimelineBatch batch(true);
  TimelineRing ring(kDefaultTimelineEvents);
  FrameDecoder decoder(64u << 20);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 0;
  std::vector<char> buf(1 << 20);
  const TaskId id = TaskId::FromRandom();
  const std::string function = "(anonymous namespace)::Noop";
  std::vector<double> per_task;
  for (int rep = 0; rep < reps; ++rep) {
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      TimelineRecord s;  // the node: arrived, dispatched, its scheduling event
      s.SetTask(id);
      s.kind = TimelineRecord::kScheduled;
      s.worker_pid = 1;
      s.SetFunction(function.data(), function.size());
      s.t[0] = TimelineNowMicros();
      s.t[1] = TimelineNowMicros();
      ring.Add(s);
      TimelineRecord& r = batch.Next();  // the worker: received, started, fetched, ran, stored
      r.SetTask(id);
      r.kind = TimelineRecord::kRun;
      r.worker_pid = 1;
      r.SetFunction(function.data(), function.size());
      for (int64_t& t : r.t) t = TimelineNowMicros();
      batch.Commit();
      if (!batch.full()) continue;
      std::string frame = batch.TakeFrame(r.t[4]);
      if (write(sv[0], frame.data(), frame.size()) != static_cast<ssize_t>(frame.size())) return 0;
      size_t got = 0;
      while (got < frame.size()) {
        ssize_t k = read(sv[1], buf.data(), buf.size());
        if (k <= 0) return 0;
        decoder.Append(buf.data(), static_cast<size_t>(k));
        got += static_cast<size_t>(k);
      }
      auto words = decoder.Next();
      if (!words.ok() || !*words) return 0;
      capnp::FlatArrayMessageReader reader(**words, CoreReaderOptions((**words).size()));
      TimelineRecord e;
      for (auto ev : reader.getRoot<proto::CoreMessage>().getTimelineEvents().getEvents()) {
        if (FromProto(ev, &e)) ring.Add(e);
      }
    }
    per_task.push_back(1e9 * Seconds(t0, Clock::now()) / n);
  }
  close(sv[0]);
  close(sv[1]);
  return Median(per_task);
}

}  // namespace

int TimelineOverhead(const char* argv0, bool quick, int pairs) {
  std::printf("command: %s --timeline-overhead%s --pairs %d\n", argv0, quick ? " --quick" : "",
              pairs);
  std::printf(
      "each run: its own cluster (a head and two nodes in one process), tasks async, the "
      "median of %d repetitions of %d tasks\n",
      quick ? 3 : 5, quick ? 5000 : 20000);
  std::vector<double> on, off, cpu_on, cpu_off, rate_ratio, cpu_ratio;
  for (int i = 0; i < pairs; ++i) {
    bool on_first = i % 2 == 0;
    ChildRun pair[2];  // [0]: off, [1]: on
    for (int k = 0; k < 2; ++k) {
      bool timeline = (k == 0) == on_first;
      ChildRun run = TasksAsyncChild(timeline, quick);
      std::printf("  pair %d: timeline %-3s %10.1f tasks/s %8.0f ns CPU per task\n", i + 1,
                  timeline ? "on" : "off", run.rate, run.cpu_ns_per_task);
      std::fflush(stdout);
      if (run.rate <= 0 || run.cpu_ns_per_task <= 0) {
        std::fprintf(stderr, "bench_core: a child run failed\n");
        return 1;
      }
      (timeline ? on : off).push_back(run.rate);
      (timeline ? cpu_on : cpu_off).push_back(run.cpu_ns_per_task);
      pair[timeline ? 1 : 0] = run;
    }
    rate_ratio.push_back(pair[1].rate / pair[0].rate);
    cpu_ratio.push_back(pair[1].cpu_ns_per_task / pair[0].cpu_ns_per_task);
  }
  auto spread = [](const std::vector<double>& v, const char* fmt) {
    char buf[128], lo[32], hi[32];
    std::snprintf(lo, sizeof(lo), fmt, *std::min_element(v.begin(), v.end()));
    std::snprintf(hi, sizeof(hi), fmt, *std::max_element(v.begin(), v.end()));
    std::snprintf(buf, sizeof(buf), "runs from %s to %s", lo, hi);
    return std::string(buf);
  };
  double m_on = Median(on), m_off = Median(off);
  double c_on = Median(cpu_on), c_off = Median(cpu_off);
  std::printf("\n| %-40s | %12.1f %-10s | median; %s |\n", "tasks async, timeline on", m_on, "/s",
              spread(on, "%.0f").c_str());
  std::printf("| %-40s | %12.1f %-10s | anchor (same run); %s |\n", "tasks async, timeline off",
              m_off, "/s", spread(off, "%.0f").c_str());
  std::printf("| %-40s | %12.3f %-10s | median of pairs; %s; overhead %.1f %% |\n",
              "rate ratio on / off", Median(rate_ratio), "", spread(rate_ratio, "%.3f").c_str(),
              100.0 * (1 - Median(rate_ratio)));
  std::printf("| %-40s | %12.0f %-10s | median; %s |\n", "CPU per task, timeline on", c_on, "ns",
              spread(cpu_on, "%.0f").c_str());
  std::printf("| %-40s | %12.0f %-10s | anchor (same run); %s |\n", "CPU per task, timeline off",
              c_off, "ns", spread(cpu_off, "%.0f").c_str());
  std::printf("| %-40s | %12.3f %-10s | median of pairs; %s; overhead %.1f %% (target < 5 %%) |\n",
              "CPU ratio on / off", Median(cpu_ratio), "", spread(cpu_ratio, "%.3f").c_str(),
              100.0 * (Median(cpu_ratio) - 1));
  double work = TimelineWorkNsPerTask(5, 1 << 20);
  if (work <= 0) {
    std::fprintf(stderr, "bench_core: the timeline's work could not be timed\n");
    return 1;
  }
  std::printf(
      "| %-40s | %12.0f %-10s | median of 5 x %d; %.1f %% of the CPU per task with it off |\n",
      "timeline's own work per task, alone", work, "ns", 1 << 20, 100.0 * work / c_off);
  return 0;
}

uint64_t TreeCpuNanos() {
  std::map<int, std::vector<int>> children;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2) {
      children[ppid].push_back(std::atoi(name.c_str()));
    }
  }
  uint64_t total = 0;
  std::vector<int> todo = {getpid()};
  while (!todo.empty()) {
    int pid = todo.back();
    todo.pop_back();
    std::error_code ec;
    for (const auto& t :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
      std::ifstream in(t.path() / "schedstat");
      uint64_t ns = 0;
      if (in >> ns) total += ns;
    }
    for (int c : children[pid]) todo.push_back(c);
  }
  return total;
}

}  // namespace cumulus::bench
