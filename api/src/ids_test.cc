#include "cumulus/ids.h"

#include <gtest/gtest.h>

#include <unordered_set>

namespace cumulus {
namespace {

TEST(IdsTest, ObjectIdIsDerivedFromItsTask) {
  JobId job = JobId::FromInt(7);
  ActorId actor = ActorId::Of(job);
  TaskId task = TaskId::ForActorTask(actor);
  ObjectId ret = ObjectId::FromTaskReturn(task, 2);
  ObjectId put = ObjectId::FromPut(task, 2);
  EXPECT_EQ(ret.Task(), task);
  EXPECT_EQ(ret.Index(), 2u);
  EXPECT_FALSE(ret.IsPut());
  EXPECT_TRUE(put.IsPut());
  EXPECT_EQ(put.Index(), 2u);
  EXPECT_NE(ret, put);
  EXPECT_EQ(task.Actor(), actor);
  EXPECT_EQ(task.Job(), job);
  EXPECT_EQ(actor.Job().ToInt(), 7u);
  EXPECT_EQ(TaskId::ForNormalTask(job).Job(), job);
  EXPECT_EQ(TaskId::ForDriver(job), TaskId::ForDriver(job));
}

TEST(IdsTest, HexRoundTripAndBadInput) {
  NodeId n = NodeId::FromRandom();
  EXPECT_FALSE(n.IsNil());
  EXPECT_EQ(n.Hex().size(), 32u);
  EXPECT_EQ(*NodeId::FromHex(n.Hex()), n);
  auto bad = NodeId::FromHex("xyz");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("node id"), std::string::npos);
  EXPECT_FALSE(ObjectId::FromHex(std::string(56, 'g')).ok());
}

TEST(IdsTest, RandomIdsAreDistinctAndHashable) {
  std::unordered_set<ObjectId> seen;
  TaskId t = TaskId::ForNormalTask(JobId::FromInt(1));
  for (uint32_t i = 1; i <= 1000; ++i) seen.insert(ObjectId::FromTaskReturn(t, i));
  for (int i = 0; i < 1000; ++i)
    seen.insert(ObjectId::FromPut(TaskId::ForNormalTask(JobId::FromInt(1)), 1));
  EXPECT_EQ(seen.size(), 2000u);
  EXPECT_TRUE(WorkerId().IsNil());
}

}  // namespace
}  // namespace cumulus
