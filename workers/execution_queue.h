// ExecutionQueue: the tasks and actor calls sent to a worker, run one at a time, in the order they
// came, on the worker's main thread. While the running task waits in Get or Wait (Block), the
// tasks its node queued here are handed back (they could be the ones it waits for), and new ones
// from the node are refused until it goes on (Unblock); an actor's callers still queue.
//
// Thread safety: every method may be called from any thread; Run from one.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "cumulus/ids.h"
#include "runtime/net/event_loop.h"
#include "workers/task_executor.h"
#include "workers/timeline_batch.h"

namespace cumulus {

class ExecutionQueue {
 public:
  struct Item {
    FrameWords words;  // a CoreMessage holding submitTask
    uint64_t reply_conn = 0;
    bool from_node = false;
    int64_t received_us = 0;  // set by Push (for the timeline)
  };

  // Queues a task; false if it came from the node while the running task is blocked (hand it
  // back to the node).
  bool Push(Item item);
  // No more tasks will come: Run returns once the queue is empty.
  void Close();
  // Runs the queued tasks with `executor` until Close, and hands each answer (a CoreMessage
  // frame holding taskResult) to `reply` with the connection it goes back on; `exit_after`: the
  // process must end once it is written.
  using Reply = std::function<void(uint64_t conn, std::string frame, bool exit_after)>;
  // With an enabled `timeline`, each run's phases are recorded there and its batches handed to
  // `to_node` (a timelineEvents frame for the node connection) as TimelineBatch says; the last
  // one before Run returns or the process exits (exit_after).
  void Run(TaskExecutor& executor, const Reply& reply, TimelineBatch* timeline = nullptr,
           const std::function<void(std::string)>& to_node = nullptr);
  // The task running now (nil if none).
  TaskId running() const;
  // The running task waits: the node's queued tasks are taken out (their ids returned).
  std::vector<TaskId> Block();
  void Unblock();

 private:
  // The phases of the run of `spec` just ended, into `timeline`.
  static void Record(TimelineBatch& timeline, proto::TaskSpec::Reader spec,
                     proto::TaskResult::Reader result, const Item& item, const TaskTimes& times,
                     int32_t pid);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  TaskId running_;
  std::deque<Item> queue_;
  bool closed_ = false;
  bool blocked_ = false;
};

}  // namespace cumulus
