#include "runtime/object_store/region_allocator.h"

#include <cassert>

namespace cumulus {

RegionAllocator::RegionAllocator(uint64_t capacity, uint64_t alignment)
    : capacity_(capacity), alignment_(alignment) {
  assert((alignment & (alignment - 1)) == 0);
  if (capacity_ > 0) InsertFree(0, capacity_);
}

uint64_t RegionAllocator::RoundUp(uint64_t size) const {
  if (size == 0) return alignment_;
  return (size + alignment_ - 1) & ~(alignment_ - 1);
}

std::optional<uint64_t> RegionAllocator::Allocate(uint64_t size) {
  uint64_t need = RoundUp(size);
  auto best = by_size_.lower_bound(need);
  if (best == by_size_.end()) return std::nullopt;
  uint64_t offset = best->second, block = best->first;
  EraseFree(by_offset_.find(offset));
  if (block > need) InsertFree(offset + need, block - need);
  used_ += need;
  return offset;
}

void RegionAllocator::Free(uint64_t offset, uint64_t size) {
  uint64_t len = RoundUp(size);
  used_ -= len;
  // Merge with the free block after, then the one before.
  auto next = by_offset_.lower_bound(offset);
  if (next != by_offset_.end() && next->first == offset + len) {
    len += next->second;
    EraseFree(next);
  }
  auto after = by_offset_.lower_bound(offset);
  if (after != by_offset_.begin()) {
    auto prev = std::prev(after);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      len += prev->second;
      EraseFree(prev);
    }
  }
  InsertFree(offset, len);
}

uint64_t RegionAllocator::largest_free_block() const {
  return by_size_.empty() ? 0 : by_size_.rbegin()->first;
}

void RegionAllocator::InsertFree(uint64_t offset, uint64_t size) {
  by_offset_.emplace(offset, size);
  by_size_.emplace(size, offset);
}

void RegionAllocator::EraseFree(std::map<uint64_t, uint64_t>::iterator it) {
  auto range = by_size_.equal_range(it->second);
  for (auto s = range.first; s != range.second; ++s) {
    if (s->second == it->first) {
      by_size_.erase(s);
      break;
    }
  }
  by_offset_.erase(it);
}

}  // namespace cumulus
