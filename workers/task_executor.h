// TaskExecutor: runs, in a worker process, the tasks and actor calls it is sent. It finds the
// function in the registry (CUMULUS_REMOTE), reads the arguments (inline, or from this node's
// store, pulled first if they live elsewhere), calls it, and fills the result: the value inline
// if small, else stored on this node; or the error, with the object that could not be read so
// that its owner may rebuild it. Once an actor's constructor ran here, the process hosts that
// actor and runs its method calls.
//
// Run is called by one thread at a time (the worker's executing thread); actor_id() and
// was_restarted() may be read from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/core/messages.h"
#include "runtime/object_store/store_client.h"
#include "runtime/proto/core.capnp.h"

namespace cumulus {

struct TaskExecutorOptions {
  NodeId node;
  std::string transfer_address;  // this node's object channel, for stored results
  std::string token;             // to pull arguments from other nodes
  StoreClient* store = nullptr;  // this node's; must outlive the executor
  // The actor built here starts listening for its callers; returns "host:port".
  std::function<Result<std::string>()> start_actor_listener;
  // Where a draining node handed object `id` on (the head's kObjectMovesNamespace; NotFound if
  // it was not moved): an argument whose copy is gone from the node the owner named is read
  // there instead of being reported lost. Unset: such an argument is reported lost at once.
  std::function<Result<ObjectMove>(const ObjectId& id)> find_move;
};

// When a run's phases ended (TimelineNowMicros), for the timeline.
struct TaskTimes {
  int64_t started = 0;   // Run began: the argument fetch begins
  int64_t fetched = 0;   // the arguments were read
  int64_t executed = 0;  // the function (or constructor, or method) returned
  int64_t stored = 0;    // the result was stored (or put inline): Run ends
};

class TaskExecutor {
 public:
  explicit TaskExecutor(TaskExecutorOptions options) : options_(std::move(options)) {}

  // Runs `spec` and fills `result` (its id, node and pid; the return value, or the error). True
  // if the process must exit once it has answered (an actor's constructor failed). With `times`,
  // when each phase ended (an argument that could not be read ends all of them at once).
  bool Run(proto::TaskSpec::Reader spec, proto::TaskResult::Builder result,
           TaskTimes* times = nullptr);

  ActorId actor_id() const;
  bool was_restarted() const { return was_restarted_; }

 private:
  Status Call(proto::TaskSpec::Reader spec, const std::string& function, std::string* value,
              proto::TaskResult::Builder* result, TaskTimes* times);
  // Reads argument `id` from the node `where` (object channel `from`), pulled here if that is
  // another node (added to `pulled`, to be deleted after the run); if its copy there is gone and
  // find_move says it moved, from where it lives now.
  Result<ObjectBuffer> ReadArgument(const ObjectId& id, const NodeId& where,
                                    const std::string& from, std::vector<ObjectId>* pulled);

  TaskExecutorOptions options_;
  std::shared_ptr<void> actor_;  // the actor this process hosts, once built
  std::string actor_class_;      // its class (typeid name): only its methods run on it
  mutable std::mutex actor_id_mu_;
  ActorId actor_id_;  // guarded by actor_id_mu_ (user threads read it)
  std::atomic<bool> was_restarted_{false};
};

}  // namespace cumulus
