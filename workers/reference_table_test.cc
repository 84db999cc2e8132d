#include "workers/reference_table.h"

#include <gtest/gtest.h>

namespace cumulus {
namespace {

class ReferenceTableTest : public ::testing::Test {
 protected:
  ObjectId NewResult() { return ObjectId::FromTaskReturn(TaskId::ForNormalTask(job_), 1); }
  // A ready object stored on `node`.
  ObjectId Stored(const NodeId& node) {
    ObjectId id = NewResult();
    ReferenceTable::SetStored(table_.Add(id), node, "127.0.0.1:1", 10);
    return id;
  }
  static internal::ArgData RefArg(const ObjectId& id) {
    internal::ArgData a;
    a.is_ref = true;
    a.ref = id;
    return a;
  }

  JobId job_ = JobId::FromRandom();
  NodeId node_ = NodeId::FromRandom();
  ReferenceTable table_{/*max_lineage_depth=*/3};
};

TEST_F(ReferenceTableTest, AnObjectIsFreedWhenItsLastHandleAndTaskLetGo) {
  ObjectId id = Stored(node_);
  ASSERT_TRUE(table_.Hold(id));  // a task takes it as an argument
  table_.RemoveRef(id);
  EXPECT_NE(table_.Find(id), nullptr) << "the task still holds it";
  EXPECT_TRUE(table_.TakeFrees().empty());
  table_.Release(id);
  EXPECT_EQ(table_.Find(id), nullptr);
  auto frees = table_.TakeFrees();
  ASSERT_EQ(frees.remote.size(), 1u);
  EXPECT_EQ(frees.remote[0], id.Binary() + node_.Binary());
  EXPECT_TRUE(table_.TakeFrees().empty()) << "each free is handed out once";
}

TEST_F(ReferenceTableTest, APendingObjectIsNotFreedAndAnInlineOneLeavesNothingToFree) {
  ObjectId pending = NewResult();
  table_.Add(pending).refs = 0;
  table_.FreeIfUnused(pending);
  EXPECT_NE(table_.Find(pending), nullptr);
  ObjectEntry* e = table_.Find(pending);
  e->state = ObjectEntry::kReady;
  e->inline_value = std::make_shared<std::string>("x");
  table_.FreeIfUnused(pending);
  EXPECT_EQ(table_.Find(pending), nullptr);
  EXPECT_TRUE(table_.TakeFrees().empty()) << "an inline value lives in no store";
  EXPECT_FALSE(table_.Hold(pending)) << "an unknown object cannot be held";
}

TEST_F(ReferenceTableTest, ALineageKeepsItsArgumentsAliveUntilItsObjectGoes) {
  ObjectId arg = Stored(node_);
  ASSERT_TRUE(table_.Hold(arg));
  table_.RemoveRef(arg);  // only the task holds it now
  ObjectId result = Stored(node_);
  table_.RecordLineage(*table_.Find(result), "F", {RefArg(arg)}, {}, 3, {arg});
  ASSERT_NE(table_.Find(result)->lineage, nullptr);
  EXPECT_EQ(table_.Find(result)->depth, 1) << "its argument was made by no task";
  EXPECT_NE(table_.Find(arg), nullptr) << "the lineage holds the argument";
  table_.RemoveRef(result);
  EXPECT_EQ(table_.Find(result), nullptr);
  EXPECT_EQ(table_.Find(arg), nullptr) << "freeing the result lets its argument go";
  EXPECT_EQ(table_.TakeFrees().remote.size(), 2u);
}

TEST_F(ReferenceTableTest, ChainsDeeperThanTheLimitKeepNoLineageAndSayWhy) {
  ObjectId prev;
  for (int depth = 1; depth <= 4; ++depth) {
    ObjectId next = Stored(node_);
    std::vector<ObjectId> held;
    if (!prev.IsNil()) {
      ASSERT_TRUE(table_.Hold(prev));
      held.push_back(prev);
    }
    table_.RecordLineage(*table_.Find(next), "F", {}, {}, 0, held);
    prev = next;
  }
  const ObjectEntry* deepest = table_.Find(prev);
  EXPECT_EQ(deepest->depth, 4);
  EXPECT_EQ(deepest->lineage, nullptr);
  EXPECT_NE(deepest->no_lineage.find("4 tasks deep"), std::string::npos) << deepest->no_lineage;
}

TEST_F(ReferenceTableTest, ALostCopyIsRebuiltABoundedNumberOfTimes) {
  ObjectId arg = Stored(node_);
  ASSERT_TRUE(table_.Hold(arg));
  ObjectId id = Stored(node_);
  table_.RecordLineage(*table_.Find(id), "F", {RefArg(arg)}, {}, 0, {arg});
  for (int attempt = 1; attempt <= ReferenceTable::kMaxRebuilds; ++attempt) {
    auto plan = table_.PlanRebuild(id, node_, "node died", "");
    ASSERT_EQ(plan.kind, ReferenceTable::RebuildPlan::kRebuild);
    EXPECT_EQ(plan.attempt, attempt);
    EXPECT_EQ(table_.Find(id)->state, ObjectEntry::kPending);
    EXPECT_EQ(table_.PlanRebuild(id, node_, "again", "").kind,
              ReferenceTable::RebuildPlan::kUnderway)
        << "a second report while it is rebuilt starts nothing";
    // The rebuilt task holds the argument again and finishes on another node.
    ASSERT_TRUE(table_.Hold(arg));
    table_.Release(plan.lineage->pinned);
    ReferenceTable::SetStored(*table_.Find(id), node_, "127.0.0.1:1", 10);
    table_.RecordLineage(*table_.Find(id), "F", {RefArg(arg)}, {}, 0, {arg});
  }
  auto plan = table_.PlanRebuild(id, node_, "node died", "");
  EXPECT_EQ(plan.kind, ReferenceTable::RebuildPlan::kLost);
  const ObjectEntry* e = table_.Find(id);
  EXPECT_EQ(e->state, ObjectEntry::kFailed);
  EXPECT_EQ(e->error.code(), StatusCode::kObjectLost);
  EXPECT_NE(e->error.message().find("rebuilt 3 times already"), std::string::npos);
  // The lineage given up lets its argument go.
  table_.RemoveRef(arg);
  EXPECT_EQ(table_.Find(arg), nullptr);
}

TEST_F(ReferenceTableTest, PutObjectsAndReplacedCopiesAreNotRebuilt) {
  ObjectId put = ObjectId::FromPut(TaskId::ForDriver(job_), 1);
  ReferenceTable::SetStored(table_.Add(put), node_, "127.0.0.1:1", 10);
  EXPECT_EQ(table_.PlanRebuild(put, node_, "gone", "").kind, ReferenceTable::RebuildPlan::kLost);
  EXPECT_NE(table_.Find(put)->error.message().find("made by Put"), std::string::npos);

  ObjectId moved = Stored(NodeId::FromRandom());
  EXPECT_EQ(table_.PlanRebuild(moved, node_, "gone", "").kind,
            ReferenceTable::RebuildPlan::kUnderway)
      << "a report about a node that no longer holds the copy";
  EXPECT_EQ(table_.PlanRebuild(NewResult(), node_, "gone", "").kind,
            ReferenceTable::RebuildPlan::kNotStored);
}

TEST_F(ReferenceTableTest, FreeAllHandsOutEveryStoredObjectAndLocalCopy) {
  ObjectId a = Stored(node_);
  ObjectId b = Stored(NodeId::FromRandom());
  table_.Find(b)->local_copy = true;
  table_.FreeAll();
  EXPECT_EQ(table_.size(), 0u);
  auto frees = table_.TakeFrees();
  EXPECT_EQ(frees.remote.size(), 2u);
  ASSERT_EQ(frees.local_copies.size(), 1u);
  EXPECT_EQ(frees.local_copies[0], b);
  (void)a;
}

// A draining node handed an object on: its owner follows it (later frees go to the new node);
// a report about a node it did not know the object on changes nothing.
TEST_F(ReferenceTableTest, AMovedObjectIsReadAndFreedWhereItWent) {
  ObjectId id = Stored(node_);
  NodeId to = NodeId::FromRandom(), other = NodeId::FromRandom();
  EXPECT_FALSE(table_.Moved(id, other, to, "127.0.0.1:2")) << "it was not on that node";
  EXPECT_FALSE(table_.Moved(NewResult(), node_, to, "127.0.0.1:2")) << "not owned here";
  ASSERT_TRUE(table_.Moved(id, node_, to, "127.0.0.1:2"));
  EXPECT_EQ(table_.Find(id)->node, to);
  EXPECT_EQ(table_.Find(id)->transfer, "127.0.0.1:2");
  EXPECT_EQ(table_.PlanRebuild(id, node_, "node left", "").kind,
            ReferenceTable::RebuildPlan::kUnderway)
      << "a failed read of the old copy is not a loss";
  table_.RemoveRef(id);
  auto frees = table_.TakeFrees();
  ASSERT_EQ(frees.remote.size(), 1u);
  EXPECT_EQ(frees.remote[0], id.Binary() + to.Binary());
}

}  // namespace
}  // namespace cumulus
