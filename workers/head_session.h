// HeadSession: a driver's or worker's client of the head, shared by its threads. It connects on
// first use, and a call that finds the head unreachable (it is restarting) is tried again on a new
// connection, with backoff, for up to `wait` before it fails naming the head.
//
// Thread safety: every method may be called from any thread. Calls block: never make one on an
// event-loop thread (post it to a SerialExecutor instead).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/head/control_client.h"

namespace cumulus {

class HeadSession {
 public:
  static constexpr Duration kDefaultWait = std::chrono::seconds(60);  // a head restart, waited out

  HeadSession(HostPort head, std::string token, std::string role, Clock& clock = SystemClock::Get())
      : head_(std::move(head)), token_(std::move(token)), role_(std::move(role)), clock_(clock) {}

  // From now on calls do not wait for an unreachable head (the process is shutting down).
  void StopWaiting() { stopping_ = true; }

  // Runs `call` with the head, trying again while it is unreachable, for up to `wait`.
  template <typename Fn>
  auto Call(Fn call, Duration wait = kDefaultWait)
      -> decltype(call(std::declval<ControlClient&>()));

  // One try, and one more on a new connection if the first found it broken; never waits for a
  // head that is down. With `connect` false, only on the connection there is (Unavailable if
  // none): for shutting down, which does not wait for a connect either.
  template <typename Fn>
  auto TryCall(Fn call, bool connect = true) -> decltype(call(std::declval<ControlClient&>()));

  const HostPort& head() const { return head_; }

 private:
  // The connection, made first if there is none and `connect`.
  Result<std::shared_ptr<ControlClient>> Client(bool connect = true);
  // The call found `client` broken: the next one connects again.
  void Drop(const std::shared_ptr<ControlClient>& client);
  // Whether to try again after `failed`; logs the first wait. False past `deadline`.
  bool Retry(const Status& failed, TimePoint deadline, Duration* pause, bool* told);

  static const Status& StatusOf(const Status& s) { return s; }
  template <typename T>
  static Status StatusOf(const Result<T>& r) {
    return r.status();
  }

  const HostPort head_;
  const std::string token_;
  const std::string role_;
  Clock& clock_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::shared_ptr<ControlClient> client_;  // guarded by mu_
};

template <typename Fn>
auto HeadSession::Call(Fn call, Duration wait) -> decltype(call(std::declval<ControlClient&>())) {
  TimePoint deadline = clock_.Now() + wait;
  Duration pause = std::chrono::milliseconds(100);
  bool told = false;
  while (true) {
    Status failed;
    auto client = Client();
    if (client.ok()) {
      auto r = call(**client);
      failed = StatusOf(r);
      if (failed.code() != StatusCode::kUnavailable) return r;
      Drop(*client);
    } else {
      failed = client.status();
      if (failed.code() != StatusCode::kUnavailable && failed.code() != StatusCode::kTimedOut) {
        return failed;
      }
    }
    if (!Retry(failed, deadline, &pause, &told)) {
      return Status::Unavailable(
          "the head at " + head_.ToString() + " could not be reached for " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(wait).count()) +
          " s: " + failed.message());
    }
  }
}

template <typename Fn>
auto HeadSession::TryCall(Fn call, bool connect) -> decltype(call(std::declval<ControlClient&>())) {
  Status failed;
  for (int attempt = 0; attempt < (connect ? 2 : 1); ++attempt) {
    auto client = Client(connect);
    if (!client.ok()) return client.status();
    auto r = call(**client);
    failed = StatusOf(r);
    if (failed.code() != StatusCode::kUnavailable) return r;
    Drop(*client);
  }
  return failed;
}

}  // namespace cumulus
