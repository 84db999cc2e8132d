#include "workers/timeline_batch.h"

#include <capnp/message.h>

#include "runtime/net/frame.h"

namespace cumulus {

namespace {
// Words a batch of `n` events takes: the roots and, per event, its struct (7 data and 2 pointer
// words), its task id and its function name (at most kTimelineFunctionBytes). Sizing the first
// segment to it spares the 8 KiB a default builder zeroes (a larger batch only adds a segment).
unsigned BatchWords(size_t n) {
  return static_cast<unsigned>(16 + n * (9 + (TaskId::kSize + 7) / 8 + kTimelineFunctionBytes / 8));
}
}  // namespace

std::string TimelineBatch::TakeFrame(int64_t now_us) {
  capnp::MallocMessageBuilder message(BatchWords(size_));
  auto events = message.initRoot<proto::CoreMessage>().initTimelineEvents().initEvents(
      static_cast<unsigned>(size_));
  for (size_t i = 0; i < size_; ++i) ToProto(events_[i], events[static_cast<unsigned>(i)]);
  size_ = 0;
  last_flush_us_ = now_us;
  return EncodeFrame(message);
}

}  // namespace cumulus
