#include "runtime/core/caller_connection.h"

#include <capnp/serialize.h>
#include <unistd.h>

#include "runtime/core/messages.h"
#include "runtime/net/first_segment.h"
#include "runtime/proto/core.capnp.h"

namespace cumulus {

CallerConnection::CallerConnection(int fd) : fd_(fd), decoder_(kMaxCoreFrameBytes) {}

CallerConnection::CallerConnection(CallerConnection&& other) noexcept
    : fd_(other.fd_), decoder_(std::move(other.decoder_)), acknowledged_(other.acknowledged_) {
  other.fd_ = -1;
}

CallerConnection::~CallerConnection() {
  if (fd_ >= 0) close(fd_);
}

Result<CallerConnection> CallerConnection::Open(const HostPort& at, const std::string& token,
                                                TimePoint deadline) {
  Duration left = deadline - SystemClock::Get().Now();
  if (left <= Duration::zero()) return Status::TimedOut("no time left to reach " + at.ToString());
  CUMULUS_ASSIGN_OR_RETURN(int fd, ConnectTcp(at, left));
  CallerConnection c(fd);
  capnp::MallocMessageBuilder hello(kFrameFirstSegmentWords);
  auto h = hello.initRoot<proto::CoreMessage>().initHello();
  h.setPid(getpid());
  auto caller = h.initCaller();
  caller.setToken(token);
  caller.setOutside(true);
  CUMULUS_RETURN_IF_ERROR(c.Send(hello, deadline));
  return c;
}

Status CallerConnection::Send(capnp::MessageBuilder& message, TimePoint deadline) {
  return WriteFrame(fd_, message, deadline);
}

Status CallerConnection::SendEncoded(const std::string& frame) {
  return SendAll(fd_, reinterpret_cast<const uint8_t*>(frame.data()), frame.size(),
                 std::chrono::seconds(10));
}

Result<kj::Array<capnp::word>> CallerConnection::Read(TimePoint deadline, bool* was_ack) {
  CUMULUS_ASSIGN_OR_RETURN(kj::Array<capnp::word> words, ReadFrame(fd_, decoder_, deadline));
  capnp::FlatArrayMessageReader reader(words, CoreReaderOptions(words.size() * 8));
  auto msg = reader.getRoot<proto::CoreMessage>();
  *was_ack = msg.isHelloAck();
  if (*was_ack) {
    if (msg.getHelloAck().getCode() != 0) {
      // The head's words for the same refusal (runtime/head/head_requests.cc).
      return Status::Unauthenticated(std::string(msg.getHelloAck().getMessage()) +
                                     ": pass the head's token with --token-file or CUMULUS_TOKEN");
    }
    acknowledged_ = true;
  }
  if (msg.isRefused()) {
    auto r = msg.getRefused();
    return Status(r.getCode() == 0 ? StatusCode::kInternal : static_cast<StatusCode>(r.getCode()),
                  r.getMessage());
  }
  return words;
}

Result<kj::Array<capnp::word>> CallerConnection::Next(TimePoint deadline) {
  while (true) {
    bool ack = false;
    CUMULUS_ASSIGN_OR_RETURN(kj::Array<capnp::word> words, Read(deadline, &ack));
    if (!ack) return words;
  }
}

Status CallerConnection::Acknowledged(TimePoint deadline) {
  while (!acknowledged_) {
    bool ack = false;
    CUMULUS_RETURN_IF_ERROR(Read(deadline, &ack).status());
  }
  return Status();
}

}  // namespace cumulus
