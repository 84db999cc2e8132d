// Status and Result<T>: how every fallible Cumulus call reports failure.
//
// A Status is OK or one of a small, closed set of codes with a message that says what failed and
// what to do. OK carries no allocation. Detail goes in the message, never in new codes.
#pragma once

#include <cassert>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace cumulus {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,    // the caller passed something malformed or impossible
  kNotFound = 2,           // the named thing does not exist
  kAlreadyExists = 3,      // creating something whose id is taken
  kTimedOut = 4,           // a bounded wait ran out
  kUnavailable = 5,        // a peer, disk or service cannot be reached now; retrying may help
  kCancelled = 6,          // the operation was cancelled
  kActorDied = 7,          // the actor behind a handle is dead
  kObjectLost = 8,         // an object existed but its data cannot be recovered
  kResourceExhausted = 9,  // memory, disk or another capacity is used up
  kInfeasible = 10,        // no node could ever satisfy the request
  kInternal = 11,          // a bug in Cumulus: please report it
  kUnauthenticated = 12,   // credentials are missing or wrong: nothing was done
  kTaskFailed = 13,        // remote code threw: the message names the function, node and what()
};

// "InvalidArgument", "NotFound", ...
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) {
    return {StatusCode::kAlreadyExists, std::move(msg)};
  }
  static Status TimedOut(std::string msg) { return {StatusCode::kTimedOut, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status Cancelled(std::string msg) { return {StatusCode::kCancelled, std::move(msg)}; }
  static Status ActorDied(std::string msg) { return {StatusCode::kActorDied, std::move(msg)}; }
  static Status ObjectLost(std::string msg) { return {StatusCode::kObjectLost, std::move(msg)}; }
  static Status ResourceExhausted(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg)};
  }
  static Status Infeasible(std::string msg) { return {StatusCode::kInfeasible, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
  static Status Unauthenticated(std::string msg) {
    return {StatusCode::kUnauthenticated, std::move(msg)};
  }
  static Status TaskFailed(std::string msg) { return {StatusCode::kTaskFailed, std::move(msg)}; }

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  // Empty for OK.
  const std::string& message() const;
  // "NotFound: object 3f2a... does not exist"; "OK" for OK.
  std::string ToString() const;

  // Returns a copy with `context + ": "` put before the message (no-op on OK).
  Status WithContext(std::string_view context) const;

  bool operator==(const Status& other) const {
    return code() == other.code() && message() == other.message();
  }
  bool operator!=(const Status& other) const { return !(*this == other); }

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const State> state_;  // null means OK; immutable, so sharing is safe
};

std::ostream& operator<<(std::ostream& os, const Status& s);

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "Result<T> built from an OK Status has no value");
    if (std::get<Status>(v_).ok())
      v_ = Status::Internal("Result built from OK status without a value");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  // REQUIRES: ok().
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace cumulus

// Returns early from the enclosing function if `expr` (a Status) is not OK.
#define CUMULUS_RETURN_IF_ERROR(expr)          \
  do {                                         \
    ::cumulus::Status _cumulus_st = (expr);    \
    if (!_cumulus_st.ok()) return _cumulus_st; \
  } while (0)

#define CUMULUS_CONCAT_INNER(a, b) a##b
#define CUMULUS_CONCAT(a, b) CUMULUS_CONCAT_INNER(a, b)
// `CUMULUS_ASSIGN_OR_RETURN(auto x, MakeX());` binds the value or returns the Status.
#define CUMULUS_ASSIGN_OR_RETURN(lhs, expr) \
  CUMULUS_ASSIGN_OR_RETURN_IMPL(CUMULUS_CONCAT(_cumulus_res_, __LINE__), lhs, expr)
#define CUMULUS_ASSIGN_OR_RETURN_IMPL(res, lhs, expr) \
  auto res = (expr);                                  \
  if (!res.ok()) return res.status();                 \
  lhs = std::move(res).value()
