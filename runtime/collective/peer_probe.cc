#include "runtime/collective/peer_probe.h"

namespace cumulus {

template <typename Call>
auto PeerProbe::WithHead(Call call) -> decltype(call(std::declval<ControlClient&>())) {
  if (!client_) {
    ControlClientOptions co;
    co.role = "collective";
    co.request_timeout = std::chrono::seconds(2);
    auto c = ControlClient::Connect(head_, token_, co);
    if (!c.ok()) return c.status();
    client_ = std::move(*c);
  }
  auto r = call(*client_);
  if (!r.ok()) client_.reset();
  return r;
}

void PeerProbe::Publish(const std::string& key, const std::string& value) {
  (void)WithHead([&](ControlClient& head) { return head.KvPut(ns_, prefix_ + key, value); });
}

std::string PeerProbe::Probe(uint64_t seq, const std::string& desc) {
  std::string mine = std::to_string(seq) + " " + desc;
  Publish("inflight/rank_" + std::to_string(rank_), mine);
  auto page = WithHead([&](ControlClient& head) { return head.KvList(ns_, prefix_); });
  if (!page.ok()) return "";
  std::string differ, broken;
  const std::string me = "rank_" + std::to_string(rank_);
  for (auto& [key, value] : page->entries) {
    std::string k = key.substr(prefix_.size());
    auto slash = k.find('/');
    if (slash == std::string::npos || k.substr(slash + 1) == me) continue;
    std::string kind = k.substr(0, slash), who = "rank " + k.substr(slash + 6);
    if (kind == "inflight") {
      auto space = value.find(' ');
      if (space == std::string::npos || value.substr(0, space) != std::to_string(seq) ||
          value == mine) {
        continue;
      }
      differ += "; " + who + " issued " + value.substr(space + 1) + " as operation #" +
                std::to_string(seq);
    } else if ((kind == "failed" || kind == "gaveup") && broken.empty()) {
      broken = who + (kind == "failed" ? " failed in operation #" + value
                                       : " gave up on the group: " + value);
    }
  }
  if (!differ.empty()) {
    return "ranks issued different operations (every rank must issue the same collective "
           "operations in the same order): this rank issued " +
           desc + " as operation #" + std::to_string(seq) + differ;
  }
  return broken;
}

}  // namespace cumulus
