#include "runtime/tune/stop_requests.h"

#include <chrono>

#include "runtime/tune/experiment_state.h"

namespace cumulus::tune {

Result<uint64_t> ParseTrialId(std::string_view text) {
  std::string_view digits = text;
  if (!digits.empty() && digits[0] == 't') digits.remove_prefix(1);
  uint64_t id = 0;
  bool ok = !digits.empty() && digits.size() <= 12;
  for (char c : digits) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) id = id * 10 + static_cast<uint64_t>(c - '0');
  }
  if (!ok || id == 0) {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a trial id (trials are named t0001, t0002, ...)");
  }
  return id;
}

Status RequestStop(ControlClient& head, const std::string& experiment, uint64_t trial,
                   const std::string& who) {
  int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  auto put = head.KvPut(kStopRequestsNamespace, experiment + "/" + TrialName(trial),
                        std::to_string(now) + " " + who);
  return put.ok() ? Status::OK() : put.status();
}

Result<std::vector<StopRequest>> PendingStops(ControlClient& head, const std::string& experiment) {
  std::vector<StopRequest> out;
  std::string after;
  while (true) {
    CUMULUS_ASSIGN_OR_RETURN(auto page,
                             head.KvList(kStopRequestsNamespace, experiment + "/", after));
    for (auto& [key, value] : page.entries) {
      after = key;
      auto id = ParseTrialId(std::string_view(key).substr(experiment.size() + 1));
      if (!id.ok()) continue;  // not a key this module writes
      StopRequest r;
      r.trial = *id;
      size_t space = value.find(' ');
      r.micros = std::atoll(value.substr(0, space).c_str());
      if (space != std::string::npos) {
        // Shown and journaled as it is read: printable characters only, at most 128 of them (a
        // value written by something other than the CLI may hold escapes or newlines).
        for (char c : value.substr(space + 1)) {
          if (r.who.size() >= 128) break;
          r.who += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
        }
      }
      out.push_back(std::move(r));
    }
    if (!page.more || page.entries.empty()) break;
  }
  return out;
}

Status ForgetStop(ControlClient& head, const std::string& experiment, uint64_t trial) {
  auto gone = head.KvDelete(kStopRequestsNamespace, experiment + "/" + TrialName(trial));
  return gone.ok() ? Status::OK() : gone.status();
}

}  // namespace cumulus::tune
