// RegionAllocator: hands out byte ranges of a fixed-size region (the shared-memory tier).
// Best fit over free blocks, coalescing neighbours on free. Sizes are rounded up to `alignment`
// (so every object starts on a cache line), and used() is exactly the sum of the rounded sizes.
// Not thread-safe: the ObjectStore's mutex guards it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace cumulus {

class RegionAllocator {
 public:
  // REQUIRES: alignment is a power of two; capacity is a multiple of alignment.
  explicit RegionAllocator(uint64_t capacity, uint64_t alignment = 64);

  // The bytes Allocate(size) takes: size rounded up to the alignment, at least one unit.
  uint64_t RoundUp(uint64_t size) const;
  // Returns the offset of RoundUp(size) free bytes, or nullopt if no free block is big enough.
  std::optional<uint64_t> Allocate(uint64_t size);
  // REQUIRES: (offset, size) was returned by Allocate(size) and not freed since.
  void Free(uint64_t offset, uint64_t size);

  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  uint64_t largest_free_block() const;
  // Calls fn(offset, size) for every free block, in offset order.
  template <typename Fn>
  void ForEachFree(Fn fn) const {
    for (auto& [offset, size] : by_offset_) fn(offset, size);
  }
  size_t free_block_count() const { return by_offset_.size(); }

 private:
  void InsertFree(uint64_t offset, uint64_t size);
  void EraseFree(std::map<uint64_t, uint64_t>::iterator it);

  uint64_t capacity_;
  uint64_t alignment_;
  uint64_t used_ = 0;
  std::map<uint64_t, uint64_t> by_offset_;     // free blocks: offset -> size
  std::multimap<uint64_t, uint64_t> by_size_;  // free blocks: size -> offset
};

}  // namespace cumulus
