// SharedRegion: a shared-memory region backed by a memfd. The owning store maps it read-write;
// other processes receive the fd over a Unix socket and map it read-only, so a sealed object is
// read in place with no copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cumulus/status.h"

namespace cumulus {

class SharedRegion {
 public:
  // Creates an anonymous region of `size` bytes. With `prefault`, every page is touched now, so
  // the first write to an object costs no page fault (and the memory is committed up front).
  static Result<std::unique_ptr<SharedRegion>> Create(uint64_t size, const std::string& name,
                                                      bool prefault);
  // Maps a region received from its owner. Takes ownership of `fd`.
  static Result<std::unique_ptr<SharedRegion>> MapReadOnly(int fd, uint64_t size);

  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  uint8_t* data() const { return base_; }
  uint64_t size() const { return size_; }
  int fd() const { return fd_; }
  // Gives the pages wholly inside [offset, offset + size) back to the system (they read as zero
  // and are allocated again on the next write). The owner calls it for free memory only.
  Status Release(uint64_t offset, uint64_t size);
  // Bytes of the region that hold pages now.
  uint64_t ResidentBytes() const;
  bool Contains(const void* p, uint64_t len) const {
    auto* b = static_cast<const uint8_t*>(p);
    return b >= base_ && b + len <= base_ + size_;
  }

 private:
  SharedRegion(int fd, uint8_t* base, uint64_t size) : fd_(fd), base_(base), size_(size) {}
  int fd_;
  uint8_t* base_;
  uint64_t size_;
};

// Physical memory of this machine in bytes (0 if unknown).
uint64_t PhysicalMemoryBytes();

}  // namespace cumulus
