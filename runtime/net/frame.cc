#include "runtime/net/frame.h"

#include "runtime/net/tcp.h"

#include <capnp/serialize.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace cumulus {

namespace {
void PutU32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}
}  // namespace

std::string EncodeFrame(capnp::MessageBuilder& message) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  auto bytes = words.asChars();
  std::string out(kFrameHeaderBytes + bytes.size(), '\0');
  PutU32(out.data(), kFrameMagic);
  PutU32(out.data() + 4, static_cast<uint32_t>(bytes.size()));
  std::memcpy(out.data() + kFrameHeaderBytes, bytes.begin(), bytes.size());
  return out;
}

Result<std::optional<kj::Array<capnp::word>>> FrameDecoder::Next() {
  if (buffered() < kFrameHeaderBytes) return std::optional<kj::Array<capnp::word>>();
  const char* p = buffer_.data() + consumed_;
  if (GetU32(p) != kFrameMagic) {
    return Status::InvalidArgument("not a Cumulus control connection (bad frame magic)");
  }
  uint32_t len = GetU32(p + 4);
  if (len > max_) {
    return Status::InvalidArgument("frame of " + std::to_string(len) + " bytes exceeds the " +
                                   std::to_string(max_) + "-byte limit");
  }
  if (len % sizeof(capnp::word) != 0) {
    return Status::InvalidArgument("frame length " + std::to_string(len) + " is not whole words");
  }
  if (buffered() < kFrameHeaderBytes + len) return std::optional<kj::Array<capnp::word>>();
  auto words = kj::heapArray<capnp::word>(len / sizeof(capnp::word));
  std::memcpy(words.begin(), p + kFrameHeaderBytes, len);
  consumed_ += kFrameHeaderBytes + len;
  if (consumed_ > 65536 && consumed_ * 2 > buffer_.size()) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  return std::optional<kj::Array<capnp::word>>(std::move(words));
}

size_t FrameDecoder::Take(char* out, size_t n) {
  size_t k = std::min(n, buffered());
  std::memcpy(out, buffer_.data() + consumed_, k);
  consumed_ += k;
  return k;
}

Status WriteFrame(int fd, capnp::MessageBuilder& message, TimePoint deadline) {
  std::string frame = EncodeFrame(message);
  Duration left = deadline - SystemClock::Get().Now();
  return SendAll(fd, reinterpret_cast<const uint8_t*>(frame.data()), frame.size(),
                 std::max<Duration>(left, std::chrono::milliseconds(1)));
}

Result<kj::Array<capnp::word>> ReadFrame(int fd, FrameDecoder& decoder, TimePoint deadline) {
  while (true) {
    CUMULUS_ASSIGN_OR_RETURN(auto frame, decoder.Next());
    if (frame) return std::move(*frame);
    pollfd p{fd, POLLIN, 0};
    int ms = MillisUntil(deadline);
    int r = ms == 0 ? 0 : poll(&p, 1, ms);
    if (r == 0) return Status::TimedOut("no reply before the deadline");
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::Unavailable(std::string("poll: ") + std::strerror(errno));
    }
    char buf[65536];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0) return Status::Unavailable("the peer closed the connection");
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return Status::Unavailable(std::string("connection lost: ") + std::strerror(errno));
    }
    decoder.Append(buf, static_cast<size_t>(n));
  }
}

}  // namespace cumulus
