// ActorEnds: a bounded ring of the ends of the actor processes a node hosted — each life of an
// actor that ended here, with why — for `cumulus describe actor` (its restarts, each with its
// cause, and how it died). The owner decides whether an actor restarts; the node knows why its
// process ended (a signal, an exit status, the node's memory monitor, `cumulus kill`, its job's
// end), and the owner's reason for each restart comes with the next life's constructor (the
// spec's restartCause: "its node ... was declared dead by the head" where no node is left to
// say more). The oldest record goes first once `capacity` are kept.
//
// Not thread-safe: the node's event loop owns it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>

#include "cumulus/ids.h"
#include "runtime/core/messages.h"  // kKilledByCallerExitStatus

namespace cumulus {

// Records kept per node (~200 bytes each).
constexpr size_t kDefaultActorEnds = 2000;

struct ActorEnd {
  std::string actor;  // hex id
  std::string class_name;
  JobId job;
  std::string node;  // hex id of the node it ran on
  int pid = -1;
  int life = 0;               // 0 for its first process, n after its n-th restart
  int max_restarts = 0;       // -1: forever
  std::string restart_cause;  // life > 0: why its owner restarted it (the previous life's end)
  std::string cause;          // why this life ended (ActorEndCause)
  bool by_user = false;       // killed by `cumulus kill`
  bool with_job = false;      // ended with its job (its owner left)
  bool detached = false;      // a detached actor: its job's end does not end it
  bool job_ended = false;     // its job ended after this life did (nobody restarts it now)
  int64_t ended_micros = 0;
};

// Why an actor's process ended, in words, from what the node saw: `why` as the worker pool says
// it ("killed by signal 9", "exited with status N", the memory monitor's reason).
std::string ActorEndCause(const std::string& why, bool* by_user);

// What an ended life says of its actor, from its record alone (the rule `cumulus describe actor`
// uses): "DEAD" when it ended with its job, was killed by its owner, or had no restarts left
// (`*death`: "owner died (its job ended)", the cause, or "out of restarts (max_restarts M):
// CAUSE"; a `cumulus kill` without restarts left: its cause); otherwise "RESTARTING" (`*death`
// empty): its owner starts it again — unless its job has ended since (`job_ended`: DEAD, "owner
// died (its job ended)"); the record cannot tell whether it already did so on another node.
std::string ActorEndState(const ActorEnd& e, std::string* death);

class ActorEnds {
 public:
  explicit ActorEnds(size_t capacity) : capacity_(capacity) {}
  void Add(ActorEnd e);
  // An owner on this node lost an actor whose process ran on another node (`e.node`; `e.cause`:
  // what the owner saw). That node recalls the end while it lives; if the head declares it dead
  // (NodeDead), its records are gone and this one is kept instead. Set aside until then, for
  // kPendingMicros at most (a node not declared dead by then lives on, and recalls the end).
  void AddPending(ActorEnd e);
  // The head declared `node` (hex id) dead at `now_micros`: the ends set aside for it are kept,
  // each cause saying so; those older than kPendingMicros are dropped.
  void NodeDead(const std::string& node, int64_t now_micros);
  static constexpr int64_t kPendingMicros = 120'000'000;
  // Its job ended: the ends of its actors are marked `job_ended` (detached ones too: their
  // owner, which alone restarts them, has gone with the job).
  void EndJob(const JobId& job);
  void ForEach(const std::function<void(const ActorEnd&)>& fn) const;  // oldest first
  void ForEachNewestFirst(const std::function<void(const ActorEnd&)>& fn) const;
  size_t size() const { return kept_.size(); }

 private:
  size_t capacity_;
  std::deque<ActorEnd> kept_;
  std::deque<ActorEnd> pending_;  // AddPending's, oldest first, at most capacity_
};

}  // namespace cumulus
