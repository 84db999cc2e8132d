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
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "bench/pair_stats.h"
#include "bench/tree_counters.h"
#include "cumulus/ids.h"
#include "runtime/core/messages.h"
#include "runtime/core/timeline.h"
#include "runtime/net/frame.h"
#include "workers/timeline_batch.h"

namespace cumulus::bench {
namespace {

// The size of each child run (tasks per repetition, repetitions) and the default pair count.
struct RunSize {
  int tasks, reps, pairs;
};
RunSize SizeFor(bool quick) { return quick ? RunSize{4000, 3, 7} : RunSize{10000, 3, 15}; }

// One child run of --timeline-overhead: its tasks-async rate, the CPU time its process tree spent
// per task, and its tree's counters per task (rate 0 if it failed).
struct ChildRun {
  double rate = 0;
  double cpu_ns_per_task = 0;
  std::map<std::string, double> per_task;  // TreeCounters' names
  std::vector<std::string> missing;        // the counters it could not open, and why
};
ChildRun TasksAsyncChild(bool timeline, const RunSize& size) {
  char self[4096] = {0};
  if (readlink("/proc/self/exe", self, sizeof(self) - 1) <= 0) return {};
  std::string command = std::string("CUMULUS_TIMELINE=") + (timeline ? "1" : "0") + " '" + self +
                        "' --only-tasks-async --tasks " + std::to_string(size.tasks) + " --reps " +
                        std::to_string(size.reps) + " 2>/dev/null";
  FILE* p = popen(command.c_str(), "r");
  if (!p) return {};
  char line[1024];
  ChildRun run;
  auto starts = [&](const char* prefix) {
    return std::strncmp(line, prefix, std::strlen(prefix)) == 0;
  };
  while (std::fgets(line, sizeof(line), p)) {
    std::string rest = line;
    if (!rest.empty() && rest.back() == '\n') rest.pop_back();
    if (starts("TASKS_ASYNC ")) run.rate = std::atof(line + 12);
    if (starts("TASKS_ASYNC_CPU_NS ")) run.cpu_ns_per_task = std::atof(line + 19);
    if (starts("TASKS_ASYNC_PER_TASK ")) {
      size_t eq = rest.rfind('=');
      if (eq != std::string::npos)
        run.per_task[rest.substr(21, eq - 21)] = std::atof(rest.c_str() + eq + 1);
    }
    if (starts("TASKS_ASYNC_MISSING ")) run.missing.push_back(rest.substr(20));
  }
  if (pclose(p) != 0) run.rate = 0;
  return run;
}

// A metric's samples: each run's value with the timeline on and off, and each pair's ratio.
struct Metric {
  std::string name, unit;
  bool higher_is_better = false;  // a rate: the overhead is 1 - ratio, not ratio - 1
  std::vector<double> on, off, ratio;
};

// One table row: the medians, the ratio's median and 95 % interval, and the overhead's bound.
// Returns whether the interval shows the overhead under 5 %.
bool PrintMetric(const Metric& m) {
  MedianInterval r = MedianWithInterval(m.ratio);
  double on = MedianWithInterval(m.on).median, off = MedianWithInterval(m.off).median;
  auto overhead = [&](double ratio) {
    return 100.0 * (m.higher_is_better ? 1 - ratio : ratio - 1);
  };
  char interval[96] = "too few pairs for an interval";
  char bound[64] = "-";
  bool shown = false;
  if (r.ok()) {
    std::snprintf(interval, sizeof(interval), "[%.3f, %.3f] (%.1f %%)", r.low, r.high,
                  100 * r.coverage);
    double worst = overhead(m.higher_is_better ? r.low : r.high);
    shown = worst < 5.0;
    std::snprintf(bound, sizeof(bound), "%+.1f %% (%s)", worst, shown ? "< 5 %" : "NOT < 5 %");
  }
  std::printf("| %-22s | %12.6g %-6s | %12.6g | %6.3f | %-28s | %+6.1f %% | %-20s |\n",
              m.name.c_str(), on, m.unit.c_str(), off, r.median, interval, overhead(r.median),
              bound);
  return shown;
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
      if (!AddTimelineBatch(reader.getRoot<proto::CoreMessage>().getTimelineEvents(), 1, &ring)
               .ok()) {
        return 0;
      }
    }
    per_task.push_back(1e9 * Seconds(t0, Clock::now()) / n);
  }
  close(sv[0]);
  close(sv[1]);
  return Median(per_task);
}

}  // namespace

