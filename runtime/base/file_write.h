// WriteFileAtomically: a file appears whole or not at all. The bytes go to a temporary file next
// to `path` (PATH.XXXXXX.tmp), which is renamed over `path` once written and closed; on every
// failure (cannot create, short write, disk full, file size limit, rename) the temporary file is
// removed and the error returned (ResourceExhausted, naming the path and the reason).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "cumulus/status.h"

namespace cumulus {

Status WriteFileAtomically(const std::string& path, const void* data, size_t size, mode_t mode);

}  // namespace cumulus
