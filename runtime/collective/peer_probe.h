// PeerProbe: how the watchdog of a collective group learns, through the head's store, what the
// other ranks are doing. A rank whose collective has run for a while publishes it
// ("inflight/rank_R": "<operation number> <description>") and reads, in one listing of the
// group's entries, what the others published: a different operation under the same number, a
// failure ("failed/rank_R") or a give-up ("gaveup/rank_R") means its operation cannot complete.
//
// It has its own connection to the head (the group's worker thread uses another), dropped after
// an error and made again on the next call. Not thread-safe: the watchdog's thread owns it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/head/control_client.h"
#include "runtime/net/tcp.h"

namespace cumulus {

class PeerProbe {
 public:
  // Entries live in namespace `ns` under `prefix` (the group and generation).
  PeerProbe(HostPort head, std::string token, std::string ns, std::string prefix, int rank)
      : head_(std::move(head)),
        token_(std::move(token)),
        ns_(std::move(ns)),
        prefix_(std::move(prefix)),
        rank_(rank) {}

  // Publishes `key` (under the group's prefix); failures are ignored (the probe is advisory).
  void Publish(const std::string& key, const std::string& value);
  // Publishes that this rank runs operation `seq` (`desc`) and reads what the others published:
  // why the operation cannot complete, or "" if nothing says so.
  std::string Probe(uint64_t seq, const std::string& desc);

 private:
  template <typename Call>
  auto WithHead(Call call) -> decltype(call(std::declval<ControlClient&>()));

  HostPort head_;
  std::string token_, ns_, prefix_;
  int rank_;
  std::unique_ptr<ControlClient> client_;
};

}  // namespace cumulus
