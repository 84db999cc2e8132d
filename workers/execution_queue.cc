#include "workers/execution_queue.h"

#include <capnp/serialize.h>

#include "runtime/core/messages.h"
#include "runtime/net/frame.h"
#include "runtime/proto/core.capnp.h"

namespace cumulus {

bool ExecutionQueue::Push(Item item) {
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

void ExecutionQueue::Run(TaskExecutor& executor, const Reply& reply) {
  while (true) {
    Item next;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !queue_.empty() || closed_; });
      if (queue_.empty()) return;
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    // A handler may read a field more than once: 8 times the frame's words, never the 64M
    // words a frame of zero-sized list elements could make it walk.
    capnp::FlatArrayMessageReader reader(next.words, CoreReaderOptions(next.words.size() * 8));
    auto spec = reader.getRoot<proto::CoreMessage>().getSubmitTask();
    capnp::MallocMessageBuilder message;
    auto result = message.initRoot<proto::CoreMessage>().initTaskResult();
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_ = IdFrom<TaskId>(spec.getTaskId());
    }
    bool exit_after = executor.Run(spec, result);
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_ = TaskId();
    }
    reply(next.reply_conn, EncodeFrame(message), exit_after);
  }
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
