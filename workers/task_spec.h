// The submitTask message of a task or actor call, as the owner sends it: its arguments inline
// (values, and objects small enough to travel inline) or as object references with the location
// of the object, and its placement (resources, labels, strategy, placement group), checked on the
// way: a bad request is refused here with InvalidArgument saying what is wrong, before it leaves
// the process. Pure: no I/O, no state.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/internal/runtime.h"
#include "cumulus/status.h"

namespace cumulus {

struct TaskSpecInput {
  TaskId id;
  JobId job;
  std::string function;
  int max_retries = 0;
  int attempt = 0;
  bool actor_creation = false;
  std::string restart_cause;  // an actor's constructor after a restart: why it restarts
  std::string actor_class;    // an actor's constructor: its class (typeid name)
  bool actor_call = false;    // placement is the actor's: none is encoded
  ActorId actor;
  const std::vector<internal::ArgData>* args = nullptr;
  const internal::CallOptions* options = nullptr;
};

// Where an object argument is: its bytes (small objects), or the node storing it.
struct ArgumentLocation {
  std::shared_ptr<std::string> inline_value;
  NodeId node;
  std::string transfer_address;
  uint64_t size = 0;
};

// The frame to send. `locate` says where each object argument is.
Result<std::string> BuildTaskSpec(const TaskSpecInput& task,
                                  const std::function<ArgumentLocation(const ObjectId&)>& locate);

}  // namespace cumulus
