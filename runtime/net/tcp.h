// TCP endpoints for the control plane: parsing HOST:PORT, listening on an explicit address, and
// connecting with a deadline.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cumulus/status.h"
#include "runtime/base/clock.h"

namespace cumulus {

struct HostPort {
  std::string host;
  uint16_t port = 0;
  std::string ToString() const { return host + ":" + std::to_string(port); }
};

// "127.0.0.1:6380", "localhost:6380". InvalidArgument naming the text if malformed.
Result<HostPort> ParseHostPort(std::string_view text);

// The host others use to reach a port bound on `bind_host`: this machine's name for a wildcard
// ("0.0.0.0", "::", "[::]": every interface, which no peer can dial), `bind_host` itself
// otherwise. What the head and nodes publish.
std::string ReachableHost(const std::string& bind_host);

// Listens on bind_host:port (port 0 picks a free one; *actual_port gets it). Errors name the
// address: "port 6380 on 127.0.0.1 is already in use".
Result<int> ListenTcp(const std::string& bind_host, uint16_t port, uint16_t* actual_port);

// Connects within `timeout`. Unavailable (refused, unreachable) or TimedOut, naming the address.
Result<int> ConnectTcp(const HostPort& address, Duration timeout);
// Starts connecting to `address` without waiting: a non-blocking socket whose connection is in
// progress (or made). Unavailable if it failed at once.
Result<int> StartConnectTcp(const HostPort& address);

// Milliseconds from now until `deadline`, at least 0 (for poll).
int MillisUntil(TimePoint deadline);

// Sends / receives exactly `n` bytes on a (non-blocking) socket, waiting at most `idle` for each
// bit of progress: TimedOut when the peer stalls, Unavailable when the connection breaks.
Status SendAll(int fd, const uint8_t* data, uint64_t n, Duration idle);
// RecvAll receives bytes [`have`, `n`) of `out` (the first `have` arrived some other way, e.g. in
// the same read as a frame); errors count progress against all `n` bytes.
Status RecvAll(int fd, uint8_t* out, uint64_t n, Duration idle, uint64_t have = 0);

// The numeric address of the local end of a connected socket ("127.0.0.1").
std::string LocalAddressOf(int fd);
// The numeric address of the remote end of a connected socket.
std::string PeerAddressOf(int fd);

}  // namespace cumulus
