// Requests to stop one trial of a running experiment from outside its driver (`cumulus stop
// trial EXPERIMENT/TRIAL`). The CLI writes a request into the head's control store; the
// experiment's tuner reads its experiment's requests at least every kStopPollInterval (and once
// when it starts or is restored), ends each named trial that still runs or waits (its actors
// killed, its resources freed), journals the end as STOPPED "stopped by user", and deletes the
// request. A request for a trial that has already ended is deleted without effect.
//
// Keys: kStopRequestsNamespace  EXPERIMENT/TRIAL (t0007)  ->  "MICROS WHO" (when, who asked)
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cumulus/status.h"
#include "runtime/head/control_client.h"

namespace cumulus::tune {

constexpr const char* kStopRequestsNamespace = "tune_stop";
// The reason journaled for a trial stopped by a request (`cumulus trials` shows it).
constexpr const char* kStoppedByUserReason = "stopped by user";
// How often a running tuner looks for requests: a stop takes effect at most this long (plus the
// time to kill the trial's actors) after it was written.
constexpr std::chrono::milliseconds kStopPollInterval{250};

struct StopRequest {
  uint64_t trial = 0;
  int64_t micros = 0;  // when it was asked (system clock)
  std::string who;     // user@host of the CLI that asked
};

// "t0007", "t7" or "7" -> 7. InvalidArgument naming the text otherwise (0 is no trial).
Result<uint64_t> ParseTrialId(std::string_view text);

// Writes the request (overwriting an earlier one for the same trial).
Status RequestStop(ControlClient& head, const std::string& experiment, uint64_t trial,
                   const std::string& who);
// The requests waiting for `experiment`, in trial order. Malformed values count as asked now.
Result<std::vector<StopRequest>> PendingStops(ControlClient& head, const std::string& experiment);
// Deletes the request for `trial` (done, or nothing to do).
Status ForgetStop(ControlClient& head, const std::string& experiment, uint64_t trial);

}  // namespace cumulus::tune
