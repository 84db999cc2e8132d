// How the job and state commands reach the head: a client connection from --address and
// --token-file, every entry of a namespace page by page, the clock the head's records are stamped
// with, and reporting a failed call.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "cumulus/status.h"
#include "runtime/cli/flags.h"
#include "runtime/core/records.h"
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

// The head's named actors by name, each with its address: its record's, else the NAME/address
// key written once it lives ("" while it has none). Records without an actor id are skipped.
Result<std::map<std::string, ActorNameRecord>> NamedActorRecords(ControlClient& head);

}  // namespace cumulus::cli
