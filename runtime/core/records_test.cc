#include "runtime/core/records.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include "runtime/proto/control.capnp.h"

namespace cumulus {
namespace {

TEST(RecordsTest, EveryRecordRoundTrips) {
  JobRecord job;
  job.binary_object = "ab";
  job.binary_size = 1u << 30;
  job.binary_hash = "0123456789abcdef";
  job.argv = {"./train", "--epochs", "5"};
  job.submitted = true;
  job.start_micros = -7;
  auto j = DecodeRecord<JobRecord>(EncodeRecord(job));
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->argv, job.argv);
  EXPECT_EQ(j->binary_size, job.binary_size);
  EXPECT_TRUE(j->submitted);
  EXPECT_EQ(j->start_micros, -7);

  JobPackage package;
  package.files.push_back({"bin/prog", 0755, std::string("\0\x01\xff", 3)});
  auto p = DecodeRecord<JobPackage>(EncodeRecord(package));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->files.size(), 1u);
  EXPECT_EQ(p->files[0].bytes, std::string("\0\x01\xff", 3)) << "bytes, not text";
  EXPECT_EQ(p->files[0].mode, 0755u);

  NodeStateReport report;
  report.tasks_total = 3;
  report.tasks.push_back({"t", "j", "Square", "RUNNING", 42, 1});
  report.objects.push_back({"o", "j", 1 << 20, "DISK", 2});
  auto r = DecodeRecord<NodeStateReport>(EncodeRecord(report));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->tasks.size(), 1u);
  EXPECT_EQ(r->tasks[0].function, "Square");
  EXPECT_EQ(r->tasks[0].pid, 42);
  EXPECT_EQ(r->objects[0].where, "DISK");

  GroupRecord group{"job", {"n1", "n2"}};
  EXPECT_EQ(DecodeRecord<GroupRecord>(EncodeRecord(group))->nodes, group.nodes);
  ActorNameRecord name{"id", "Counter", "127.0.0.1:1"};
  EXPECT_EQ(DecodeRecord<ActorNameRecord>(EncodeRecord(name))->address, "127.0.0.1:1");
  SubmissionRecord sub;
  sub.entrypoint = {"python", "x"};
  sub.state = "RUNNING";
  EXPECT_EQ(DecodeRecord<SubmissionRecord>(EncodeRecord(sub))->entrypoint, sub.entrypoint);
  EXPECT_EQ(DecodeRecord<JobEnd>(EncodeRecord(JobEnd{99}))->end_micros, 99);
}

TEST(RecordsTest, ARecordWrittenByAnyCapnProtoWriterIsRead) {
  // What another binary (another compiler, another language) writes: the schema, not our code.
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<proto::GroupRecord>();
  b.setJob("feed");
  b.initNodes(1).set(0, "beef");
  auto words = capnp::messageToFlatArray(m);
  auto bytes = words.asBytes();
  auto r = DecodeRecord<GroupRecord>(
      std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size()));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->job, "feed");
  EXPECT_EQ(r->nodes, std::vector<std::string>{"beef"});
}

TEST(RecordsTest, GarbageIsRefusedNotCrashedOn) {
  for (std::string bad : {std::string(), std::string("xyz"), std::string(64, '\xff'),
                          std::string(8, '\0') + std::string(8, '\x7f')}) {
    auto r = DecodeRecord<JobRecord>(bad);
    EXPECT_FALSE(r.ok()) << bad.size() << " bytes";
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace cumulus
