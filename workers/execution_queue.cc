#include "workers/execution_queue.h"

#include <capnp/serialize.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "runtime/core/messages.h"
#include "runtime/net/first_segment.h"
#include "runtime/net/frame.h"
#include "runtime/proto/core.capnp.h"

namespace cumulus {

bool ExecutionQueue::Push(Item item) {
  item.received_us = TimelineNowMicros();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (item.from_node && blocked_) return false;
    queue_.push_back(std::move(item));
  }
  cv_.notify_one();
  return true;
}

void ExecutionQueue::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

void ExecutionQueue::Run(TaskExecutor& executor, const Reply& reply, TimelineBatch* timeline,
                         const std::function<void(std::string)>& to_node) {
  if (timeline && (!timeline->enabled() || !to_node)) timeline = nullptr;
  const int32_t pid = getpid();
  auto ship = [&](bool idle) {
    // Due only when full or idle: no clock read for a batch that cannot be (most runs).
    if (!timeline || timeline->empty() || !(idle || timeline->full())) return;
    int64_t now = TimelineNowMicros();
    if (timeline->Due(idle, now)) to_node(timeline->TakeFrame(now));
  };
  while (true) {
    Item next;
    bool idle = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto ready = [&] { return !queue_.empty() || closed_; };
      if (timeline && !timeline->empty() && !ready()) {
        // Idle with events left: wake in time to ship them.
        auto deadline = std::chrono::system_clock::time_point(
            std::chrono::microseconds(timeline->DeadlineMicros()));
        if (!cv_.wait_until(lock, deadline, ready)) {
          lock.unlock();
          ship(/*idle=*/true);
          continue;
        }
      }
      cv_.wait(lock, ready);
      if (queue_.empty()) {
        lock.unlock();
        if (timeline && !timeline->empty()) to_node(timeline->TakeFrame(TimelineNowMicros()));
        return;
      }
      next = std::move(queue_.front());
      queue_.pop_front();
      idle = queue_.empty();
    }
    // A handler may read a field more than once: 8 times the frame's words, never the 64M
    // words a frame of zero-sized list elements could make it walk.
    capnp::FlatArrayMessageReader reader(next.words, CoreReaderOptions(next.words.size() * 8));
    auto spec = reader.getRoot<proto::CoreMessage>().getSubmitTask();
    capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
    auto result = message.initRoot<proto::CoreMessage>().initTaskResult();
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_ = IdFrom<TaskId>(spec.getTaskId());
    }
    TaskTimes times;
    bool exit_after = executor.Run(spec, result, timeline ? &times : nullptr);
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_ = TaskId();
      idle = idle && queue_.empty();
    }
    std::string frame = EncodeFrame(message);
    if (timeline) {
      Record(*timeline, spec, result.asReader(), next, times, pid);
      if (next.from_node && (idle || exit_after || timeline->full())) {
        // Piggybacked: the batch goes in the same write as the result, before it, so the node
        // has the task's events before its owner sees it done (and may end the job).
        frame = timeline->TakeFrame(TimelineNowMicros()) + frame;
      } else if (exit_after) {
        to_node(timeline->TakeFrame(TimelineNowMicros()));
      }
    }
    reply(next.reply_conn, std::move(frame), exit_after);
    ship(idle);
  }
}

void ExecutionQueue::Record(TimelineBatch& timeline, proto::TaskSpec::Reader spec,
                            proto::TaskResult::Reader result, const Item& item,
                            const TaskTimes& times, int32_t pid) {
  TimelineRecord& r = timeline.Next();
  auto id = spec.getTaskId();
  if (id.size() != TaskId::kSize) return;
  std::memcpy(r.task, id.begin(), TaskId::kSize);
  r.attempt = spec.getAttempt();
  r.kind = TimelineRecord::kRun;
  r.flags = spec.getActorCreation()        ? TimelineRecord::kActorCreation
            : spec.getActorId().size() > 0 ? TimelineRecord::kActorCall
                                           : 0;
  r.code = result.getCode();
  r.worker_pid = pid;
  auto f = spec.getFunctionName();
  r.SetFunction(f.cStr(), f.size());
  r.t[0] = item.received_us;
  r.t[1] = times.started;
  r.t[2] = times.fetched;
  r.t[3] = times.executed;
  r.t[4] = times.stored;
  timeline.Commit();
}

TaskId ExecutionQueue::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

std::vector<TaskId> ExecutionQueue::Block() {
  std::lock_guard<std::mutex> lock(mu_);
  blocked_ = true;
  std::vector<TaskId> returned;
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (!it->from_node) {
      ++it;
      continue;
    }
    capnp::FlatArrayMessageReader reader(it->words);
    returned.push_back(
        IdFrom<TaskId>(reader.getRoot<proto::CoreMessage>().getSubmitTask().getTaskId()));
    it = queue_.erase(it);
  }
  return returned;
}

void ExecutionQueue::Unblock() {
  std::lock_guard<std::mutex> lock(mu_);
  blocked_ = false;
}

}  // namespace cumulus
