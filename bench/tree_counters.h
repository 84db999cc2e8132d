// What a process tree (this process, its threads and every process started below it, such as a
// node's workers) spent, for benchmarks that compare two runs of the same work
// (bench_core --timeline-overhead). Linux only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cumulus::bench {

// CPU time, in nanoseconds, of this process and every process below it, summed over their live
// threads (/proc/PID/task/TID/schedstat: time on a CPU). Unlike a rate it does not count time
// spent waiting for a CPU another program holds, which on a shared 2-core machine is most of the
// noise.
uint64_t TreeCpuNanos();

// One reading of the process tree's counters; a name with no value was not available.
struct TreeReading {
  std::vector<std::pair<std::string, double>> values;  // name, total so far
};

// Counters of the process tree, opened once before the tree starts its threads and processes:
//  - perf_event_open(2) on this process with inherit=1 (threads and processes started after
//    Open() are counted with it, and a read sums them, live or exited), user and kernel:
//    "instructions" and "cycles" (hardware: absent where the machine exposes no PMU, as in most
//    VMs), "context switches" and "page faults" (software: always there). (Not /proc/PID/io:
//    its syscr/syscw/wchar miss send(2) and recv(2), which is how the runtime talks.)
// Not thread-safe; Read() may be called any number of times.
class TreeCounters {
 public:
  // Opens what it can. REQUIRES: called before this process starts the threads and processes it
  // should count.
  static TreeCounters Open();
  TreeCounters(TreeCounters&& other) noexcept;
  TreeCounters(const TreeCounters&) = delete;
  ~TreeCounters();

  TreeReading Read() const;
  // One line per counter that could not be opened, with the reason (empty if all could).
  const std::vector<std::string>& missing() const { return missing_; }

 private:
  TreeCounters() = default;
  struct Event {
    std::string name;
    int fd = -1;
  };
  std::vector<Event> events_;
  std::vector<std::string> missing_;
};

}  // namespace cumulus::bench
