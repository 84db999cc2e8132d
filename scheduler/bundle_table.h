// BundleTable: the placement-group bundles a node holds. A bundle's resources leave the node's
// pool when it is reserved (all bundles of one request or none); the group's tasks and actors
// lease from the bundle's own pool; all of it goes back when the group is released.
//
// Reservations are made in tries (rounds) by the node coordinating the group: a release names the
// last try it covers (kAllRounds: the group is gone for good), and is remembered, so that a
// reservation of an earlier try arriving late is refused rather than held forever. Pure
// bookkeeping; not thread-safe (the node's event loop owns it).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "scheduler/resource_pool.h"

namespace cumulus {

constexpr uint32_t kAllRounds = 0xFFFFFFFFu;  // a release that is final

struct HeldBundle {
  PlacementGroupId group;
  uint32_t index = 0;
  JobId job;
  uint32_t round = 0;             // the try of the group that reserved it
  std::vector<uint32_t> gpu_ids;  // devices taken from the node
  ResourcePool pool;              // what the group's leases take from

  HeldBundle(const ResourceSet& total, std::vector<uint32_t> gpus)
      : gpu_ids(gpus), pool(total, std::move(gpus)) {}
};

using BundleKey = std::pair<PlacementGroupId, uint32_t>;  // group, bundle index

class BundleTable {
 public:
  // Remembers at most this many released groups (oldest forgotten first).
  explicit BundleTable(size_t max_tombstones = 65536) : max_tombstones_(max_tombstones) {}

  // Holds `indices` of `bundles` for try `round` of group `id`, taking them from `node`; all or
  // none. Cancelled if the group was released through this try; AlreadyExists if a bundle is
  // held already; ResourceExhausted if the node cannot hold them now (`node_name` in the message).
  Status Reserve(const PlacementGroupId& id, const JobId& job, uint32_t round,
                 const std::vector<uint32_t>& indices, const std::vector<ResourceSet>& bundles,
                 ResourcePool& node, const std::string& node_name);

  // The bundles of `id` that a release through `round` would give back.
  std::vector<BundleKey> HeldThrough(const PlacementGroupId& id, uint32_t round) const;
  // Records the release and gives those bundles back to `node`.
  void Release(const PlacementGroupId& id, uint32_t round, ResourcePool& node);

  HeldBundle* Find(const BundleKey& key);
  // Groups of `job` with a bundle held here.
  std::set<PlacementGroupId> GroupsOf(const JobId& job) const;
  size_t size() const { return held_.size(); }  // bundles held

 private:
  std::map<BundleKey, HeldBundle> held_;
  std::map<PlacementGroupId, uint32_t> released_;  // group -> last try released
  std::deque<PlacementGroupId> released_order_;    // oldest first
  size_t max_tombstones_;
};

}  // namespace cumulus
