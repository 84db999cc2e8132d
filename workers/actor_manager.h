// ActorManager: the actors a driver or worker knows — those it created (it owns them: it restarts
// them, and they end with it) and those it found by name — with the calls made to each, sent in
// the order made, at most once each unless a call's retries allow another try on a restarted
// actor.
//
// An actor is pending while its constructor runs, alive once this process has a connection to
// it, and dead when killed, when it cannot be built, or when it is lost with no restarts left.
//
// Not thread-safe: called under the core worker's lock; its I/O goes through OwnerIo.
#pragma once

#include <deque>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/proto/core.capnp.h"
#include "workers/core_channel.h"
#include "workers/owner.h"
#include "workers/reference_table.h"

namespace cumulus {

struct ActorEntry {
  ActorId id;
  std::string class_name;
  std::string factory;
  std::string name;
  bool owned = false;
  enum State { kPending, kAlive, kDead } state = kPending;
  Status death;
  uint64_t conn = 0;  // 0: being built, or being connected to
  TaskId creation_task;
  std::deque<TaskId> queue;  // calls not sent yet, in order
  std::set<TaskId> in_flight;
  bool kill_when_created = false;
  bool detached = false;  // outlives this process: not killed or unnamed at its end
  NodeId node;            // where it runs (actors this process created)
  // Restarts (owner only): how to build it again, and how often it may be.
  int max_restarts = 0;  // -1: forever
  int restarts = 0;      // also its life number: a connection made for an earlier one is dropped
  std::string restart_cause;  // why it was last restarted (sent with its constructor)
  std::vector<internal::ArgData> creation_args;
  internal::CallOptions creation_options;
  std::vector<ObjectId> pinned;  // object arguments of its constructor
};

// What ActorManager needs of the tasks (implemented by TaskManager).
class ActorCalls {
 public:
  virtual ~ActorCalls() = default;
  virtual PendingTask* FindTask(const TaskId& id) = 0;
  // The frame that sends `t` (its arguments are ready).
  virtual Result<std::string> Spec(const PendingTask& t) = 0;
  // Ends `id` with `error`.
  virtual void Fail(const TaskId& id, const Status& error) = 0;
  // Submits a new task (the constructor).
  virtual void Submit(std::unique_ptr<PendingTask> task) = 0;
};

class ActorManager {
 public:
  ActorManager(ReferenceTable& refs, OwnerIo& io, ActorCalls& calls)
      : refs_(refs), io_(io), calls_(calls) {}

  // A new actor this process owns, not built yet (Start builds it). Dead at once, saying why, if
  // its options contradict each other.
  ActorEntry& Create(const ActorId& id, const std::string& factory, const std::string& class_name,
                     const std::vector<internal::ArgData>& args,
                     const internal::CallOptions& options);
  // Submits the constructor of `a` (first time or again).
  void Start(ActorEntry& a, std::vector<internal::ArgData> args,
             const internal::CallOptions& options);
  // An actor found by name, owned elsewhere; `*added` says whether it was new here.
  ActorEntry& AddNamed(const ActorId& id, const std::string& name, const std::string& class_name,
                       bool* added);
  ActorEntry* Find(const ActorId& id);

  // A call to `actor`: queued behind the earlier ones. False if the actor is unknown.
  bool Queue(const ActorId& actor, PendingTask& call);
  // Sends the calls that can go now, in order; fails them all if the actor is dead.
  void Pump(ActorEntry& a);
  void Pump(const ActorId& actor);

  // A call or a constructor finished (`error`, or `result`).
  void CallFinished(const PendingTask& call);
  void CreationFinished(const PendingTask& creation, const Status* error,
                        proto::TaskResult::Reader* result);

  // Its process is gone (it was not killed by a handle): restarted if it may be, else dead.
  // Calls it was running go again, in order, if they have retries left; else they fail.
  void Lost(ActorEntry& a, const std::string& why);
  // Ends `a` for good with `why`: its calls fail, its constructor's arguments are let go.
  void MarkDead(ActorEntry& a, const Status& why);

  // Starts connecting to `a` at `address`; calls go out once the connection is adopted.
  Status Connect(ActorEntry& a, const std::string& address);
  // The connection to `actor`, made for its life `incarnation`, is open: keep it, unless the
  // actor died or restarted meanwhile (then it is closed, after the kill if it was killed).
  CoreChannel::Adopted Adopt(uint64_t conn, const ActorId& actor, int incarnation);
  // The connection `conn` to `actor` closed (`why`, "closed" when its peer closed it).
  void ConnectionClosed(uint64_t conn, const ActorId& actor, const std::string& why);
  // The head declared `node` dead: its actors are lost. Returns their connections (to close).
  std::vector<uint64_t> NodeDied(const NodeId& node);

  // Kills `actor` by its handle; returns its name (to free), NotFound if it is unknown.
  Result<std::string> Kill(const ActorId& actor);
  // This process ends: its owned actors (not detached) are killed; returns their names.
  std::vector<std::string> EndOwned();

  static std::string KillFrame(const ActorId& actor);

 private:
  // The ActorLost frame for `a`'s life on a.node, ended for `why` (Lost tells every owned one to
  // this process's node, which keeps it if the head declares a.node dead).
  static std::string LostFrame(const ActorEntry& a, const std::string& why);
  bool CanRestart(const ActorEntry& a) const {
    return a.owned && (a.max_restarts < 0 || a.restarts < a.max_restarts);
  }

  ReferenceTable& refs_;
  OwnerIo& io_;
  ActorCalls& calls_;
  std::unordered_map<ActorId, ActorEntry> actors_;
};

}  // namespace cumulus
