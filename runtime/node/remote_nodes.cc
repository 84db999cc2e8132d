#include "runtime/node/remote_nodes.h"

#include <iterator>

namespace cumulus {

std::vector<NodeId> RemoteNodes::Update(const std::vector<NodeRecord>& nodes, const NodeId& self) {
  std::vector<NodeId> newly_dead;
  nodes_.clear();
  std::set<NodeId> in_view;
  for (auto& n : nodes) in_view.insert(n.id);
  for (auto it = ever_draining_.begin(); it != ever_draining_.end();) {
    it = in_view.count(*it) ? std::next(it) : ever_draining_.erase(it);
  }
  for (auto& n : nodes) {
    if (n.id == self) {
      self_draining_ = n.draining && n.state == NodeState::kAlive;
      continue;
    }
    NodeView v;
    v.id = n.id;
    v.total = n.total;
    v.available = n.available;
    v.labels = n.labels;
    v.alive = n.state == NodeState::kAlive;
    v.draining = n.draining;
    if (n.draining) ever_draining_.insert(n.id);
    nodes_[n.id] = v;
    core_addresses_[n.id] = n.core_address;
    if (n.state == NodeState::kDead && !past_ids_.count(n.id)) newly_dead.push_back(n.id);
  }
  return newly_dead;
}

bool RemoteNodes::DrainedAndGone(const NodeId& node) const {
  if (!ever_draining_.count(node)) return false;
  auto it = nodes_.find(node);
  return it == nodes_.end() || !it->second.alive;
}

void RemoteNodes::Renamed(const NodeId& old_id) {
  if (!old_id.IsNil()) past_ids_.insert(old_id);
}

ClusterSnapshot RemoteNodes::Snapshot(const NodeView& self, TimePoint now,
                                      bool include_unreachable) const {
  ClusterSnapshot s;
  s.local_node = self.id;
  s.nodes.push_back(self);
  for (auto& [id, v] : nodes_) {
    auto bad = unreachable_until_.find(id);
    if (!include_unreachable && bad != unreachable_until_.end() && bad->second > now) continue;
    s.nodes.push_back(v);
  }
  return s;
}

void RemoteNodes::Book(const NodeId& node, const ResourceSet& r, bool take) {
  auto v = nodes_.find(node);
  if (v == nodes_.end()) return;
  if (take) {
    if (v->second.available.Contains(r)) v->second.available.Subtract(r);
    return;
  }
  v->second.available.Add(r);
  if (!v->second.total.Contains(v->second.available)) v->second.available = v->second.total;
}

std::string RemoteNodes::CoreAddress(const NodeId& node) const {
  auto it = core_addresses_.find(node);
  return it == core_addresses_.end() ? std::string() : it->second;
}

std::vector<NodeId> RemoteNodes::AliveNodes() const {
  std::vector<NodeId> out;
  for (auto& [id, v] : nodes_) {
    if (v.alive) out.push_back(id);
  }
  return out;
}

}  // namespace cumulus
