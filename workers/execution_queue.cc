#include "workers/execution_queue.h"

#include <capnp/serialize.h>

#include "runtime/core/messages.h"
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

void ExecutionQueue::Run(const std::function<void(Item&)>& run) {
  while (true) {
    Item next;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !queue_.empty() || closed_; });
      if (queue_.empty()) return;
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    run(next);
  }
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
