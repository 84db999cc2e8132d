// CollectiveGroup::Impl's thread, which runs the group's operations one at a time in the order
// they were started, and its watchdog, which gives up on one still running past its deadline.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include "runtime/collective/collective_group_impl.h"

namespace cumulus {

// Fails what is queued, waits for the operation in flight (bounded: the watchdog gives up on
// it at its deadline), then stops the threads. A thread stuck in an operation the watchdog gave
// up on is left to finish on its own (it holds this Impl alive); nothing waits for it.
void CollectiveGroup::Impl::Close() {
  bool gave_up;
  {
    std::unique_lock<std::mutex> lock(mu_);
    closing_ = true;
    FailQueued(Status::Cancelled("the group was closed"));
    cv_.notify_all();
    cv_.wait(lock, [&] { return running_ == nullptr; });
    // An operation given up on may still be inside Gloo, writing into its buffer: wait for it
    // to end (Gloo's own timeout ends it), so that the caller may free the buffers once the
    // group is gone. Only one stuck past even that is left behind.
    cv_.wait_until(lock, busy_since_ + options_.timeout + 2 * kWatchdogGrace,
                   [&] { return !worker_busy_; });
    stop_ = true;
    gave_up = worker_busy_;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  if (worker_.joinable()) {
    if (gave_up) {
      worker_.detach();
    } else {
      worker_.join();
    }
  }
}

// Operations run on one thread of the group, in the order they were started.
std::shared_ptr<CollectiveWork> CollectiveGroup::Impl::Start(std::function<Status()> op) {
  auto work = std::make_shared<CollectiveWork>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) {
      work->Finish(Status::Cancelled("the group was closed"));
      return work;
    }
    if (gave_up_) {  // the thread is stuck: nothing queued would ever run
      work->Finish(broken_);
      return work;
    }
    if (!worker_.joinable()) {
      auto self = shared_from_this();
      worker_ = std::thread([self] { self->Work(); });
      watchdog_ = std::thread([self] { self->Watch(); });
    }
    queue_.emplace_back(work, std::move(op));
  }
  cv_.notify_all();
  return work;
}

void CollectiveGroup::Impl::Work() {
  while (true) {
    std::pair<std::shared_ptr<CollectiveWork>, std::function<Status()>> next;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_ || gave_up_) return;
      next = std::move(queue_.front());
      queue_.pop_front();
      running_ = next.first;
      running_since_ = busy_since_ = std::chrono::steady_clock::now();
      worker_busy_ = true;
      running_seq_ = 0;  // until Run says which collective it is
      op_returned_ = false;
    }
    cv_.notify_all();  // the watchdog starts timing it
    Status st = next.second();
    {
      std::lock_guard<std::mutex> lock(mu_);
      worker_busy_ = false;
      if (gave_up_) {      // the watchdog already failed it and everything queued
        cv_.notify_all();  // Close may be waiting for it
        return;
      }
      running_ = nullptr;
    }
    cv_.notify_all();  // Close may be waiting for it
    next.first->Finish(std::move(st));
  }
}

// Called by an operation once its transfer ended (it then only reports): the watchdog stops
// timing it.
void CollectiveGroup::Impl::OpReturned() {
  std::lock_guard<std::mutex> lock(mu_);
  op_returned_ = true;
}

// The watchdog: an operation still running past the timeout (plus a grace for Gloo's own
// timeout to fire first) fails, with everything queued behind it, and the group is broken. An
// NCCL communicator is asked to abort (the polling thread aborts it; its kernels return); a
// Gloo operation cannot be interrupted, so its thread is left behind, and its buffer may still
// be written until it ends.
void CollectiveGroup::Impl::Watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!running_ || op_returned_) {  // Work and Close notify when that changes
      cv_.wait(lock);
      continue;
    }
    auto now = std::chrono::steady_clock::now();
    auto deadline = running_since_ + options_.timeout + kWatchdogGrace;
    if (now >= deadline) {
      GiveUp(Status::TimedOut(
          "an operation of group '" + options_.name + "' (rank " + std::to_string(options_.rank) +
          " of " + std::to_string(options_.world_size) + ") was still running " +
          std::to_string(ToMillis(options_.timeout + kWatchdogGrace)) +
          " ms after it started; the watchdog gave up on it: form the group again (a new "
          "generation)"));
      continue;
    }
    if (running_seq_ > 0 && options_.world_size > 1 && now >= next_probe_) {
      // A collective running this long: do the others run the same one, and has any of them
      // failed or given up? (Ranks that issued different operations would otherwise wait for
      // each other until the timeout.)
      auto work = running_;
      uint64_t seq = running_seq_;
      std::string desc = running_desc_;
      lock.unlock();
      std::string differ = probe_->Probe(seq, desc);
      lock.lock();
      next_probe_ = std::chrono::steady_clock::now() + kProbeEvery;
      if (!differ.empty() && running_ == work && !op_returned_) {
        GiveUp(Status::Unavailable(desc + " (operation #" + std::to_string(seq) + ") in group '" +
                                   options_.name + "' (rank " + std::to_string(options_.rank) +
                                   " of " + std::to_string(options_.world_size) +
                                   ") cannot complete: " + differ +
                                   "; the group must be formed again (a new generation); its "
                                   "buffer may be written until the group is destroyed"));
        lock.unlock();
        probe_->Publish("gaveup/rank_" + std::to_string(options_.rank), differ);
        lock.lock();
      }
      continue;
    }
    cv_.wait_until(lock, running_seq_ > 0 ? std::min(deadline, next_probe_) : deadline);
  }
}

// Fails the operation in flight and everything queued; the group is broken (holds mu_). The
// operation's thread, if it is still inside Gloo, is left to end on its own.
void CollectiveGroup::Impl::GiveUp(Status why) {
  gave_up_ = true;
  if (broken_.ok()) broken_ = std::move(why);
  if (nccl_) nccl_->RequestAbort();
  running_->Finish(broken_);
  running_ = nullptr;
  FailQueued(broken_);
  cv_.notify_all();
}

void CollectiveGroup::Impl::FailQueued(const Status& why) {  // holds mu_
  for (auto& [work, fn] : queue_) work->Finish(why);
  queue_.clear();
}

int64_t CollectiveGroup::Impl::ToMillis(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace cumulus
