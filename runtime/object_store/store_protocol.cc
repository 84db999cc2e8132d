#include "runtime/object_store/store_protocol.h"

#include <capnp/serialize.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cumulus::store_protocol {

Status Send(int sock, capnp::MessageBuilder& message, int pass_fd) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  kj::ArrayPtr<const char> bytes = words.asChars();
  if (bytes.size() > kMaxMessageBytes) {
    return Status::InvalidArgument("object store message of " + std::to_string(bytes.size()) +
                                   " bytes exceeds the " + std::to_string(kMaxMessageBytes) +
                                   "-byte limit");
  }
  iovec iov{const_cast<char*>(bytes.begin()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (pass_fd >= 0) {
    std::memset(control, 0, sizeof(control));
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
  }
  while (true) {
    ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n >= 0) return Status();
    if (errno == EINTR) continue;
    return Status::Unavailable(std::string("sending to the object store socket: ") +
                               std::strerror(errno));
  }
}

Result<Packet> Receive(int sock, kj::ArrayPtr<capnp::word> buffer) {
  iovec iov{buffer.begin(), buffer.size() * sizeof(capnp::word)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return Status::TimedOut("the object store did not answer in time");
    }
    return Status::Unavailable(std::string("reading from the object store socket: ") +
                               std::strerror(errno));
  }
  Packet p;
  p.bytes = static_cast<size_t>(n);
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      std::memcpy(&p.fd, CMSG_DATA(c), sizeof(int));
    }
  }
  if (msg.msg_flags & MSG_TRUNC) {
    if (p.fd >= 0) close(p.fd);
    return Status::InvalidArgument("object store message longer than " +
                                   std::to_string(kMaxMessageBytes) + " bytes");
  }
  return p;
}

Result<ObjectId> ParseObjectId(capnp::Data::Reader data) {
  if (data.size() != ObjectId::kSize) {
    return Status::InvalidArgument("object id must be " + std::to_string(ObjectId::kSize) +
                                   " bytes, got " + std::to_string(data.size()));
  }
  return ObjectId::FromBinary(
      std::string_view(reinterpret_cast<const char*>(data.begin()), data.size()));
}

}  // namespace cumulus::store_protocol
