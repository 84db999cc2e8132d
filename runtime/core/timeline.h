// The task timeline: what ran on which worker of a node, and when, for `cumulus timeline`.
//
// Events are recorded where they happen: a worker times each task it runs (received, argument
// fetch, execution, result store) into a small buffer of its own and ships it to its node in
// batches (TimelineBatch, workers/timeline_batch.h); the node times how long it held each task
// before handing it to a worker, and keeps every event in a TimelineRing, a bounded ring that lets
// the oldest events go (and counts them) when it is full. The CLI fetches the rings of all nodes
// (timelineRequest / timelineEvents in runtime/proto/core.capnp) and writes a Chrome trace.
//
// Times are wall-clock microseconds since the epoch (CLOCK_REALTIME) of the recording machine:
// the worker and its node share one clock; nodes on different machines are as far apart as their
// clocks are (keep them in sync with NTP/chrony).
//
// The switch and the bound: CUMULUS_TIMELINE=0 turns the timeline off on a node and its workers;
// CUMULUS_TIMELINE_EVENTS=N bounds each node's ring (default kDefaultTimelineEvents).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/proto/core.capnp.h"

namespace cumulus {

constexpr size_t kDefaultTimelineEvents = 65536;  // ~8 MiB per node (128 bytes an event)
constexpr size_t kMaxTimelineEvents = 262144;     // the answer must fit one core frame
constexpr size_t kTimelineFunctionBytes = 48;     // names are truncated to 47 bytes

// One event, a plain value (no allocation to record it).
struct TimelineRecord {
  enum Kind : uint8_t { kRun = 0, kScheduled = 1 };
  enum Flags : uint8_t { kActorCall = 1, kActorCreation = 2 };
  uint8_t task[TaskId::kSize] = {};
  uint32_t attempt = 0;
  uint8_t kind = kRun;
  uint8_t flags = 0;
  uint16_t code = 0;
  int32_t worker_pid = 0;
  uint32_t reserved = 0;  // makes the padding explicit: the packed form has no undefined bytes
  // kRun: received, started, arguments read, returned, stored. kScheduled: arrived, dispatched.
  int64_t t[5] = {};
  char function[kTimelineFunctionBytes] = {};

  void SetTask(const TaskId& id) { std::memcpy(task, id.data(), TaskId::kSize); }
  TaskId Task() const;
  void SetFunction(const char* name, size_t n);
};

// Wall-clock microseconds since the epoch (CLOCK_REALTIME; a vDSO read, no system call), never
// less than the same thread's previous reading.
int64_t TimelineNowMicros();

// The ring's bound from the environment: 0 if CUMULUS_TIMELINE is 0/off/false, else
// CUMULUS_TIMELINE_EVENTS (1..kMaxTimelineEvents) or `fallback`. A bad value is an error.
Result<size_t> TimelineEventsFromEnv(size_t fallback);
// Whether this process (a worker) records events: CUMULUS_TIMELINE is not 0/off/false.
bool TimelineEnabledInEnv();

// A node's events, oldest first; when full, each new event replaces the oldest.
// Not thread-safe: the node's event loop owns it.
class TimelineRing {
 public:
  // Allocates and touches the whole ring at once (capacity x 128 bytes, ~8 MiB by default): the
  // node's event loop then never takes a page fault per 32 events while the ring fills, which a
  // long-running node's full ring does not either, and adding never copies what is there.
  explicit TimelineRing(size_t capacity) : capacity_(capacity), events_(capacity) {}
  size_t capacity() const { return capacity_; }
  bool enabled() const { return capacity_ > 0; }
  void Add(const TimelineRecord& r);
  // Copies `size` bytes of packed records (PackTimeline's layout; REQUIRES: a multiple of
  // kTimelinePackedBytes) straight into the ring's slots, each with its worker_pid set to `pid`;
  // records that are not runs are skipped. Returns how many were added.
  size_t AddPacked(const uint8_t* data, size_t size, int32_t pid);
  uint64_t dropped() const { return dropped_; }
  size_t size() const { return size_; }
  // Each event of `job` (nil: of every job), oldest first.
  void ForEach(const JobId& job, const std::function<void(const TimelineRecord&)>& fn) const;

 private:
  size_t capacity_;
  // The slot the next event goes in: a new one while the ring grows, else the oldest.
  TimelineRecord& NextSlot();

  std::vector<TimelineRecord> events_;  // capacity_ slots: filled up to size_, then wraps at next_
  size_t size_ = 0;
  size_t next_ = 0;
  uint64_t dropped_ = 0;
};

void ToProto(const TimelineRecord& r, proto::TimelineEvent::Builder out);
// False if the event is malformed (a task id of the wrong size, an unknown kind).
bool FromProto(proto::TimelineEvent::Reader in, TimelineRecord* out);

// The packed form of a worker's batch (timelineEvents.packed): each event is its TimelineRecord's
// bytes, as laid out in memory, so that packing is one copy and the node copies each straight into
// a ring slot. Worker and node run the same build; a change to TimelineRecord's layout must bump
// kTimelinePackedVersion.
constexpr uint16_t kTimelinePackedVersion = 1;
constexpr size_t kTimelinePackedBytes = sizeof(TimelineRecord);
static_assert(kTimelinePackedBytes == 128, "TimelineRecord's layout changed: bump the version");
// Each field where version 1 has it: a reordering that keeps the size fails here too.
static_assert(offsetof(TimelineRecord, task) == 0 && offsetof(TimelineRecord, attempt) == 24 &&
                  offsetof(TimelineRecord, kind) == 28 && offsetof(TimelineRecord, flags) == 29 &&
                  offsetof(TimelineRecord, code) == 30 &&
                  offsetof(TimelineRecord, worker_pid) == 32 &&
                  offsetof(TimelineRecord, reserved) == 36 && offsetof(TimelineRecord, t) == 40 &&
                  offsetof(TimelineRecord, function) == 80,
              "TimelineRecord's layout changed: bump kTimelinePackedVersion");
static_assert(std::is_trivially_copyable<TimelineRecord>::value, "packed records are copied");
static_assert(std::has_unique_object_representations<TimelineRecord>::value,
              "no padding: every byte of a packed record is defined");
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the packed form is little-endian");

// Sets `out`'s packed form (and its version) to `n` records.
void PackTimeline(const TimelineRecord* records, size_t n, proto::TimelineEvents::Builder out);
// Adds a worker's batch to `ring`, each event with its worker_pid set to `pid`: the packed form if
// the batch has one, else the list form. Returns the events added, or why the batch was dropped
// whole (a version this build does not read, a length that is not a multiple of a record).
Result<size_t> AddTimelineBatch(proto::TimelineEvents::Reader batch, int32_t pid,
                                TimelineRing* ring);

}  // namespace cumulus
