// TimelineBatch: a worker's timeline events (runtime/core/timeline.h) on their way to its node.
// The executing thread records one event per task it runs into a fixed buffer (no allocation,
// no lock) and ships the buffer as one timelineEvents frame to the node (ExecutionQueue::Run):
// piggybacked in the same write as the result of a task from the node when the buffer is full or
// the worker has nothing queued; otherwise (actor calls answer their callers, not the node) on
// its own when the buffer is full, or when the worker is idle and the last batch left at least
// kFlushEveryMicros ago; what is left goes at most that long after the worker went idle (the
// queue's wait wakes for it). Never a frame per event.
//
// Not thread-safe: only the worker's executing thread (ExecutionQueue::Run) uses it.
#pragma once

#include <array>
#include <chrono>
#include <string>

#include "runtime/core/timeline.h"

namespace cumulus {

class TimelineBatch {
 public:
  static constexpr size_t kCapacity = 128;
  static constexpr int64_t kFlushEveryMicros = 2000;

  explicit TimelineBatch(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }

  // The slot for the next event (REQUIRES: enabled() and !full()).
  TimelineRecord& Next() { return events_[size_]; }
  void Commit() { ++size_; }
  bool full() const { return size_ == kCapacity; }
  bool empty() const { return size_ == 0; }

  // Whether to ship now: full, or `idle` (nothing queued) and the last batch is old enough.
  bool Due(bool idle, int64_t now_us) const {
    return size_ > 0 && (full() || (idle && now_us - last_flush_us_ >= kFlushEveryMicros));
  }
  // When an idle worker must wake to ship what is left (only if !empty()).
  int64_t DeadlineMicros() const { return last_flush_us_ + kFlushEveryMicros; }
  // The buffered events as one timelineEvents frame, in the packed form (PackTimeline: one copy
  // of the buffer); empties the buffer.
  std::string TakeFrame(int64_t now_us);

 private:
  bool enabled_;
  std::array<TimelineRecord, kCapacity> events_;
  size_t size_ = 0;
  int64_t last_flush_us_ = 0;
};

}  // namespace cumulus
