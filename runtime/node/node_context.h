// NodeContext: the node as its units (GroupCoordinator, LocalScheduler) see it — its id, its
// view of the cluster, its links to other nodes, to local connections and to the head, and the
// bundles it holds. The task router implements it; the units do no I/O of their own.
//
// Every method is called on the node's event-loop thread and none blocks it. What asks the head
// runs on another thread; its answer comes back later on the loop thread (a completion callback,
// or the next scheduling pass), never from inside the call.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "scheduler/placement.h"

namespace cumulus {

class NodeContext {
 public:
  virtual ~NodeContext() = default;
  virtual const NodeId& node_id() const = 0;
  // This node (exact) and the view of the others; without those not reachable lately unless
  // `include_unreachable`.
  virtual ClusterSnapshot Snapshot(TimePoint now, bool include_unreachable) = 0;
  // Asks the head for the cluster view (at most once every 100 ms, counted from the last request
  // and from its answer, unless `force`; never twice at once). True while a request is under
  // way (started now or before): its answer replaces the view and schedules again, so a caller
  // that wants the fresh view waits for that pass. False if none is under way (asked too
  // recently, or the head cannot be asked).
  virtual bool RefreshView(TimePoint now, bool force) = 0;
  // Holds / releases bundles on this node (BundleTable).
  virtual Status ReserveHere(const PlacementGroupId& id, const JobId& job, uint32_t round,
                             const std::vector<uint32_t>& indices,
                             const std::vector<ResourceSet>& bundles) = 0;
  virtual void ReleaseHere(const PlacementGroupId& id, uint32_t round) = 0;
  // Sends a frame to another node; false if it cannot be reached (then, if
  // `avoid_if_unreachable`, placement leaves it out for a while).
  virtual bool SendToNode(const NodeId& node, std::string frame, TimePoint now,
                          bool avoid_if_unreachable) = 0;
  virtual void SendToConn(uint64_t conn, std::string frame) = 0;
  // Books (`take`) or credits resources in the view of another node.
  virtual void BookView(const NodeId& node, const ResourceSet& r, bool take) = 0;
  // Asks for another scheduling pass (on the loop's next turn): what waited may go on now.
  virtual void ScheduleAgain() = 0;
  // The head's key-value store. Each call returns at once; the requests are made in the order
  // called, on a thread of their own, and `done` runs with the answer later on the loop thread
  // (Unavailable if the head cannot be reached, NotFound from HeadGet if the key is absent). It
  // does not run if the node stops first: a `done` that touches a unit's state must check, by
  // id, that what it answers for is still there.
  virtual void HeadPut(const std::string& ns, const std::string& key, const std::string& value,
                       std::function<void(Status)> done) = 0;
  virtual void HeadGet(const std::string& ns, const std::string& key,
                       std::function<void(Result<std::string>)> done) = 0;
  virtual void HeadDelete(const std::string& ns, const std::string& key,
                          std::function<void(Status)> done) = 0;
};

}  // namespace cumulus
