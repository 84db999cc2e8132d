#include "runtime/object_store/shared_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace cumulus {

namespace {
std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }
uint64_t PageSize() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }
}  // namespace

Result<std::unique_ptr<SharedRegion>> SharedRegion::Create(uint64_t size, const std::string& name,
                                                           bool prefault) {
  if (size == 0) return Status::InvalidArgument("shared-memory region size must be positive");
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) return Status::Unavailable(Errno("memfd_create for the object store"));
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    Status st = Status::ResourceExhausted(Errno("sizing the object store's shared memory") +
                                          " (asked for " + std::to_string(size) + " bytes)");
    close(fd);
    return st;
  }
  int flags = MAP_SHARED | (prefault ? MAP_POPULATE : 0);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, fd, 0);
  if (p == MAP_FAILED) {
    Status st = Status::ResourceExhausted(Errno("mapping the object store's shared memory"));
    close(fd);
    return st;
  }
  return std::unique_ptr<SharedRegion>(new SharedRegion(fd, static_cast<uint8_t*>(p), size));
}

Result<std::unique_ptr<SharedRegion>> SharedRegion::MapReadOnly(int fd, uint64_t size) {
  void* p = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    Status st = Status::Unavailable(Errno("mapping the object store's shared memory read-only"));
    close(fd);
    return st;
  }
  return std::unique_ptr<SharedRegion>(new SharedRegion(fd, static_cast<uint8_t*>(p), size));
}

Status SharedRegion::Release(uint64_t offset, uint64_t size) {
  uint64_t page = PageSize();
  uint64_t begin = (offset + page - 1) / page * page;
  uint64_t end = std::min<uint64_t>((offset + size) / page * page, size_);
  if (end <= begin) return Status();
  if (fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(begin),
                static_cast<off_t>(end - begin)) == 0) {
    return Status();
  }
  if (madvise(base_ + begin, end - begin, MADV_REMOVE) == 0) return Status();
  return Status::Internal(Errno("returning free object-store memory to the system"));
}

uint64_t SharedRegion::ResidentBytes() const {
  struct stat st {};
  if (fstat(fd_, &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

SharedRegion::~SharedRegion() {
  munmap(base_, size_);
  close(fd_);
}

uint64_t PhysicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  return pages > 0 ? static_cast<uint64_t>(pages) * PageSize() : 0;
}

}  // namespace cumulus
