#include "scheduler/gpu_assignment.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace cumulus {
namespace {

constexpr int64_t kGpu = ResourceSet::kUnit;

TEST(GpuAssignmentTest, WholeGpusAreExclusiveAndDisjoint) {
  GpuAssignment g({0, 1, 2, 3});
  auto a = g.Acquire(2 * kGpu), b = g.Acquire(kGpu), c = g.Acquire(kGpu);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  std::set<uint32_t> all(a->begin(), a->end());
  all.insert(b->begin(), b->end());
  all.insert(c->begin(), c->end());
  EXPECT_EQ(all.size(), 4u) << "every actor sees its own GPUs";
  EXPECT_EQ(g.Acquire(kGpu).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(GpuAssignment::VisibleDevices(*a), "0,1");
  ASSERT_TRUE(g.Release(*a, 2 * kGpu).ok());
  EXPECT_EQ(g.free_units(), 2 * kGpu);
  EXPECT_EQ(g.Release(*a, 2 * kGpu).code(), StatusCode::kInvalidArgument) << "a double release";
  EXPECT_EQ(g.free_units(), 2 * kGpu);
}

TEST(GpuAssignmentTest, FractionsShareADeviceAndLeaveWholeOnesFree) {
  GpuAssignment g({0, 1});
  auto q1 = g.Acquire(kGpu / 4), q2 = g.Acquire(kGpu / 4), half = g.Acquire(kGpu / 2);
  ASSERT_TRUE(q1.ok() && q2.ok() && half.ok());
  EXPECT_EQ(*q1, *q2);
  EXPECT_EQ(*q1, *half) << "fractions pack onto one device";
  auto whole = g.Acquire(kGpu);
  ASSERT_TRUE(whole.ok());
  EXPECT_NE(*whole, *q1);
  EXPECT_EQ(g.Acquire(kGpu / 10).status().code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(g.Release(*half, kGpu / 2).ok());
  EXPECT_TRUE(g.Acquire(kGpu / 2).ok());
  EXPECT_EQ(g.Acquire(3 * kGpu / 2).status().code(), StatusCode::kInvalidArgument);
}

TEST(GpuAssignmentTest, RandomAcquireReleaseNeverOversubscribes) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  GpuAssignment g({0, 1, 2, 3});
  std::vector<std::pair<std::vector<uint32_t>, int64_t>> held;
  std::map<uint32_t, int64_t> used;
  for (int i = 0; i < 5000; ++i) {
    if (held.empty() || rng() % 2) {
      int64_t units = rng() % 3 == 0 ? kGpu * (1 + rng() % 2) : kGpu / (1 + rng() % 4);
      auto got = g.Acquire(units);
      if (!got.ok()) continue;
      int64_t each = got->size() > 1 ? kGpu : units;
      for (uint32_t id : *got) {
        used[id] += each;
        ASSERT_LE(used[id], kGpu) << "GPU " << id << " oversubscribed";
      }
      held.emplace_back(*got, units);
    } else {
      size_t k = rng() % held.size();
      int64_t each = held[k].first.size() > 1 ? kGpu : held[k].second;
      for (uint32_t id : held[k].first) used[id] -= each;
      ASSERT_TRUE(g.Release(held[k].first, held[k].second).ok());
      held.erase(held.begin() + static_cast<long>(k));
    }
  }
}

}  // namespace
}  // namespace cumulus
