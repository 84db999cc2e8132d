// How large a first segment to give a Cap'n Proto builder of a control-plane message:
//   capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
// A default builder allocates and zeroes 1024 words (8 KiB) for its first segment; with several
// messages built per task that zeroing was about a quarter of a task's user-space instructions
// (callgrind, bench_core --only-tasks-async), while most frames are a few hundred bytes. A
// message that outgrows its first segment only gets more segments (grown heuristically), which
// EncodeFrame (runtime/net/frame.h) and every FlatArrayMessageReader handle.
#pragma once

#include <cstddef>

namespace cumulus {

constexpr unsigned kFrameFirstSegmentWords = 128;

// The first segment for a message that also carries about `payload_bytes` of data or text (task
// arguments, an inline result, a record), so that it usually fits in one segment.
constexpr unsigned FrameFirstSegmentWords(size_t payload_bytes) {
  return kFrameFirstSegmentWords + static_cast<unsigned>((payload_bytes + 7) / 8);
}

}  // namespace cumulus
