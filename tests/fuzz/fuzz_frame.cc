// FrameDecoder (runtime/net/frame.h) fed arbitrary bytes in arbitrary chunks: it must return whole
// frames of whole words no larger than its limit, or an error, and never read past what it holds.
//
// Input: byte 0 picks the limit, byte 1 seeds the chunk sizes, the rest is the stream.
#include <capnp/message.h>

#include "runtime/net/frame.h"
#include "runtime/proto/core.capnp.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

std::vector<std::string> Seeds() {
  std::vector<std::string> out;
  for (int n : {0, 1, 3}) {
    std::string stream = std::string("\x02\x05", 2);
    for (int i = 0; i < n; ++i) {
      capnp::MallocMessageBuilder m;
      m.initRoot<cumulus::proto::CoreMessage>().setCancelTask(
          capnp::Data::Reader(reinterpret_cast<const uint8_t*>("0123456789abcdef0123"), 20));
      stream += cumulus::EncodeFrame(m);
    }
    stream += "trailing raw bytes";
    out.push_back(stream);
  }
  out.push_back(std::string("\x00\x01", 2) + "GET / HTTP/1.1\r\n\r\n");
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  cumulus::fuzz::MaybeMakeSeeds(argc, argv, Seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static const uint32_t kLimits[] = {0, 8, 64, 4096, 64u << 10, 512u << 20, 0xffffffffu};
  uint32_t limit = kLimits[data[0] % (sizeof(kLimits) / sizeof(kLimits[0]))];
  uint32_t chunk_seed = data[1];
  data += 2;
  size -= 2;

  cumulus::FrameDecoder decoder(limit);
  size_t fed = 0, framed = 0, taken = 0;
  bool failed = false;
  while (fed < size && !failed) {
    chunk_seed = chunk_seed * 1103515245u + 12345u;
    size_t n = std::min<size_t>(size - fed, 1 + (chunk_seed >> 16) % 97);
    decoder.Append(reinterpret_cast<const char*>(data + fed), n);
    fed += n;
    while (true) {
      auto next = decoder.Next();
      if (!next.ok()) {
        failed = true;
        break;
      }
      if (!*next) break;
      size_t bytes = (*next)->size() * sizeof(capnp::word);
      if (bytes > limit) __builtin_trap();  // a frame over the limit got through
      framed += cumulus::kFrameHeaderBytes + bytes;
    }
    // Now and then take raw bytes after the last frame, as the object channel does.
    if (!failed && (chunk_seed & 0x300) == 0) {
      char out[64];
      taken += decoder.Take(out, sizeof(out));
    }
    if (framed + taken + decoder.buffered() != fed) __builtin_trap();  // bytes lost or invented
  }
  return 0;
}
