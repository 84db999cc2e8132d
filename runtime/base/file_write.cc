#include "runtime/base/file_write.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace cumulus {

Status WriteFileAtomically(const std::string& path, const void* data, size_t size, mode_t mode) {
  std::string name = path + ".XXXXXX.tmp";
  std::vector<char> tmp(name.begin(), name.end());
  tmp.push_back('\0');
  int fd = mkstemps(tmp.data(), 4);
  if (fd < 0) {
    return Status::ResourceExhausted("cannot create a file next to " + path + ": " +
                                     std::strerror(errno));
  }
  auto fail = [&](const char* what, int err) {
    if (fd >= 0) close(fd);
    unlink(tmp.data());
    return Status::ResourceExhausted(std::string("cannot ") + what + " " + path + ": " +
                                     std::strerror(err));
  };
  const char* p = static_cast<const char*>(data);
  size_t left = size;
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write", n < 0 ? errno : ENOSPC);
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (fchmod(fd, mode) != 0) return fail("set the mode of", errno);
  int closed = close(fd);
  fd = -1;
  if (closed != 0) return fail("write", errno);
  if (rename(tmp.data(), path.c_str()) != 0) return fail("rename a file to", errno);
  return Status();
}

}  // namespace cumulus
