#include "runtime/object_store/region_allocator.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace cumulus {
namespace {

TEST(RegionAllocatorTest, RoundsAndAccountsExactly) {
  RegionAllocator a(1024, 64);
  EXPECT_EQ(a.RoundUp(0), 64u);
  EXPECT_EQ(a.RoundUp(1), 64u);
  EXPECT_EQ(a.RoundUp(65), 128u);
  auto x = a.Allocate(100);
  ASSERT_TRUE(x);
  EXPECT_EQ(*x % 64, 0u);
  EXPECT_EQ(a.used(), 128u);
  auto y = a.Allocate(896);
  ASSERT_TRUE(y);
  EXPECT_EQ(a.used(), 1024u);
  EXPECT_FALSE(a.Allocate(1));
  a.Free(*x, 100);
  EXPECT_EQ(a.used(), 896u);
  a.Free(*y, 896);
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.free_block_count(), 1u);
  EXPECT_EQ(a.largest_free_block(), 1024u);
}

TEST(RegionAllocatorTest, CoalescesNeighbours) {
  RegionAllocator a(64 * 4, 64);
  auto b0 = a.Allocate(64), b1 = a.Allocate(64), b2 = a.Allocate(64), b3 = a.Allocate(64);
  ASSERT_TRUE(b0 && b1 && b2 && b3);
  a.Free(*b0, 64);
  a.Free(*b2, 64);
  EXPECT_EQ(a.free_block_count(), 2u);
  EXPECT_FALSE(a.Allocate(128));  // fragmented
  a.Free(*b1, 64);                // joins b0 and b2
  EXPECT_EQ(a.free_block_count(), 1u);
  EXPECT_TRUE(a.Allocate(192));
}

TEST(RegionAllocatorTest, RandomWorkloadNeverOverlapsOrLeaks) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  RegionAllocator a(1 << 20, 64);
  std::map<uint64_t, uint64_t> live;  // offset -> rounded size
  uint64_t expect_used = 0;
  for (int i = 0; i < 20000; ++i) {
    if (live.empty() || rng() % 2) {
      uint64_t size = rng() % 20000;
      auto off = a.Allocate(size);
      if (!off) continue;
      uint64_t len = a.RoundUp(size);
      auto next = live.lower_bound(*off);
      ASSERT_TRUE(next == live.end() || next->first >= *off + len) << "overlap";
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second, *off) << "overlap";
      }
      ASSERT_LE(*off + len, a.capacity());
      live[*off] = len;
      expect_used += len;
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      a.Free(it->first, it->second);
      expect_used -= it->second;
      live.erase(it);
    }
    ASSERT_EQ(a.used(), expect_used);
  }
  for (auto& [off, len] : live) a.Free(off, len);
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.free_block_count(), 1u);
}

}  // namespace
}  // namespace cumulus