int TimelineOverhead(const char* argv0, const OverheadOptions& options) {
  const RunSize size = SizeFor(options.quick);
  const int pairs = options.pairs > 0 ? options.pairs : size.pairs;
  const uint64_t seed =
      options.seed ? options.seed : static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  std::printf("command: %s --timeline-overhead%s --pairs %d --seed %llu\n", argv0,
              options.quick ? " --quick" : "", pairs, static_cast<unsigned long long>(seed));
  std::printf(
      "each run: its own cluster (a head and two nodes in one process), tasks async, %d "
      "repetitions of %d tasks (rate: their median; per task: their total); %d pairs, each one run "
      "on and one off in a random order\n",
      size.reps, size.tasks, pairs);
  std::mt19937_64 rng(seed);
  Metric rate{"tasks async rate", "/s", true, {}, {}, {}};
  Metric cpu{"CPU per task", "ns", false, {}, {}, {}};
  std::map<std::string, Metric> counters;
  std::vector<std::string> missing;
  for (int i = 0; i < pairs; ++i) {
    bool on_first = (rng() & 1) != 0;
    ChildRun pair[2];  // [0]: off, [1]: on
    for (int k = 0; k < 2; ++k) {
      bool timeline = (k == 0) == on_first;
      ChildRun run = TasksAsyncChild(timeline, size);
      std::printf("  pair %2d: timeline %-3s %9.0f tasks/s %7.0f ns CPU per task", i + 1,
                  timeline ? "on" : "off", run.rate, run.cpu_ns_per_task);
      for (const auto& [name, v] : run.per_task) std::printf(" | %s %.2f", name.c_str(), v);
      std::printf("\n");
      std::fflush(stdout);
      if (run.rate <= 0 || run.cpu_ns_per_task <= 0) {
        std::fprintf(stderr, "bench_core: a child run failed (%s --only-tasks-async)\n", argv0);
        return 1;
      }
      missing = run.missing;
      pair[timeline ? 1 : 0] = std::move(run);
    }
    auto add = [](Metric& m, double on, double off) {
      m.on.push_back(on);
      m.off.push_back(off);
      if (off > 0) m.ratio.push_back(on / off);
    };
    add(rate, pair[1].rate, pair[0].rate);
    add(cpu, pair[1].cpu_ns_per_task, pair[0].cpu_ns_per_task);
    for (const auto& [name, v] : pair[1].per_task) {
      auto off = pair[0].per_task.find(name);
      if (off == pair[0].per_task.end()) continue;
      Metric& m = counters.try_emplace(name, Metric{name, "", false, {}, {}, {}}).first->second;
      add(m, v, off->second);
    }
  }
  std::printf("\n| %-22s | %-19s | %-12s | %-6s | %-28s | %-8s | %-20s |\n", "per run (median)",
              "timeline on", "off (anchor)", "on/off", "95 % interval of the ratio", "overhead",
              "worst in the interval");
  std::printf("|%s|%s|%s|%s|%s|%s|%s|\n", std::string(24, '-').c_str(),
              std::string(21, '-').c_str(), std::string(14, '-').c_str(),
              std::string(8, '-').c_str(), std::string(30, '-').c_str(),
              std::string(10, '-').c_str(), std::string(22, '-').c_str());
  bool rate_shown = PrintMetric(rate);
  bool cpu_shown = PrintMetric(cpu);
  for (const auto& [name, m] : counters) PrintMetric(m);
  for (const std::string& m : missing) std::printf("not counted: %s\n", m.c_str());
  double work = TimelineWorkNsPerTask(5, 1 << 20);
  if (work <= 0) {
    std::fprintf(stderr, "bench_core: the timeline's work could not be timed\n");
    return 1;
  }
  double c_off = MedianWithInterval(cpu.off).median;
  std::printf(
      "timeline's own work per task, timed alone: %.0f ns (median of 5 x %d) = %.1f %% of the CPU "
      "per task with it off\n",
      work, 1 << 20, 100.0 * work / c_off);
  std::printf("verdict (target: under 5 %% on tasks async): rate %s, CPU per task %s\n",
              rate_shown ? "shown" : "NOT shown", cpu_shown ? "shown" : "NOT shown");
  return 0;
}

}  // namespace cumulus::bench
