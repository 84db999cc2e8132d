#include "runtime/node/handoff_ledger.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace cumulus {
namespace {

// The results of one task (ForNormalTask is random: made once).
ObjectId Obj(uint32_t i) {
  static const TaskId task = TaskId::ForNormalTask(JobId::FromInt(1));
  return ObjectId::FromTaskReturn(task, i);
}

TEST(HandoffLedgerTest, FreeDuringTheRoundIsNotAMoveAndIsFreedAtTheTaker) {
  HandoffLedger ledger;
  NodeId taker = NodeId::FromRandom();
  ledger.Begin({Obj(1), Obj(2), Obj(3)});
  EXPECT_TRUE(ledger.Freed({Obj(2)}).empty()) << "nothing was handed on yet";
  // The taker took 1 and 2 (3 was not taken: the round failed partway).
  std::vector<ObjectId> freed = ledger.End(taker, {Obj(1), Obj(2)});
  ASSERT_EQ(freed.size(), 1u);
  EXPECT_EQ(freed[0], Obj(2));
  EXPECT_TRUE(ledger.Commit(/*recorded=*/true).empty());
  // A later free of 1 is forwarded to the taker; 3 stayed here, so its free is only here.
  auto elsewhere = ledger.Freed({Obj(1), Obj(3)});
  ASSERT_EQ(elsewhere.size(), 1u);
  EXPECT_EQ(elsewhere[0].first, Obj(1));
  EXPECT_EQ(elsewhere[0].second, taker);
  EXPECT_TRUE(ledger.Freed({Obj(1)}).empty()) << "freed at the taker once";
}

TEST(HandoffLedgerTest, FreeOfAnObjectNotInTheRoundIsOnlyHere) {
  HandoffLedger ledger;
  NodeId taker = NodeId::FromRandom();
  ledger.Begin({Obj(1)});
  EXPECT_TRUE(ledger.Freed({Obj(7)}).empty());
  EXPECT_TRUE(ledger.End(taker, {Obj(1)}).empty());
  EXPECT_TRUE(ledger.Commit(/*recorded=*/true).empty());
  // A second round: what the first handed on is still forwarded.
  ledger.Begin({Obj(4)});
  EXPECT_TRUE(ledger.End(taker, {}).empty());
  auto elsewhere = ledger.Freed({Obj(1), Obj(4)});
  ASSERT_EQ(elsewhere.size(), 1u);
  EXPECT_EQ(elsewhere[0].first, Obj(1));
}

TEST(HandoffLedgerTest, FreeWhileTheHeadRecordsTheMovesIsFreedAtTheTaker) {
  HandoffLedger ledger;
  NodeId taker = NodeId::FromRandom();
  ledger.Begin({Obj(1), Obj(2)});
  EXPECT_TRUE(ledger.End(taker, {Obj(1), Obj(2)}).empty());
  EXPECT_TRUE(ledger.Freed({Obj(2)}).empty()) << "not handed on until the head has the moves";
  std::vector<ObjectId> free_there = ledger.Commit(/*recorded=*/true);
  ASSERT_EQ(free_there.size(), 1u);
  EXPECT_EQ(free_there[0], Obj(2));
  auto elsewhere = ledger.Freed({Obj(1), Obj(2)});
  ASSERT_EQ(elsewhere.size(), 1u);
  EXPECT_EQ(elsewhere[0].first, Obj(1));
  EXPECT_EQ(elsewhere[0].second, taker);
}

// The head could not record the moves: the copies here are kept and handed on again, maybe to
// another taker. The first taker's copies are freed and it is never named as their holder.
TEST(HandoffLedgerTest, UnrecordedRoundFreesTheTakersCopiesAndHandsNothingOn) {
  HandoffLedger ledger;
  NodeId first = NodeId::FromRandom();
  NodeId second = NodeId::FromRandom();
  ledger.Begin({Obj(1), Obj(2), Obj(3)});
  EXPECT_TRUE(ledger.Freed({Obj(3)}).empty());
  std::vector<ObjectId> freed = ledger.End(first, {Obj(1), Obj(2), Obj(3)});
  ASSERT_EQ(freed.size(), 1u);
  std::vector<ObjectId> free_there = ledger.Commit(/*recorded=*/false);
  std::sort(free_there.begin(), free_there.end());
  std::vector<ObjectId> want = {Obj(1), Obj(2)};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(free_there, want) << "the first taker's copies are freed";
  EXPECT_TRUE(ledger.Freed({Obj(1)}).empty()) << "1 is still here: freed only here";
  // The next round hands 2 to another taker, and the head records it.
  ledger.Begin({Obj(2)});
  EXPECT_TRUE(ledger.End(second, {Obj(2)}).empty());
  EXPECT_TRUE(ledger.Commit(/*recorded=*/true).empty());
  auto elsewhere = ledger.Freed({Obj(2)});
  ASSERT_EQ(elsewhere.size(), 1u);
  EXPECT_EQ(elsewhere[0].second, second);
}

}  // namespace
}  // namespace cumulus
