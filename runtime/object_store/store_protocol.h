// Framing for the local object-store protocol (runtime/proto/store.capnp): one Cap'n Proto message
// per SOCK_SEQPACKET packet, with an optional file descriptor passed alongside (SCM_RIGHTS).
#pragma once

#include <capnp/message.h>
#include <kj/array.h>

#include <cstddef>
#include <string>

#include "cumulus/ids.h"
#include "cumulus/status.h"

namespace cumulus::store_protocol {

// No request or reply is bigger: object bytes never travel over the socket.
constexpr size_t kMaxMessageBytes = 64 * 1024;

// Sends `message`, with `pass_fd` attached when it is >= 0.
Status Send(int sock, capnp::MessageBuilder& message, int pass_fd = -1);

struct Packet {
  size_t bytes = 0;  // 0: the peer closed the connection
  int fd = -1;       // a descriptor that came with the packet, owned by the caller
};
// Receives one packet into `buffer` (kMaxMessageBytes long). Unavailable on socket errors;
// TimedOut if the socket has a receive timeout and it passed.
Result<Packet> Receive(int sock, kj::ArrayPtr<capnp::word> buffer);

// Reads an object id field; InvalidArgument if it has the wrong length.
Result<ObjectId> ParseObjectId(capnp::Data::Reader data);
inline capnp::Data::Reader IdBytes(const ObjectId& id) {
  return capnp::Data::Reader(id.data(), ObjectId::kSize);
}

}  // namespace cumulus::store_protocol
