// HeadLink: a node thread's client of the head, connected when first needed and again after an
// error (NotFound is an answer, not an error). After a failed connect it waits a second before
// trying again, so that a node whose head is away does not spend its time connecting.
//
// Calls block the calling thread (up to the request timeout). Not thread-safe: the task router
// owns one and uses it only on its head-requests thread (a SerialExecutor), never on its event
// loop; the answers go back to the loop with EventLoop::Post.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "runtime/base/clock.h"
#include "runtime/head/control_client.h"

namespace cumulus {

class HeadLink {
 public:
  HeadLink(HostPort head, std::string token, std::string role, Clock& clock)
      : head_(std::move(head)), token_(std::move(token)), role_(std::move(role)), clock_(clock) {}

  // Runs `call(client)`: Unavailable if the head cannot be reached now.
  template <typename F>
  auto Call(F call) -> decltype(call(std::declval<ControlClient&>())) {
    Status st = Connect();
    if (!st.ok()) return st;
    auto r = call(*client_);
    // A call of several requests may answer OK with one of them failed (a lookup that returns
    // what it found): a connection left out of step is dropped whatever the answer says.
    if ((!r.ok() && r.status().code() != StatusCode::kNotFound) || client_->broken())
      client_.reset();
    return r;
  }

 private:
  Status Connect() {
    if (client_) return Status();
    TimePoint now = clock_.Now();
    if (now < retry_at_) return Status::Unavailable("the head cannot be reached (retrying)");
    ControlClientOptions o;
    o.role = role_;
    o.request_timeout = std::chrono::seconds(10);
    auto connected = ControlClient::Connect(head_, token_, o);
    if (!connected.ok()) {
      retry_at_ = now + std::chrono::seconds(1);
      return connected.status();
    }
    client_ = std::move(*connected);
    return Status();
  }

  HostPort head_;
  std::string token_;
  std::string role_;
  Clock& clock_;
  std::unique_ptr<ControlClient> client_;
  TimePoint retry_at_{};
};

}  // namespace cumulus
