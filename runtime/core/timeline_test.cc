#include "runtime/core/timeline.h"

#include <capnp/message.h>
#include <gtest/gtest.h>

#include <cstring>

#include "runtime/cli/chrome_trace.h"

namespace cumulus {
namespace {

TimelineRecord RunRecord(const TaskId& task, int64_t start, const char* name = "F") {
  TimelineRecord r;
  r.SetTask(task);
  r.kind = TimelineRecord::kRun;
  r.worker_pid = 42;
  r.SetFunction(name, std::strlen(name));
  for (int i = 0; i < 5; ++i) r.t[i] = start + i;
  return r;
}

TEST(TimelineRing, DropsTheOldestAndCountsThem) {
  TimelineRing ring(3);
  JobId job = JobId::FromInt(7);
  std::vector<TaskId> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(TaskId::ForNormalTask(job));
    ring.Add(RunRecord(ids.back(), 100 * i));
  }
  EXPECT_EQ(ring.size(), 3u);
  EXPECT_EQ(ring.dropped(), 2u);
  std::vector<TaskId> kept;
  ring.ForEach(JobId(), [&](const TimelineRecord& r) { kept.push_back(r.Task()); });
  EXPECT_EQ(kept, std::vector<TaskId>(ids.begin() + 2, ids.end()));  // oldest first
  int other = 0;
  ring.ForEach(JobId::FromInt(8), [&](const TimelineRecord&) { ++other; });
  EXPECT_EQ(other, 0);
}

TEST(TimelineRing, ZeroCapacityKeepsNothing) {
  TimelineRing ring(0);
  ring.Add(RunRecord(TaskId::ForNormalTask(JobId::FromInt(1)), 0));
  EXPECT_FALSE(ring.enabled());
  EXPECT_EQ(ring.size(), 0u);
}

TEST(TimelineRecord, TruncatesLongNamesAndRoundTrips) {
  std::string long_name(100, 'x');
  TimelineRecord r = RunRecord(TaskId::ForNormalTask(JobId::FromInt(3)), 10, long_name.c_str());
  EXPECT_EQ(std::strlen(r.function), kTimelineFunctionBytes - 1);
  capnp::MallocMessageBuilder m;
  auto e = m.initRoot<proto::TimelineEvent>();
  ToProto(r, e);
  TimelineRecord back;
  ASSERT_TRUE(FromProto(e.asReader(), &back));
  EXPECT_EQ(back.Task(), r.Task());
  EXPECT_STREQ(back.function, r.function);
  EXPECT_EQ(back.t[4], r.t[4]);
  e.setTaskId(capnp::Data::Reader(r.task, 3));
  EXPECT_FALSE(FromProto(e.asReader(), &back));
}

// A worker's batch in the packed form: what the node adds is what the worker recorded, with the
// worker's pid as the node knows it; records that are not runs are skipped.
TEST(TimelinePacked, RoundTripsIntoTheRing) {
  JobId job = JobId::FromInt(9);
  std::vector<TimelineRecord> sent;
  for (int i = 0; i < 5; ++i) sent.push_back(RunRecord(TaskId::ForNormalTask(job), 10 * i));
  sent[3].kind = TimelineRecord::kScheduled;  // a worker does not speak of scheduling
  sent[4].flags = TimelineRecord::kActorCall;
  sent[4].attempt = 2;
  sent[4].code = 7;
  capnp::MallocMessageBuilder m;
  auto batch = m.initRoot<proto::TimelineEvents>();
  PackTimeline(sent.data(), sent.size(), batch);
  EXPECT_EQ(batch.getPacked().size(), sent.size() * kTimelinePackedBytes);
  EXPECT_EQ(batch.getEvents().size(), 0u);

  TimelineRing ring(16);
  auto added = AddTimelineBatch(batch.asReader(), 1234, &ring);
  ASSERT_TRUE(added.ok()) << added.status().message();
  EXPECT_EQ(*added, 4u);
  std::vector<TimelineRecord> got;
  ring.ForEach(JobId(), [&](const TimelineRecord& r) { got.push_back(r); });
  ASSERT_EQ(got.size(), 4u);
  const size_t from[] = {0, 1, 2, 4};
  for (size_t i = 0; i < got.size(); ++i) {
    const TimelineRecord& want = sent[from[i]];
    EXPECT_EQ(got[i].Task(), want.Task());
    EXPECT_EQ(got[i].worker_pid, 1234);
    EXPECT_EQ(got[i].attempt, want.attempt);
    EXPECT_EQ(got[i].flags, want.flags);
    EXPECT_EQ(got[i].code, want.code);
    EXPECT_STREQ(got[i].function, want.function);
    EXPECT_EQ(0, std::memcmp(got[i].t, want.t, sizeof(want.t)));
  }
}

TEST(TimelinePacked, WrapsTheRingAndCountsWhatItLetGo) {
  std::vector<TimelineRecord> sent;
  for (int i = 0; i < 5; ++i)
    sent.push_back(RunRecord(TaskId::ForNormalTask(JobId::FromInt(2)), i));
  capnp::MallocMessageBuilder m;
  auto batch = m.initRoot<proto::TimelineEvents>();
  PackTimeline(sent.data(), sent.size(), batch);
  TimelineRing ring(3);
  ASSERT_TRUE(AddTimelineBatch(batch.asReader(), 1, &ring).ok());
  EXPECT_EQ(ring.size(), 3u);
  EXPECT_EQ(ring.dropped(), 2u);
  std::vector<int64_t> starts;
  ring.ForEach(JobId(), [&](const TimelineRecord& r) { starts.push_back(r.t[0]); });
  EXPECT_EQ(starts, (std::vector<int64_t>{2, 3, 4}));  // oldest first
}

// A malformed batch is dropped whole with a reason, never read past its end.
TEST(TimelinePacked, DropsAMalformedBatchWithAReason) {
  TimelineRecord r = RunRecord(TaskId::ForNormalTask(JobId::FromInt(4)), 0);
  TimelineRing ring(16);
  {
    capnp::MallocMessageBuilder m;
    auto batch = m.initRoot<proto::TimelineEvents>();
    batch.setPackedVersion(kTimelinePackedVersion);
    auto packed =
        batch.initPacked(static_cast<unsigned>(kTimelinePackedBytes + 5));  // wrong length
    std::memcpy(packed.begin(), static_cast<const void*>(&r), kTimelinePackedBytes);
    auto added = AddTimelineBatch(batch.asReader(), 1, &ring);
    ASSERT_FALSE(added.ok());
    EXPECT_NE(added.status().message().find("not a multiple"), std::string::npos)
        << added.status().message();
  }
  {
    capnp::MallocMessageBuilder m;
    auto batch = m.initRoot<proto::TimelineEvents>();
    PackTimeline(&r, 1, batch);
    batch.setPackedVersion(kTimelinePackedVersion + 1);  // a layout this build does not read
    auto added = AddTimelineBatch(batch.asReader(), 1, &ring);
    ASSERT_FALSE(added.ok());
    EXPECT_NE(added.status().message().find("version"), std::string::npos);
  }
  {
    // An unterminated function name is cut at the record's end, not read past it.
    TimelineRecord bad = r;
    std::memset(bad.function, 'x', sizeof(bad.function));
    capnp::MallocMessageBuilder m;
    auto batch = m.initRoot<proto::TimelineEvents>();
    PackTimeline(&bad, 1, batch);
    ASSERT_TRUE(AddTimelineBatch(batch.asReader(), 1, &ring).ok());
  }
  ASSERT_EQ(ring.size(), 1u);
  ring.ForEach(JobId(), [&](const TimelineRecord& got) {
    EXPECT_EQ(std::strlen(got.function), kTimelineFunctionBytes - 1);
  });
}

// The list form (what the node answers a client, and what older workers sent) is still read.
TEST(TimelinePacked, StillReadsTheListForm) {
  TimelineRecord r = RunRecord(TaskId::ForNormalTask(JobId::FromInt(6)), 5);
  capnp::MallocMessageBuilder m;
  auto batch = m.initRoot<proto::TimelineEvents>();
  ToProto(r, batch.initEvents(1)[0]);
  TimelineRing ring(4);
  auto added = AddTimelineBatch(batch.asReader(), 77, &ring);
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(*added, 1u);
  ring.ForEach(JobId(), [&](const TimelineRecord& got) {
    EXPECT_EQ(got.Task(), r.Task());
    EXPECT_EQ(got.worker_pid, 77);
  });
}

TEST(ChromeTrace, OverlappingSchedulingGoesOnSeparateThreads) {
  NodeTimeline n;
  n.node = NodeId::FromRandom();
  n.hostname = "h";
  n.capacity = 10;
  JobId job = JobId::FromInt(5);
  for (int i = 0; i < 2; ++i) {
    TaskId t = TaskId::ForNormalTask(job);
    TimelineRecord s;
    s.SetTask(t);
    s.kind = TimelineRecord::kScheduled;
    s.worker_pid = 42;
    s.t[0] = 1000;  // both arrived together: their waits overlap
    s.t[1] = 1001;
    n.events.push_back(s);
    n.events.push_back(RunRecord(t, 2000 + 100 * i));
  }
  ChromeTraceSummary sum;
  std::string json = ChromeTrace({n}, &sum);
  EXPECT_EQ(sum.runs, 2u);
  EXPECT_EQ(sum.scheduled, 2u);
  EXPECT_NE(json.find("\"tid\":" + std::to_string(kSchedulingTidBase)), std::string::npos);
  EXPECT_NE(json.find("\"tid\":" + std::to_string(kSchedulingTidBase + 1)), std::string::npos);
  // The scheduling span runs from the node's arrival to the worker's start.
  EXPECT_NE(json.find("\"ts\":1000,\"dur\":1001"), std::string::npos) << json;
  EXPECT_NE(json.find("\"traceEvents\":["), std::string::npos);
}

}  // namespace
}  // namespace cumulus
