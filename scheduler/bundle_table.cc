#include "scheduler/bundle_table.h"

#include <algorithm>
#include <string>

namespace cumulus {

Status BundleTable::Reserve(const PlacementGroupId& id, const JobId& job, uint32_t round,
                            const std::vector<uint32_t>& indices,
                            const std::vector<ResourceSet>& bundles, ResourcePool& node,
                            const std::string& node_name) {
  auto released = released_.find(id);
  if (released != released_.end() && released->second >= round) {
    return Status::Cancelled("placement group " + id.Hex() + " was released (try " +
                             std::to_string(round) + ")");
  }
  ResourceSet sum;
  for (uint32_t i : indices) {
    if (i >= bundles.size()) {
      return Status::InvalidArgument("bundle " + std::to_string(i) + " is not described");
    }
    if (held_.count({id, i})) {
      return Status::AlreadyExists("bundle " + std::to_string(i) + " of placement group " +
                                   id.Hex() + " is already held here");
    }
    sum.Add(bundles[i]);
  }
  if (!node.Fits(sum)) {
    return Status::ResourceExhausted("node " + node_name + " has " + node.available().ToString() +
                                     " free; the bundles need " + sum.ToString());
  }
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> taken;  // index, GPU ids
  for (uint32_t i : indices) {
    auto got = node.Acquire(bundles[i]);
    if (!got.ok()) {
      for (auto& [j, gpus] : taken) node.Release(bundles[j], gpus);
      return Status::ResourceExhausted("node " + node_name + " cannot hold the GPUs of bundle " +
                                       std::to_string(i) + ": " + got.status().message());
    }
    taken.emplace_back(i, std::move(*got));
  }
  for (auto& [i, gpus] : taken) {
    HeldBundle b(bundles[i], std::move(gpus));
    b.group = id;
    b.index = i;
    b.job = job;
    b.round = round;
    held_.emplace(BundleKey{id, i}, std::move(b));
  }
  return Status();
}

std::vector<BundleKey> BundleTable::HeldThrough(const PlacementGroupId& id, uint32_t round) const {
  std::vector<BundleKey> out;
  for (auto it = held_.lower_bound({id, 0}); it != held_.end() && it->first.first == id; ++it) {
    if (it->second.round <= round) out.push_back(it->first);
  }
  return out;
}

void BundleTable::Release(const PlacementGroupId& id, uint32_t round, ResourcePool& node) {
  auto [tomb, fresh] = released_.emplace(id, round);
  if (fresh) {
    released_order_.push_back(id);
    if (released_order_.size() > max_tombstones_) {
      released_.erase(released_order_.front());
      released_order_.pop_front();
    }
  } else {
    tomb->second = std::max(tomb->second, round);
  }
  for (auto it = held_.lower_bound({id, 0}); it != held_.end() && it->first.first == id;) {
    HeldBundle& b = it->second;
    if (b.round > round) {
      ++it;
      continue;
    }
    node.Release(b.pool.total(), b.gpu_ids);
    it = held_.erase(it);
  }
}

HeldBundle* BundleTable::Find(const BundleKey& key) {
  auto it = held_.find(key);
  return it == held_.end() ? nullptr : &it->second;
}

std::set<PlacementGroupId> BundleTable::GroupsOf(const JobId& job) const {
  std::set<PlacementGroupId> out;
  for (auto& [key, b] : held_) {
    if (b.job == job) out.insert(key.first);
  }
  return out;
}

}  // namespace cumulus
