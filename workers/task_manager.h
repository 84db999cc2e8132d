// TaskManager: the owner side of a driver or worker — the tasks and actor calls it submitted,
// until each has finished. A task is sent only when its object arguments are ready (small ones
// go inline, large ones as where they live); its result goes into the ReferenceTable; a stored
// result whose copy is lost is made again from its lineage, and a task that could not read a
// lost argument waits for it to be rebuilt. Actor calls and constructors go through the
// ActorManager it holds.
//
// Not thread-safe: called under the core worker's lock; its I/O goes through OwnerIo.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/proto/core.capnp.h"
#include "workers/actor_manager.h"
#include "workers/owner.h"
#include "workers/reference_table.h"

namespace cumulus {

class TaskManager : private ActorCalls {
 public:
  TaskManager(JobId job, ReferenceTable& refs, OwnerIo& io)
      : job_(job), refs_(refs), io_(io), actors_(refs, io, *this) {}

  ActorManager& actors() { return actors_; }

  // A normal task; returns its result's id (pending until it finishes).
  ObjectId SubmitTask(const std::string& function, std::vector<internal::ArgData> args,
                      const internal::CallOptions& options);
  // A call of `actor`'s `method`, sent after the calls made before it.
  ObjectId SubmitActorCall(const ActorId& actor, const std::string& method,
                           std::vector<internal::ArgData> args,
                           const internal::CallOptions& options);
  // A task that could not be submitted: its result's id, failed with `why`.
  ObjectId Refused(const TaskId& task, const std::string& function, const Status& why);
  // Cancels the task that makes `id` (actor calls cannot be cancelled).
  Status Cancel(const ObjectId& id);

  // A task's answer from its node or actor.
  void OnResult(proto::TaskResult::Reader result);
  // The node's connection is gone: every task sent to it fails.
  void NodeLost();

  // The stored copy of `id` on `failed_node` cannot be read (`why`): run the task that made it
  // again, or fail the object with ObjectLost saying why it cannot be. True if it is being
  // rebuilt, or was already (its copy is elsewhere now).
  bool Rebuild(const ObjectId& id, const NodeId& failed_node, const std::string& why);

  // "task F" for the task that makes `id`, or "a finished task".
  std::string DescribeProducer(const ObjectId& id) const;
  // Fails a pending object (and the tasks waiting for it).
  void FailObject(const ObjectId& id, const Status& st);
  // Sends the node the objects freed since the last call.
  void FlushFrees();

 private:
  // ActorCalls
  PendingTask* FindTask(const TaskId& id) override;
  Result<std::string> Spec(const PendingTask& t) override;
  void Fail(const TaskId& id, const Status& error) override { Finish(id, &error, nullptr); }
  void Submit(std::unique_ptr<PendingTask> task) override { Enqueue(std::move(task)); }

  static std::unique_ptr<PendingTask> NewPending(const TaskId& id, const ObjectId& ret,
                                                 std::string function,
                                                 std::vector<internal::ArgData> args,
                                                 internal::CallOptions options);
  // Resolves the arguments of a new task, or parks it until they are ready.
  void Enqueue(std::unique_ptr<PendingTask> task);
  // All arguments are ready: send (normal tasks, actor creation) or queue on the actor.
  void Dispatch(PendingTask& t);
  // Ends a task: its return object becomes ready (result) or failed (error).
  void Finish(const TaskId& id, const Status* error, proto::TaskResult::Reader* result);
  void SetResult(PendingTask& t, ObjectEntry& e, proto::TaskResult::Reader& result);
  void ResolveWaiters(const ObjectId& id, ObjectEntry& e);
  // Task `task` could not read its argument `lost` on `node`: it waits for it to be rebuilt and
  // is sent again (not an attempt of its own).
  bool WaitForRebuiltArgument(const TaskId& task, const ObjectId& lost, const NodeId& node,
                              const std::string& why);

  const JobId job_;
  ReferenceTable& refs_;
  OwnerIo& io_;
  ActorManager actors_;
  std::unordered_map<TaskId, std::unique_ptr<PendingTask>> tasks_;
  uint64_t next_seq_ = 1;
};

}  // namespace cumulus
