// The one header a Cumulus program includes.
#pragma once

#include "cumulus/api.h"
#include "cumulus/ids.h"
#include "cumulus/remote.h"
#include "cumulus/serialization.h"
#include "cumulus/status.h"

namespace cumulus {
// The version of the Cumulus library this program runs with, e.g. "0.1.0".
const char* Version();
}  // namespace cumulus
