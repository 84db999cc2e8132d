#include "runtime/tune/refusal_checks.h"

#include <gtest/gtest.h>

namespace cumulus::tune {
namespace {

NodeRecord NodeWith(double gpus) {
  NodeRecord n;
  n.total.Set("GPU", gpus);
  return n;
}

TEST(RefusalChecksTest, ADrainingOrDeadNodeCannotHoldATrial) {
  ResourceSet bundle;
  bundle.Set("GPU", 2);
  NodeRecord big = NodeWith(4);
  EXPECT_TRUE(AnyNodeCouldHold({NodeWith(1), big}, bundle, ""));
  big.draining = true;
  EXPECT_FALSE(AnyNodeCouldHold({NodeWith(1), big}, bundle, ""));
  big.draining = false;
  big.state = NodeState::kDead;
  EXPECT_FALSE(AnyNodeCouldHold({big}, bundle, ""));
}

TEST(RefusalChecksTest, AVerdictIsFreshWhileItsStampChangesOnThisClock) {
  using namespace std::chrono_literals;
  VerdictFreshness f(30s);
  VerdictFreshness::Clock::time_point t0{1000s};
  // Stamps from a monitor host whose clock is an hour behind: only their changes count.
  int64_t skewed = 1'000'000'000'000 - 3'600'000'000;
  EXPECT_FALSE(f.Fresh(skewed, t0)) << "one sighting says nothing of its age";
  EXPECT_TRUE(f.Fresh(skewed + 2'000'000, t0 + 2s));  // written after t0
  EXPECT_TRUE(f.Fresh(skewed + 2'000'000, t0 + 29s));
  EXPECT_FALSE(f.Fresh(skewed + 2'000'000, t0 + 31s)) << "the monitor stopped publishing";
  EXPECT_TRUE(f.Fresh(skewed + 40'000'000, t0 + 40s));  // written after t0 + 31s
  // A change seen only after a long gap may have been written at its start: not fresh.
  EXPECT_FALSE(f.Fresh(skewed + 99'000'000, t0 + 400s));
  EXPECT_TRUE(f.Fresh(skewed + 100'000'000, t0 + 401s));
}

}  // namespace
}  // namespace cumulus::tune
