#include "runtime/core/timeline.h"

#include <time.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <string_view>

#include "runtime/base/numeric.h"

namespace cumulus {

TaskId TimelineRecord::Task() const {
  return TaskId::FromBinary(std::string_view(reinterpret_cast<const char*>(task), TaskId::kSize));
}

void TimelineRecord::SetFunction(const char* name, size_t n) {
  n = std::min(n, kTimelineFunctionBytes - 1);
  std::memcpy(function, name, n);
  function[n] = '\0';
}

int64_t TimelineNowMicros() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t now = static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
  // Never earlier than this thread's previous reading: the wall clock may step back (a time
  // daemon), and on a VM the TSC of the CPU a thread moved to may lag the one it left by a few
  // microseconds; a worker's phases and runs, all read on one thread, must not overlap.
  thread_local int64_t last = 0;
  if (now < last) now = last;
  last = now;
  return now;
}

namespace {
bool SaysOff(const char* v) {
  std::string_view s(v ? v : "");
  return s == "0" || s == "off" || s == "false" || s == "no";
}
}  // namespace

bool TimelineEnabledInEnv() { return !SaysOff(std::getenv("CUMULUS_TIMELINE")); }

Result<size_t> TimelineEventsFromEnv(size_t fallback) {
  if (!TimelineEnabledInEnv()) return size_t{0};
  auto n = IntegerFromEnv("CUMULUS_TIMELINE_EVENTS",
                          {1, static_cast<int64_t>(kMaxTimelineEvents), "events"});
  if (!n.ok()) return n.status();
  return *n ? static_cast<size_t>(**n) : fallback;
}

void TimelineRing::Add(const TimelineRecord& r) {
  if (capacity_ == 0) return;
  NextSlot() = r;
}

TimelineRecord& TimelineRing::NextSlot() {
  if (size_ < capacity_) return events_[size_++];
  TimelineRecord& slot = events_[next_];
  next_ = next_ + 1 == capacity_ ? 0 : next_ + 1;
  ++dropped_;
  return slot;
}

size_t TimelineRing::AddPacked(const uint8_t* data, size_t size, int32_t pid) {
  if (capacity_ == 0) return 0;
  size_t added = 0;
  for (size_t at = 0; at + kTimelinePackedBytes <= size; at += kTimelinePackedBytes) {
    // A worker speaks only of runs (the node times scheduling itself).
    if (data[at + offsetof(TimelineRecord, kind)] != TimelineRecord::kRun) continue;
    TimelineRecord& slot = NextSlot();
    std::memcpy(static_cast<void*>(&slot), data + at, kTimelinePackedBytes);
    slot.function[kTimelineFunctionBytes - 1] = '\0';
    slot.worker_pid = pid;
    ++added;
  }
  return added;
}

void TimelineRing::ForEach(const JobId& job,
                           const std::function<void(const TimelineRecord&)>& fn) const {
  for (size_t i = 0; i < size_; ++i) {
    const TimelineRecord& r = events_[(next_ + i) % size_];
    if (!job.IsNil() && r.Task().Job() != job) continue;
    fn(r);
  }
}

void ToProto(const TimelineRecord& r, proto::TimelineEvent::Builder out) {
  out.setTaskId(capnp::Data::Reader(r.task, TaskId::kSize));
  out.setAttempt(r.attempt);
  out.setKind(r.kind);
  out.setFlags(r.flags);
  out.setCode(r.code);
  out.setWorkerPid(r.worker_pid);
  out.setFunction(r.function);
  out.setT0(r.t[0]);
  out.setT1(r.t[1]);
  out.setT2(r.t[2]);
  out.setT3(r.t[3]);
  out.setT4(r.t[4]);
}

bool FromProto(proto::TimelineEvent::Reader in, TimelineRecord* out) {
  auto id = in.getTaskId();
  if (id.size() != TaskId::kSize) return false;
  if (in.getKind() != TimelineRecord::kRun && in.getKind() != TimelineRecord::kScheduled) {
    return false;
  }
  std::memcpy(out->task, id.begin(), TaskId::kSize);
  out->attempt = in.getAttempt();
  out->kind = in.getKind();
  out->flags = in.getFlags();
  out->code = in.getCode();
  out->worker_pid = in.getWorkerPid();
  auto f = in.getFunction();
  out->SetFunction(f.cStr(), f.size());
  out->t[0] = in.getT0();
  out->t[1] = in.getT1();
  out->t[2] = in.getT2();
  out->t[3] = in.getT3();
  out->t[4] = in.getT4();
  return true;
}

void PackTimeline(const TimelineRecord* records, size_t n, proto::TimelineEvents::Builder out) {
  out.setPackedVersion(kTimelinePackedVersion);
  auto packed = out.initPacked(static_cast<unsigned>(n * kTimelinePackedBytes));
  if (n > 0) std::memcpy(packed.begin(), static_cast<const void*>(records), packed.size());
}

Result<size_t> AddTimelineBatch(proto::TimelineEvents::Reader batch, int32_t pid,
                                TimelineRing* ring) {
  if (batch.hasPacked() || batch.getPackedVersion() != 0) {
    if (batch.getPackedVersion() != kTimelinePackedVersion) {
      return Status::InvalidArgument(
          "packed timeline batch of version " + std::to_string(batch.getPackedVersion()) +
          ", this build reads version " + std::to_string(kTimelinePackedVersion) +
          " (run the same build on worker and node)");
    }
    auto packed = batch.getPacked();
    if (packed.size() % kTimelinePackedBytes != 0) {
      return Status::InvalidArgument("packed timeline batch of " + std::to_string(packed.size()) +
                                     " bytes, not a multiple of the " +
                                     std::to_string(kTimelinePackedBytes) + "-byte record");
    }
    return ring->AddPacked(packed.begin(), packed.size(), pid);
  }
  size_t added = 0;
  TimelineRecord r;
  for (auto e : batch.getEvents()) {
    // A worker speaks only for itself, and only of runs (the node times scheduling itself).
    if (!FromProto(e, &r) || r.kind != TimelineRecord::kRun) continue;
    r.worker_pid = pid;
    ring->Add(r);
    ++added;
  }
  return added;
}

}  // namespace cumulus
