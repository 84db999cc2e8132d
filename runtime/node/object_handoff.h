// ObjectHandoff: how a draining node gives its objects away before it leaves. Once the node runs
// nothing, each object its store holds (in memory or spilled) is taken by another alive node that
// is not draining: that node pulls it over the ordinary object channel (FetchObjects), the move
// is written to the head (namespace kObjectMovesNamespace, key "<job hex>/<object hex>", value
// "<node hex> <host:port>") so that an owner whose read from this node fails finds the new copy,
// `on_moved` tells the owners at once (the router passes it to every node's drivers and workers),
// and only then does this node delete its copies. Nothing is lost: if no node can take them (none
// is alive and not draining, or the taker's store is full), the node keeps them and says why.
// An owner's free that races a round frees the taker's copy too (HandoffLedger). A node that
// stops while a round runs cancels it: what the taker took by then is recorded and announced as
// moved, the rest stays here (and goes with the node).
//
// Thread model: Step is called on the daemon's thread (its heartbeat); a round runs on a thread
// of its own, so heartbeats go on while the bytes move.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/head/membership.h"
#include "runtime/net/tcp.h"
#include "runtime/node/handoff_ledger.h"
#include "runtime/object_store/object_store.h"
#include "runtime/transfer/object_transfer.h"

namespace cumulus {

struct ObjectHandoffOptions {
  ObjectStore* store = nullptr;  // the node's store; must outlive the handoff
  NodeId self;
  std::string self_transfer;  // host:port of this node's object channel
  HostPort head;
  std::string token;
  // After a round failed (the taker refused or went away), the next one waits this long.
  Duration retry_after = std::chrono::seconds(2);
  // Called on the round's thread once the objects are held by `to` (reachable at `transfer`) and
  // the head has the moves, before this node deletes its copies; must not block for long.
  std::function<void(const NodeId& to, const std::string& transfer,
                     const std::vector<ObjectId>& ids)>
      on_moved;
  // Where the rounds note what they handed on, and the node's frees are checked against (the
  // router reports them); may be null. Must outlive the handoff.
  HandoffLedger* ledger = nullptr;
  // Called on the round's thread with objects `to` took whose owners freed them here while the
  // round ran: their copies on `to` are to be freed too. Must not block for long.
  std::function<void(const NodeId& to, const std::vector<ObjectId>& ids)> free_on;
  Clock* clock = &SystemClock::Get();
};

class ObjectHandoff {
 public:
  explicit ObjectHandoff(ObjectHandoffOptions options) : options_(std::move(options)) {}
  // Cancels a round in flight (FetchCanceller: the taker's answers are not waited for; a connect
  // to the taker under way still runs out, within the fetch's connect timeout) and waits for it
  // to record what was taken (bounded by the head's request timeout).
  ~ObjectHandoff();

  // On the daemon's thread, while the node drains, runs nothing and its store holds `objects`
  // objects: starts a round when none runs (and the last failure's pause is over), choosing the
  // taker from `nodes` (the head's view). Returns what the node waits for, one line:
  // "waiting for 3 objects: handing them (96.0 MiB) to node 1a2b3c4d: 1 done", "waiting for 3
  // objects: no other alive node that is not draining can take them", "waiting for 3 objects:
  // handing them to node 1a2b3c4d failed (...); trying again". Always "waiting for ...": the
  // autoscaler reads such a note as a node that may hold the only copy of a live object.
  std::string Step(const std::vector<NodeRecord>& nodes, size_t objects);

  uint64_t objects_moved() const { return moved_.load(); }
  bool running() {  // a round is under way
    std::lock_guard<std::mutex> lock(mu_);
    return running_;
  }

 private:
  void Round(NodeRecord to);  // on thread_

  ObjectHandoffOptions options_;
  std::thread thread_;
  std::mutex mu_;  // guards the fields below
  bool running_ = false;
  std::string note_;           // what the round in flight (or the last failed one) says
  TimePoint retry_at_{};       // after a failure: no new round before then
  size_t next_candidate_ = 0;  // rotates among takers after a failure
  std::atomic<uint64_t> moved_{0};
  FetchCanceller canceller_;  // cancelled once, by the destructor
};

}  // namespace cumulus
