// A raw CAF request/response between two processes (the CAF anchor of bench_core).
#pragma once

#include "cumulus/status.h"

namespace cumulus::bench {

// Median round trip, in microseconds, of `rounds` blocking requests of an int64 from this process
// to an echo actor in a forked process, through CAF's middleman on loopback. Call it before this
// process starts threads of its own: the child is forked.
Result<double> CafRequestRttMicros(int rounds);

}  // namespace cumulus::bench
