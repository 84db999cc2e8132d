// Frames on a control-plane TCP connection: an 8-byte header (magic "CMLS", little-endian u32
// length) and one Cap'n Proto message of that many bytes. The magic rejects stray protocols (an
// HTTP request, a port scanner) at their first bytes; the length is bounded before any allocation.
#pragma once

#include <capnp/message.h>
#include <kj/array.h>

#include <cstdint>
#include <optional>
#include <string>

#include "cumulus/status.h"
#include "runtime/base/clock.h"

namespace cumulus {

constexpr uint32_t kFrameMagic = 0x534c4d43;  // "CMLS" in memory order
constexpr size_t kFrameHeaderBytes = 8;

// The header and message of `message`, ready to write.
std::string EncodeFrame(capnp::MessageBuilder& message);

// Splits a byte stream into frames. Not thread-safe.
class FrameDecoder {
 public:
  explicit FrameDecoder(uint32_t max_frame_bytes) : max_(max_frame_bytes) {}
  void set_max_frame_bytes(uint32_t max) { max_ = max; }
  void Append(const char* data, size_t n) { buffer_.append(data, n); }
  // The next complete frame's message words; nullopt if more bytes are needed; InvalidArgument
  // if the stream is not Cumulus frames (bad magic, length over the limit or not whole words).
  Result<std::optional<kj::Array<capnp::word>>> Next();
  size_t buffered() const { return buffer_.size() - consumed_; }
  // Moves up to `n` buffered bytes that follow the last frame into `out` (raw data that came in
  // the same read as a frame); returns how many.
  size_t Take(char* out, size_t n);

 private:
  uint32_t max_;
  std::string buffer_;
  size_t consumed_ = 0;
};

// Blocking helpers for clients: write a whole frame / read the next one before `deadline`.
Status WriteFrame(int fd, capnp::MessageBuilder& message, TimePoint deadline);
Result<kj::Array<capnp::word>> ReadFrame(int fd, FrameDecoder& decoder, TimePoint deadline);

}  // namespace cumulus
