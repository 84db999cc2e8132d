#include "workers/timeline_batch.h"

#include <capnp/message.h>

#include "runtime/net/frame.h"

namespace cumulus {

std::string TimelineBatch::TakeFrame(int64_t now_us) {
  // One segment that fits the roots and the packed records (a default builder zeroes 8 KiB).
  capnp::MallocMessageBuilder message(
      static_cast<unsigned>(16 + size_ * kTimelinePackedBytes / sizeof(capnp::word)));
  PackTimeline(events_.data(), size_, message.initRoot<proto::CoreMessage>().initTimelineEvents());
  size_ = 0;
  last_flush_us_ = now_us;
  return EncodeFrame(message);
}

}  // namespace cumulus
