// The one header a Cumulus program includes.
#pragma once

#include "cumulus/api.h"
#include "cumulus/ids.h"
#include "cumulus/remote.h"
#include "cumulus/serialization.h"
#include "cumulus/status.h"
