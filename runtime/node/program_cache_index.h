// ProgramCacheIndex: which job programs are in a node's program cache (WORK_DIR/jobs/HASH), how
// large each is and when it was last used, and which to evict so that the cache stays under its
// size bound: least recently used first, never one in use. It only keeps the books; the caller
// removes the files it is told to. Not thread-safe: the node's event loop owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/base/clock.h"

namespace cumulus {

constexpr uint64_t kDefaultProgramCacheBytes = 2ull << 30;  // 2 GiB

class ProgramCacheIndex {
 public:
  explicit ProgramCacheIndex(uint64_t max_bytes = kDefaultProgramCacheBytes)
      : max_bytes_(max_bytes) {}

  uint64_t max_bytes() const { return max_bytes_; }
  uint64_t bytes() const { return bytes_; }
  size_t size() const { return entries_.size(); }
  bool Contains(const std::string& hash) const { return entries_.count(hash) != 0; }

  // A program of `size` bytes is in the cache now (again: its size is replaced); used at `now`.
  void Add(const std::string& hash, uint64_t size, TimePoint now);
  // A worker started from it.
  void Touch(const std::string& hash, TimePoint now);
  void Remove(const std::string& hash);

  // Takes out of the index, least recently used first, the programs to evict so that `incoming`
  // more bytes fit under the bound, skipping those for which `in_use` is true, and returns their
  // hashes. When the programs in use alone are over the bound it evicts all others and the cache
  // stays over it until they are no longer used.
  std::vector<std::string> Evict(uint64_t incoming,
                                 const std::function<bool(const std::string& hash)>& in_use);

 private:
  struct Entry {
    uint64_t size = 0;
    TimePoint last_used{};
  };
  uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  std::map<std::string, Entry> entries_;
};

}  // namespace cumulus
