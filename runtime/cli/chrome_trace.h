// ChromeTrace: the nodes' timeline events (runtime/core/timeline.h) as a Chrome trace (the JSON
// object format: {"traceEvents": [...]}) that Perfetto and chrome://tracing open.
//
// Layout: one process per node (pid 1, 2, ... in node id order; process_name "node ID (HOST)",
// process_labels with the events its ring dropped), one thread per worker (tid = the worker's
// pid, thread_name "worker PID"). Each run of a task or actor call on a worker is a complete
// event ("ph":"X", ts/dur in microseconds) named by its function or method, with three children
// in order: "argument fetch", "execution", "result store". Its scheduling (from its arrival at
// the node, or at the actor's worker for a direct call, until the worker started it, queueing
// included) is an event of the same name on one of the node's "scheduling N" threads (tid
// kSchedulingTidBase + N): those of concurrent tasks overlap, so each thread holds spans that do
// not. Every event's args: task_id, job, attempt, phase, worker_pid, and status for a run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cumulus/ids.h"
#include "runtime/core/timeline.h"

namespace cumulus {

constexpr int64_t kSchedulingTidBase = 1'000'000'000;

struct NodeTimeline {
  NodeId node;
  std::string hostname;
  uint64_t dropped = 0;   // events its ring let go
  uint64_t capacity = 0;  // 0: the timeline is off there
  std::vector<TimelineRecord> events;
};

struct ChromeTraceSummary {
  size_t runs = 0;       // runs on workers written
  size_t scheduled = 0;  // scheduling spans written
  uint64_t dropped = 0;  // events the nodes' rings let go
};

// The trace of `nodes` as JSON text.
std::string ChromeTrace(const std::vector<NodeTimeline>& nodes, ChromeTraceSummary* summary);

}  // namespace cumulus
