// How the job and state commands reach the head: see head_connection.h.
#include "runtime/cli/head_connection.h"

#include <chrono>
#include <cstdio>

#include "runtime/cli/local_state.h"
#include "runtime/core/messages.h"

namespace cumulus::cli {

int Fail(const Status& st) {
  std::fprintf(stderr, "cumulus: %s\n", st.ToString().c_str());
  return 1;
}

Result<std::unique_ptr<ControlClient>> ConnectHead(const Flags& flags) {
  CUMULUS_ASSIGN_OR_RETURN(HostPort address, ResolveAddress(flags.Get("address")));
  CUMULUS_ASSIGN_OR_RETURN(std::string token, ResolveToken(flags.Get("token-file")));
  ControlClientOptions o;
  o.role = "client";
  o.request_timeout = std::chrono::seconds(30);
  return ControlClient::Connect(address, token, o);
}

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status ForEachKv(ControlClient& head, const std::string& ns, const std::string& prefix,
                 const std::function<void(const std::string&, const std::string&)>& fn) {
  std::string after;
  while (true) {
    CUMULUS_ASSIGN_OR_RETURN(auto page, head.KvList(ns, prefix, after, 1000));
    for (auto& [k, v] : page.entries) fn(k, v);
    if (!page.more || page.entries.empty()) return Status();
    after = page.entries.back().first;
  }
}

Result<std::map<std::string, ActorNameRecord>> NamedActorRecords(ControlClient& head) {
  std::map<std::string, ActorNameRecord> out;
  std::map<std::string, std::string> addresses;
  CUMULUS_RETURN_IF_ERROR(
      ForEachKv(head, kActorsNamespace, "", [&](const std::string& k, const std::string& v) {
        size_t slash = k.rfind("/address");
        if (slash != std::string::npos && slash + 8 == k.size()) {
          addresses[k.substr(0, slash)] = v;
          return;
        }
        auto r = DecodeRecord<ActorNameRecord>(v);
        if (r.ok() && !r->actor_id.empty()) out[k] = *r;
      }));
  for (auto& [name, r] : out) {
    if (r.address.empty() && addresses.count(name)) r.address = addresses[name];
  }
  return out;
}

}  // namespace cumulus::cli
