#include "runtime/node/handoff_ledger.h"

#include <gtest/gtest.h>

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
  // A second round: what the first handed on is still forwarded.
  ledger.Begin({Obj(4)});
  EXPECT_TRUE(ledger.End(taker, {}).empty());
  auto elsewhere = ledger.Freed({Obj(1), Obj(4)});
  ASSERT_EQ(elsewhere.size(), 1u);
  EXPECT_EQ(elsewhere[0].first, Obj(1));
}

}  // namespace
}  // namespace cumulus
