// Parsing of values people type on command lines.
#pragma once

#include <cstdint>
#include <string_view>

#include "cumulus/status.h"

namespace cumulus {

// "4096", "64K", "512M", "4G", "1T" (binary units; a trailing "B"/"iB" is allowed: "512MiB").
Result<uint64_t> ParseBytes(std::string_view text);

}  // namespace cumulus
