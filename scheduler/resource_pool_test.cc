#include "scheduler/resource_pool.h"

#include <gtest/gtest.h>

#include "scheduler/bundle_table.h"

namespace cumulus {
namespace {

constexpr int64_t kUnit = ResourceSet::kUnit;

ResourceSet Res(const char* spec) {
  auto r = ResourceSet::Parse(spec);
  EXPECT_TRUE(r.ok()) << spec;
  return *r;
}

TEST(ResourcePoolTest, LeasesComeAndGoWithTheirGpus) {
  ResourcePool pool(Res("CPU=4,GPU=2"), {0, 1});
  auto a = pool.Acquire(Res("CPU=1,GPU=1"));
  auto b = pool.Acquire(Res("CPU=1,GPU=1"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b) << "each lease gets its own device";
  EXPECT_EQ(pool.Acquire(Res("GPU=1")).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(pool.available().GetUnits("CPU"), 2 * kUnit);
  pool.Release(Res("CPU=1,GPU=1"), *a);
  EXPECT_EQ(pool.available().GetUnits("GPU"), kUnit);
  auto c = pool.Acquire(Res("GPU=1"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, *a) << "the device given back is the one free";
}

TEST(ResourcePoolTest, AFailedAcquireChangesNothing) {
  ResourcePool pool(Res("CPU=2"), {});
  EXPECT_FALSE(pool.Acquire(Res("CPU=3")).ok());
  EXPECT_EQ(pool.available(), Res("CPU=2"));
}

TEST(ResourcePoolTest, ABlockedLeaseLendsItsCpuAndTheDebtIsPaidFirst) {
  ResourcePool pool(Res("CPU=2"), {});
  ASSERT_TRUE(pool.Acquire(Res("CPU=1")).ok());  // blocked in Get below
  ASSERT_TRUE(pool.Acquire(Res("CPU=1")).ok());
  EXPECT_EQ(pool.available().GetUnits("CPU"), 0);
  pool.LendCpu(kUnit);
  EXPECT_EQ(pool.available().GetUnits("CPU"), kUnit) << "a nested task may run meanwhile";
  ASSERT_TRUE(pool.Acquire(Res("CPU=1")).ok());
  pool.ReclaimCpu(kUnit);  // the lender woke: the node is oversubscribed by one CPU
  EXPECT_EQ(pool.cpu_debt(), kUnit);
  pool.Release(Res("CPU=1"), {});  // the nested task ends: pays the debt
  EXPECT_EQ(pool.cpu_debt(), 0);
  EXPECT_EQ(pool.available().GetUnits("CPU"), 0);
  pool.Release(Res("CPU=1"), {});
  pool.Release(Res("CPU=1"), {});
  EXPECT_EQ(pool.available(), Res("CPU=2")) << "nothing leaked";
}

TEST(ResourcePoolTest, ALeaseThatLentItsCpuGivesBackOnlyTheRest) {
  ResourcePool pool(Res("CPU=2"), {});
  ASSERT_TRUE(pool.Acquire(Res("CPU=2")).ok());
  pool.LendCpu(2 * kUnit);
  pool.Release(Res("CPU=2"), {}, /*lent_cpu=*/2 * kUnit);
  EXPECT_EQ(pool.available(), Res("CPU=2")) << "not counted twice";
}

PlacementGroupId Group(uint8_t n) {
  std::string bytes(PlacementGroupId::kSize, '\0');
  bytes[0] = static_cast<char>(n);
  return PlacementGroupId::FromBinary(bytes);
}

TEST(BundleTableTest, AllBundlesOrNone) {
  ResourcePool node(Res("CPU=4,GPU=1"), {7});
  BundleTable table;
  std::vector<ResourceSet> bundles = {Res("CPU=2,GPU=1"), Res("CPU=2,GPU=1")};
  Status st = table.Reserve(Group(1), JobId(), 1, {0, 1}, bundles, node, "n1");
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st;
  EXPECT_EQ(node.available(), Res("CPU=4,GPU=1")) << "nothing held after a refusal";
  ASSERT_TRUE(table.Reserve(Group(1), JobId(), 1, {0}, bundles, node, "n1").ok());
  HeldBundle* b = table.Find({Group(1), 0});
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->gpu_ids, std::vector<uint32_t>{7});
  EXPECT_EQ(node.available(), Res("CPU=2,GPU=0"));
  EXPECT_EQ(table.Reserve(Group(1), JobId(), 1, {0}, bundles, node, "n1").code(),
            StatusCode::kAlreadyExists);
}

TEST(BundleTableTest, AReleaseRefusesLateReservationsOfItsTries) {
  ResourcePool node(Res("CPU=4"), {});
  BundleTable table;
  std::vector<ResourceSet> bundles = {Res("CPU=1"), Res("CPU=1")};
  ASSERT_TRUE(table.Reserve(Group(2), JobId(), 1, {0}, bundles, node, "n").ok());
  EXPECT_EQ(table.HeldThrough(Group(2), 1).size(), 1u);
  table.Release(Group(2), 1, node);
  EXPECT_EQ(node.available(), Res("CPU=4"));
  EXPECT_EQ(table.Reserve(Group(2), JobId(), 1, {1}, bundles, node, "n").code(),
            StatusCode::kCancelled)
      << "a reservation of try 1 arriving after its release";
  ASSERT_TRUE(table.Reserve(Group(2), JobId(), 2, {0, 1}, bundles, node, "n").ok());
  EXPECT_TRUE(table.HeldThrough(Group(2), 1).empty()) << "try 2 is not released by try 1's release";
  table.Release(Group(2), kAllRounds, node);
  EXPECT_EQ(node.available(), Res("CPU=4"));
  EXPECT_EQ(table.Find({Group(2), 1}), nullptr);
}

TEST(BundleTableTest, TombstonesAreBounded) {
  ResourcePool node(Res("CPU=1"), {});
  BundleTable table(/*max_tombstones=*/2);
  std::vector<ResourceSet> bundles = {Res("CPU=1")};
  for (uint8_t g = 1; g <= 3; ++g) table.Release(Group(g), kAllRounds, node);
  EXPECT_TRUE(table.Reserve(Group(1), JobId(), 1, {0}, bundles, node, "n").ok())
      << "the oldest release was forgotten";
  table.Release(Group(1), kAllRounds, node);
  EXPECT_EQ(table.Reserve(Group(3), JobId(), 1, {0}, bundles, node, "n").code(),
            StatusCode::kCancelled);
}

}  // namespace
}  // namespace cumulus
