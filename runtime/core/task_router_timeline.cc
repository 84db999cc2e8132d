// TaskRouter: the task timeline as the node keeps it (runtime/core/timeline.h): its workers'
// batches of events and its own, in one ring, and the answer to a client that asks for them.
#include <unistd.h>

#include "runtime/base/logging.h"
#include "runtime/core/task_router_impl.h"

namespace cumulus {

void TaskRouter::Impl::RecordScheduled(const RoutedTask& t, const Worker& w) {
  if (t.arrived_us == 0 || t.dispatched_us == 0) return;
  TimelineRecord r;
  r.SetTask(t.id);
  r.kind = TimelineRecord::kScheduled;
  r.flags = t.actor_creation ? TimelineRecord::kActorCreation : 0;
  r.attempt = t.attempt;
  r.worker_pid = w.spawned_pid;
  r.SetFunction(t.function.data(), t.function.size());
  r.t[0] = t.arrived_us;
  r.t[1] = t.dispatched_us;
  timeline_.Add(r);
}

void TaskRouter::Impl::HandleTimelineEvents(Conn& c, proto::TimelineEvents::Reader batch) {
  if (c.role != Role::kWorker) return;  // (a client's answer is never sent to a node)
  const Worker* w = leases_.workers().Find(c.worker);
  if (!w) return;
  // The worker is resolved once per batch; its events go straight into the ring's slots.
  auto added = AddTimelineBatch(batch, w->spawned_pid, &timeline_);
  if (added.ok()) return;
  // A worker of another build drops every batch it sends: one line per 10 s, not per batch.
  TimePoint now = clock_.Now();
  if (timeline_drop_logged_ != TimePoint{} &&
      now - timeline_drop_logged_ < std::chrono::seconds(10)) {
    ++timeline_drops_unlogged_;
    return;
  }
  CUMULUS_LOG(WARN) << "node: dropped a timeline batch from worker " << w->spawned_pid << ": "
                    << added.status().message()
                    << (timeline_drops_unlogged_
                            ? " (and " + std::to_string(timeline_drops_unlogged_) +
                                  " more since the last such line)"
                            : std::string());
  timeline_drop_logged_ = now;
  timeline_drops_unlogged_ = 0;
}

void TaskRouter::Impl::HandleTimelineRequest(uint64_t id, proto::TimelineRequest::Reader request) {
  JobId job;
  if (request.getJobId().size() != 0) {
    job = IdFrom<JobId>(request.getJobId());
    if (job.IsNil()) return Close(id, "asked for the timeline of a malformed job id");
  }
  std::vector<const TimelineRecord*> picked;
  timeline_.ForEach(job, [&](const TimelineRecord& r) { picked.push_back(&r); });
  capnp::MallocMessageBuilder message;
  auto out = message.initRoot<proto::CoreMessage>().initTimelineEvents();
  out.setNodeId(DataOf(node_id_));
  out.setDropped(timeline_.dropped());
  out.setCapacity(timeline_.capacity());
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  out.setHostname(host);
  auto events = out.initEvents(static_cast<unsigned>(picked.size()));
  for (size_t i = 0; i < picked.size(); ++i) {
    ToProto(*picked[i], events[static_cast<unsigned>(i)]);
  }
  Send(id, EncodeFrame(message));
}

}  // namespace cumulus
