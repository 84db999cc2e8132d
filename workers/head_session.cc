#include "workers/head_session.h"

#include <algorithm>
#include <thread>

#include "runtime/base/logging.h"

namespace cumulus {

Result<std::shared_ptr<ControlClient>> HeadSession::Client(bool connect, Duration limit) {
  std::lock_guard<std::mutex> lock(mu_);
  if (client_) return client_;
  if (!connect) return Status::Unavailable("not connected to the head");
  ControlClientOptions o;
  o.role = role_;
  // One try waits no longer than the whole call may (and a connection no longer than is left).
  o.connect_timeout =
      std::max<Duration>(std::min({o.connect_timeout, wait_, limit}), std::chrono::milliseconds(1));
  o.request_timeout = std::min<Duration>(std::chrono::seconds(35), wait_);
  CUMULUS_ASSIGN_OR_RETURN(auto client, ControlClient::Connect(head_, token_, o));
  client_ = std::move(client);
  return client_;
}

void HeadSession::Drop(const std::shared_ptr<ControlClient>& client) {
  std::lock_guard<std::mutex> lock(mu_);
  if (client_ == client) client_.reset();
}

std::string HeadSession::WaitText() const {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wait_).count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

bool HeadSession::Retry(const Status& failed, TimePoint deadline, Duration* pause, bool* told) {
  TimePoint now = clock_.Now();
  if (stopping_ || now >= deadline) return false;
  if (!*told) {
    CUMULUS_LOG(WARN) << "cumulus: the head cannot be reached (" << failed.message()
                      << "); waiting for it to come back";
    *told = true;
  }
  // Backoff between attempts to reach a head that is restarting (no event tells when it is up).
  // The last try is made at the deadline.
  std::this_thread::sleep_for(std::min<Duration>(*pause, deadline - now));
  *pause = std::min<Duration>(*pause * 2, std::chrono::seconds(1));
  return true;
}

}  // namespace cumulus
