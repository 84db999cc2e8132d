#include "runtime/object_store/shared_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

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

SharedRegion::~SharedRegion() {
  munmap(base_, size_);
  close(fd_);
}

uint64_t PhysicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  return pages > 0 ? static_cast<uint64_t>(pages) * PageSize() : 0;
}

}  // namespace cumulus
