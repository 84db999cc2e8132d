// HeadSession: a driver's or worker's client of the head, shared by its threads. It connects on
// first use, and a call that finds the head unreachable (it is restarting), or that the head does
// not answer in time (it hangs), is tried again on a new connection, with backoff, for up to
// `wait` before it fails (Unavailable) naming the head. No one try takes longer than `wait`.
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

  HeadSession(HostPort head, std::string token, std::string role, Clock& clock = SystemClock::Get(),
              Duration wait = kDefaultWait)
      : head_(std::move(head)),
        token_(std::move(token)),
        role_(std::move(role)),
        clock_(clock),
        wait_(wait) {}

  // From now on calls do not wait for an unreachable head (the process is shutting down).
  void StopWaiting() { stopping_ = true; }

  // Runs `call` with the head, trying again while it is unreachable, for up to `wait`.
  template <typename Fn>
  auto Call(Fn call) -> decltype(call(std::declval<ControlClient&>()));

  // One try, and one more on a new connection if the first found it broken; never waits for a
  // head that is down. With `connect` false, only on the connection there is (Unavailable if
  // none): for shutting down, which does not wait for a connect either.
  template <typename Fn>
  auto TryCall(Fn call, bool connect = true) -> decltype(call(std::declval<ControlClient&>()));

  const HostPort& head() const { return head_; }
  Duration wait() const { return wait_; }

 private:
  // The connection, made first if there is none and `connect` (taking at most `limit`, and 1 ms
  // at least).
  Result<std::shared_ptr<ControlClient>> Client(bool connect = true,
                                                Duration limit = Duration::max());
  // The call found `client` broken: the next one connects again.
  void Drop(const std::shared_ptr<ControlClient>& client);
  // Whether to try again after `failed` (after a pause, at the latest at `deadline`); logs the
  // first wait. False from `deadline` on.
  bool Retry(const Status& failed, TimePoint deadline, Duration* pause, bool* told);
  // Whether `failed`, from a call on `client`, says that the head did not answer (it is down, or
  // it hangs: no reply in time), not what the head answered.
  static bool NoAnswer(const Status& failed, ControlClient& client) {
    return failed.code() == StatusCode::kUnavailable ||
           (failed.code() == StatusCode::kTimedOut && client.broken());
  }
  // "60 s", or "1500 ms" for a wait of no whole seconds.
  std::string WaitText() const;

  static const Status& StatusOf(const Status& s) { return s; }
  template <typename T>
  static Status StatusOf(const Result<T>& r) {
    return r.status();
  }

  const HostPort head_;
  const std::string token_;
  const std::string role_;
  Clock& clock_;
  const Duration wait_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::shared_ptr<ControlClient> client_;  // guarded by mu_
};

template <typename Fn>
auto HeadSession::Call(Fn call) -> decltype(call(std::declval<ControlClient&>())) {
  TimePoint deadline = clock_.Now() + wait_;
  Duration pause = std::chrono::milliseconds(100);
  bool told = false;
  while (true) {
    Status failed;
    auto client = Client(true, deadline - clock_.Now());
    if (client.ok()) {
      auto r = call(**client);
      failed = StatusOf(r);
      if (!NoAnswer(failed, **client)) return r;
      Drop(*client);
    } else {
      failed = client.status();
      if (failed.code() != StatusCode::kUnavailable && failed.code() != StatusCode::kTimedOut) {
        return failed;
      }
    }
    if (!Retry(failed, deadline, &pause, &told)) {
      return Status::Unavailable("the head at " + head_.ToString() + " could not be reached for " +
                                 WaitText() + ": " + failed.message());
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
