// NodeContext: the node as its units (GroupCoordinator, LocalScheduler) see it — its id, its
// view of the cluster, its links to other nodes, to local connections and to the head, and the
// bundles it holds. The task router implements it; the units do no I/O of their own.
#pragma once

#include <cstdint>
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
  // Asks the head for the cluster view now (at most every 100 ms unless `force`); true if it did.
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
  // The head's key-value store (these block the caller while the head answers).
  virtual Status HeadPut(const std::string& ns, const std::string& key,
                         const std::string& value) = 0;
  virtual Result<std::string> HeadGet(const std::string& ns, const std::string& key) = 0;
  virtual Status HeadDelete(const std::string& ns, const std::string& key) = 0;
};

}  // namespace cumulus
