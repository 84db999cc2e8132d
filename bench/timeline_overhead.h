// bench_core --timeline-overhead: what the task timeline (runtime/core/timeline.h) costs on
// "tasks async". See timeline_overhead.cc.
#pragma once

#include <cstdint>

namespace cumulus::bench {

// Runs `argv0 --only-tasks-async` as child processes (each its own cluster), alternately with
// CUMULUS_TIMELINE=1 and =0, `pairs` pairs (the order within a pair alternates), and prints the
// medians and the median of the pairs' ratios for the rate and for the CPU time per task, then
// the timeline's own work per task timed alone. Returns the process's exit status.
int TimelineOverhead(const char* argv0, bool quick, int pairs);

// CPU time, in nanoseconds, of this process and every process below it (the nodes' workers),
// summed over their live threads (/proc/PID/task/TID/schedstat: time on a CPU). Unlike a rate it
// does not count time spent waiting for a CPU another program holds, which on a shared 2-core
// machine is most of the noise.
uint64_t TreeCpuNanos();

}  // namespace cumulus::bench
