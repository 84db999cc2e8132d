// How the job and state commands reach the head: a client connection from --address and
// --token-file, every entry of a namespace page by page, the clock the head's records are stamped
// with, and reporting a failed call.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cumulus/status.h"
#include "runtime/cli/flags.h"
#include "runtime/head/control_client.h"

namespace cumulus::cli {

// Prints "cumulus: <status>" to stderr; returns 1.
int Fail(const Status& st);
// Connects as a client to the head that --address (or its fallbacks) names.
Result<std::unique_ptr<ControlClient>> ConnectHead(const Flags& flags);
// Now, in microseconds since the epoch, by the system clock.
int64_t NowMicros();
// Every entry of a namespace under `prefix`, page by page.
Status ForEachKv(ControlClient& head, const std::string& ns, const std::string& prefix,
                 const std::function<void(const std::string&, const std::string&)>& fn);

}  // namespace cumulus::cli
