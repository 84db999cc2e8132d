// GroupCoordinator: the two-phase reservation of placement groups (gangs) made by way of this
// node, for the driver or worker that asked.
//
//   kWaiting    the group fits the cluster but not now: it is pending demand, placed again on
//               each scheduling pass (and after a refused try, 100 ms later);
//   kReserving  the nodes chosen were asked to hold their bundles (try `round`); a reply of an
//               older try is stale and its bundles are released at once;
//   kRecording  every node holds its bundles; the group's record (GroupRecord, head KV), which
//               tells other nodes where to route its tasks, is being written. The driver is
//               answered when the head has answered;
//   kReady      reserved and recorded (or the head could not be told: then only this node can
//               route its tasks).
// One refusal (or a node that closes its connection) releases the try everywhere and waits again.
// Removal is only by the group's own job, and always for good (kAllRounds).
//
// The coordinator does no I/O of its own: it talks to the node through NodeContext, which the task
// router implements; the head's answers come back to it on the loop thread, and one for a group
// forgotten meanwhile is ignored. Not thread-safe: the node's event loop owns it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/node/node_context.h"
#include "runtime/proto/core.capnp.h"
#include "scheduler/placement.h"

namespace cumulus {

class GroupCoordinator {
 public:
  GroupCoordinator(NodeContext& host, Clock& clock) : host_(host), clock_(clock) {}

  // A driver or worker of `job` on connection `origin` asks for a group; refusals are answered
  // at once.
  void Create(uint64_t origin, const JobId& job, proto::GroupRequest::Reader req);
  // Places the waiting groups and asks the chosen nodes to hold their bundles. The demand of
  // groups that wait is added to `pending`.
  void Schedule(TimePoint now, DemandList& pending);
  // A node answered a reservation.
  void OnReply(uint64_t conn, const NodeId& peer, proto::GroupReply::Reader reply);
  // The connection this node sends to `peer` on closed.
  void OnPeerClosed(const NodeId& peer);
  // Another node released a group (try `round`) that this node may have coordinated.
  void OnPeerRelease(const PlacementGroupId& id, uint32_t round);
  // A driver or worker of `job` on connection `conn` removes a group.
  void Remove(uint64_t conn, const JobId& job, const PlacementGroupId& id);
  // The job ended: forget its groups (every node releases the job's bundles itself).
  void EndJob(const JobId& job);
  // True if a waiting group is due to be placed again.
  bool Due(TimePoint now) const;

  // The job and node of each bundle of a group: known here, or from the head's record.
  // NotFound: no such group; Unavailable: not reserved yet, or its record is being looked up
  // (the head's answer asks for another scheduling pass, unless the head could not be asked).
  Result<std::pair<JobId, std::vector<NodeId>>> Locate(const PlacementGroupId& id);
  // A cached location turned out wrong (or the group is gone).
  void ForgetLocation(const PlacementGroupId& id);

  static std::string ReleaseFrame(const PlacementGroupId& id, uint32_t round);

 private:
  struct GroupOp {
    PlacementGroupId id;
    JobId job;
    std::vector<ResourceSet> bundles;
    GroupStrategy strategy = GroupStrategy::kPack;
    uint64_t origin = 0;  // the connection waiting for the answer
    enum State { kWaiting, kReserving, kRecording, kReady } state = kWaiting;
    std::vector<NodeId> nodes;  // per bundle, once placed
    std::set<NodeId> awaiting;  // nodes that have not answered yet
    std::string refused;        // why a node said no, this round
    uint32_t round = 0;         // tries so far; replies of older ones are stale
    TimePoint retry_at{};
    bool removed = false;     // removed while nodes were still answering
    std::string purpose;      // who it is for (createGroup), shown with its pending demand
    std::string wait_reason;  // why the last placement left it waiting
  };

  // A record lookup under way (by Locate).
  struct Lookup {
    bool stale = false;           // the group changed meanwhile: the answer is not kept
    std::vector<JobId> removals;  // jobs removing the group, waiting for where it is
  };
  using Location = std::pair<JobId, std::vector<NodeId>>;

  void Conclude(const PlacementGroupId& id, TimePoint now);
  void Recorded(const PlacementGroupId& id, uint32_t round, const Status& st);
  void Located(const PlacementGroupId& id, Result<std::string> raw);
  void RemoveLocated(const JobId& job, const PlacementGroupId& id, const Location& where);
  void ReleaseEverywhere(const GroupOp& op, uint32_t round, TimePoint now);
  void Forget(const PlacementGroupId& id);
  void Reply(uint64_t conn, const PlacementGroupId& id, const Status& st,
             const std::vector<NodeId>& nodes, uint32_t round = 0);

  NodeContext& host_;
  Clock& clock_;
  std::map<PlacementGroupId, GroupOp> groups_;
  // Groups reserved by way of other nodes (job, node per bundle), from the head's records.
  std::map<PlacementGroupId, Location> locations_;
  std::map<PlacementGroupId, Lookup> lookups_;  // records being looked up
  // The head's answer for a group that has no location (NotFound, a malformed record), kept
  // until Locate is next asked about it.
  std::map<PlacementGroupId, Status> lookup_errors_;
};

// A node's request to hold bundles of a group (reserveBundles), decoded; `error` says what is
// wrong with it.
struct Reservation {
  PlacementGroupId id;
  JobId job;
  uint32_t round = 0;
  std::vector<uint32_t> indices;
  std::vector<ResourceSet> bundles;  // by bundle index
  Status error;
};
Reservation DecodeReservation(proto::GroupRequest::Reader req);

// A reply to a group request or reservation, as a frame.
std::string GroupReplyFrame(const PlacementGroupId& id, const Status& st,
                            const std::vector<NodeId>& nodes, uint32_t round);

}  // namespace cumulus
