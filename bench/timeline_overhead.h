// bench_core --timeline-overhead: what the task timeline (runtime/core/timeline.h) costs on
// "tasks async". See timeline_overhead.cc.
#pragma once

#include <cstdint>

namespace cumulus::bench {

struct OverheadOptions {
  bool quick = false;  // shorter child runs and fewer pairs (a smoke test, not a verdict)
  int pairs = 0;       // 0: 15, or 7 with quick
  uint64_t seed = 0;   // the A/B order's seed; 0: from the clock (printed either way)
};

// Runs `argv0 --only-tasks-async` as child processes (each its own cluster), `pairs` pairs of
// one run with CUMULUS_TIMELINE=1 and one with =0 in a random order, and prints per metric (the
// rate, the CPU time of the process tree per task, and the tree's counters per task:
// tree_counters.h) the medians, the median of the pairs' on/off ratios with its 95 % interval
// (the sign test's: distribution-free), and whether that interval shows the overhead under 5 %;
// then the timeline's own work per task timed alone. Returns the process's exit status.
int TimelineOverhead(const char* argv0, const OverheadOptions& options);

}  // namespace cumulus::bench
