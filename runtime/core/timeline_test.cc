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
