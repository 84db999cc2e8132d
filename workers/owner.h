// What the owner side of a core worker shares between its units (TaskManager, ActorManager): a
// submitted task, and the I/O and notifications they ask of the core worker that composes them.
//
// Every unit of the owner side is called under the core worker's lock and does no I/O itself.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/internal/runtime.h"
#include "cumulus/status.h"
#include "runtime/core/records.h"

namespace cumulus {

// A task or actor call this process submitted and that has not finished.
struct PendingTask {
  TaskId id;
  ObjectId ret;
  std::string function;
  std::vector<internal::ArgData> args;
  internal::CallOptions options;
  int max_retries = 0;
  int attempt = 0;
  uint64_t seq = 0;  // actor calls: submission order
  bool actor_creation = false;
  std::string restart_cause;  // an actor's constructor after a restart: why it restarts
  std::string actor_class;    // an actor's constructor: its class (typeid name)
  std::string rebuilds_lost;  // run again to rebuild its lost result: how the copy was lost
  bool actor_call = false;
  ActorId actor;
  int unresolved = 0;  // arguments not ready yet
  bool sent = false;
  std::vector<ObjectId> held;  // argument objects this task keeps alive
};

// Implemented by the core worker. Called under its lock: nothing here may wait.
class OwnerIo {
 public:
  virtual ~OwnerIo() = default;
  // Queues a frame for this process's node; Unavailable if its connection is gone.
  virtual Status SendToNode(std::string frame) = 0;
  // Queues a frame for an actor's connection.
  virtual void SendToActor(uint64_t conn, std::string frame) = 0;
  // Starts connecting to an actor at `address` (its life number `incarnation`); the connection
  // is handed to ActorManager::Adopt when the loop has it. Fails at once if it cannot start.
  virtual Status ConnectToActor(const ActorId& actor, int incarnation,
                                const std::string& address) = 0;
  // Publishes a named actor's address to the head (later, off the lock).
  virtual void PublishActorName(const std::string& name, const ActorNameRecord& record) = 0;
  // Deletes copies of freed objects pulled into this node's store (later, off the lock).
  virtual void DeleteLocalCopies(std::vector<ObjectId> ids) = 0;
  // Something a Get or Wait may be waiting for changed.
  virtual void Changed() = 0;
  // Why this process can no longer send work (shutting down, its node lost); empty if it can.
  virtual std::string CannotSubmit() const = 0;
  // Shut down: new work fails at once.
  virtual bool stopped() const = 0;
};

}  // namespace cumulus
