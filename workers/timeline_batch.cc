#include "workers/timeline_batch.h"

#include <capnp/message.h>

#include "runtime/net/frame.h"

namespace cumulus {

std::string TimelineBatch::TakeFrame(int64_t now_us) {
  capnp::MallocMessageBuilder message;
  auto events = message.initRoot<proto::CoreMessage>().initTimelineEvents().initEvents(
      static_cast<unsigned>(size_));
  for (size_t i = 0; i < size_; ++i) ToProto(events_[i], events[static_cast<unsigned>(i)]);
  size_ = 0;
  last_flush_us_ = now_us;
  return EncodeFrame(message);
}

}  // namespace cumulus
