// CallerConnection: a connection to a node (or to an actor's worker) from a process outside every
// job (`cumulus list|describe|top|call|timeline`): TCP, then the `caller` hello with the cluster
// token. The node acknowledges the hello, or refuses it (a helloAck with a code, naming the node)
// and closes; Next() skips the acknowledgement and turns a refused hello into Unauthenticated
// ("node X refused the cluster token: pass the head's token with --token-file or CUMULUS_TOKEN"),
// and a refused request (`refused`) into its status. What a caller may send is the node's rule
// (runtime/core/task_router_protocol.cc); the hello says the caller is outside every job (an
// actor's worker frees the stored results it answered it with when it leaves).
//
// Not thread-safe; move-only; closes its socket when destroyed.
#pragma once

#include <capnp/message.h>
#include <kj/array.h>

#include <string>

#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/net/frame.h"
#include "runtime/net/tcp.h"

namespace cumulus {

class CallerConnection {
 public:
  // Connects to `at` and sends the hello; both by `deadline`.
  static Result<CallerConnection> Open(const HostPort& at, const std::string& token,
                                       TimePoint deadline);
  CallerConnection(CallerConnection&& other) noexcept;
  CallerConnection& operator=(CallerConnection&&) = delete;
  CallerConnection(const CallerConnection&) = delete;
  ~CallerConnection();

  Status Send(capnp::MessageBuilder& message, TimePoint deadline);
  // A frame already encoded (EncodeFrame); waits at most 10 s for the socket to take each part.
  Status SendEncoded(const std::string& frame);
  // The next frame other than the hello's acknowledgement. Unauthenticated if the hello was
  // refused; a refused request's own status; TimedOut at `deadline`; Unavailable if the
  // connection closed.
  Result<kj::Array<capnp::word>> Next(TimePoint deadline);
  // Waits for the hello's acknowledgement (the node has read everything sent before it was
  // answered: what was sent right after the hello is in hand before the connection closes).
  Status Acknowledged(TimePoint deadline);

 private:
  explicit CallerConnection(int fd);
  // One frame; sets acknowledged_ on the hello's acknowledgement (Unauthenticated: refused).
  Result<kj::Array<capnp::word>> Read(TimePoint deadline, bool* was_ack);

  int fd_;
  FrameDecoder decoder_;
  bool acknowledged_ = false;
};

}  // namespace cumulus
