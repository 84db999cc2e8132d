// Membership: which nodes are in the cluster and whether they are alive. Pure logic over a Clock:
// the head feeds it registrations, heartbeats and disconnections and calls Tick() periodically.
//
// A node is declared DEAD when
//   - no heartbeat came for `heartbeat_timeout` (a hung node: SIGSTOP, a frozen VM), or
//   - its connection closed and it did not come back within `disconnect_grace` (a killed node), or
//   - it said it was leaving (`cumulus stop`, SIGTERM): DEAD too (its workers and objects are
//     gone), but `left` is set and it is shown as STOPPED, not as a failure.
// A dead node never comes back under the same id: it must register again with a new one (it may
// have lost its workers and objects, so the cluster must not treat it as the same node). A node
// that left on purpose may register again under its id (the head's own node keeps its id across
// a clean restart).
// Not thread-safe: the head's event loop owns it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "scheduler/resources.h"

namespace cumulus {

// kRecovering: read back after a head restart, not yet heard from. Listed, but not counted as
// alive (nor its resources) until it registers or heartbeats; dead if it does not in time.
enum class NodeState { kAlive, kDead, kRecovering };

struct NodeRecord {
  NodeId id;
  std::string address;  // as the head sees it
  std::string hostname;
  std::string object_store_address;
  ResourceSet total;
  ResourceSet available;
  Labels labels;
  std::vector<uint32_t> gpu_ids;  // physical ids of the node's GPUs
  int32_t pid = 0;
  NodeState state = NodeState::kAlive;
  int64_t registered_micros = 0;
  int64_t last_heartbeat_micros = 0;
  int64_t death_micros = 0;
  std::string death_reason;
  bool left = false;  // DEAD because it said it was leaving (stopped on purpose), not a failure
  // DRAINING: placement gives it no new work; it leaves (left) once it runs and holds nothing.
  // Kept by the head across the node's re-registrations and the head's restarts.
  bool draining = false;
  std::string drain_note;       // what a draining node still waits for, from its heartbeats
  std::string core_address;     // host:port where other nodes send tasks
  std::string core_socket;      // Unix socket where drivers on that machine connect
  DemandList pending_demand;    // shape, how many wait, their label selector
  std::string metrics_address;  // host:port of its Prometheus endpoint; "" if it serves none
  // What holds the node, from its heartbeats: tasks it holds (queued, running, or forwarded and
  // not answered), workers hosting an actor, busy workers, placement-group bundles and drivers
  // attached, summed (what its drain would wait for); 0 when nothing does. A node hosting only
  // zero-resource actors has all its resources free and work > 0 (the autoscaler: busy).
  uint32_t work = 0;
  uint64_t view_version = 0;  // Membership's version when this record last changed
};

struct MembershipOptions {
  Duration heartbeat_timeout = std::chrono::seconds(10);  // silence that makes a node dead
  Duration disconnect_grace = std::chrono::seconds(2);    // a closed connection's time to come back
};

const char* NodeStateName(NodeState state);  // "ALIVE", "DEAD", "RECOVERING"
// As a user sees it: "STOPPED" for a node that left on purpose, "DRAINING" for an alive node
// marked draining, else NodeStateName(node.state).
const char* NodeStateName(const NodeRecord& node);

class Membership {
 public:
  Membership(MembershipOptions options, Clock& clock) : options_(options), clock_(clock) {}

  // Adds a node or resumes one that is alive (it reconnected). NotFound if the id was declared
  // dead: the node must rejoin with a new id. A metrics_address that is not HOST:PORT
  // (ParseHostPort) is dropped with a logged reason: the node registers without one.
  Status Register(NodeRecord node);
  // Records a heartbeat. False if the node is unknown or dead (it should register again).
  bool Heartbeat(const NodeId& id, const ResourceSet& available, DemandList pending_demand = {},
                 const std::string& drain_note = "", uint32_t work = 0);
  // Marks an alive (or recovering) node DRAINING. NotFound if unknown, InvalidArgument if it is
  // dead. Marking a draining node again is OK (no change).
  Status Drain(const NodeId& id);
  // The node said it is leaving (stopped on purpose, `why`): DEAD at once, with `left` set and the
  // reason "stopped: `why`". False if the node is unknown or already dead.
  bool Left(const NodeId& id, const std::string& why);
  // The node's connection closed.
  void Disconnected(const NodeId& id);
  // A node read back from the control store after a head restart. Alive nodes get a full
  // heartbeat timeout to reconnect.
  void Recover(NodeRecord node);
  // Declares dead the nodes whose time ran out; returns their ids.
  std::vector<NodeId> Tick();
  // The head itself was not running for `d` (its loop stalled): move every deadline by `d`.
  void ForgiveStall(Duration d);

  const NodeRecord* Find(const NodeId& id) const;
  // Every change to what the cluster's view shows (a node joined, died, or its resources,
  // labels or pending demand changed) increases the version. A heartbeat that changes nothing
  // does not.
  uint64_t version() const { return version_; }
  // The nodes whose record changed after version `since`, in version order.
  std::vector<const NodeRecord*> ChangedSince(uint64_t since) const;
  const std::map<NodeId, NodeRecord>& nodes() const { return nodes_; }
  size_t alive_count() const;

 private:
  void Changed(NodeRecord& node);

  struct Liveness {
    TimePoint last_heartbeat;
    std::optional<TimePoint> disconnected_at;
  };
  MembershipOptions options_;
  Clock& clock_;
  std::map<NodeId, NodeRecord> nodes_;
  uint64_t version_ = 0;
  std::map<uint64_t, NodeId> by_version_;  // each node under its latest version
  std::map<NodeId, Liveness> liveness_;    // alive nodes only
};

}  // namespace cumulus
