#include "runtime/node/remote_nodes.h"

#include <algorithm>

namespace cumulus {

namespace {

// Drops the bookings (node -> list) for which gone(node, booking) holds, and nodes left with none.
// True if any was dropped.
template <typename Booked, typename Gone>
bool DropBookings(Booked* booked, Gone gone) {
  bool dropped = false;
  for (auto it = booked->begin(); it != booked->end();) {
    auto& list = it->second;
    auto end =
        std::remove_if(list.begin(), list.end(), [&](const auto& b) { return gone(it->first, b); });
    dropped |= end != list.end();
    list.erase(end, list.end());
    it = list.empty() ? booked->erase(it) : std::next(it);
  }
  return dropped;
}

}  // namespace

std::vector<NodeId> RemoteNodes::Update(const std::vector<NodeRecord>& nodes, const NodeId& self) {
  std::vector<NodeId> newly_dead;
  nodes_.clear();
  reported_.clear();
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
    v.recovering = n.state == NodeState::kRecovering;
    v.draining = n.draining;
    if (n.draining) ever_draining_.insert(n.id);
    nodes_[n.id] = v;
    reported_[n.id] = n.available;
    core_addresses_[n.id] = n.core_address;
    if (n.state == NodeState::kDead && !past_ids_.count(n.id)) newly_dead.push_back(n.id);
  }
  // A booking ends once the node reports other free resources than when it was booked (its
  // own account counts the work), or with the node's record.
  DropBookings(&booked_, [&](const NodeId& node, const Booking& b) {
    auto now = reported_.find(node);
    return now == reported_.end() || !(b.reported == now->second);
  });
  // Bounded by the head's records: a node whose record is gone is forgotten here too.
  for (auto it = ever_draining_.begin(); it != ever_draining_.end();) {
    it = nodes_.count(*it) ? std::next(it) : ever_draining_.erase(it);
  }
  return newly_dead;
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
    s.nodes.back().available = FreeAfterBookings(id, v, now);
  }
  return s;
}

ResourceSet RemoteNodes::FreeAfterBookings(const NodeId& node, const NodeView& view,
                                           TimePoint now) const {
  ResourceSet free = view.available;
  auto b = booked_.find(node);
  if (b == booked_.end()) return free;
  for (const Booking& k : b->second) {
    if (k.until <= now) continue;
    for (auto& [name, units] : k.resources.units()) {  // down to nothing, never below
      free.SetUnits(name, std::max<int64_t>(0, free.GetUnits(name) - units));
    }
  }
  return free;
}

void RemoteNodes::Saw(const NodeId& node, const ResourceSet& free, TimePoint now) {
  auto v = nodes_.find(node);
  if (v == nodes_.end()) return;
  ResourceSet shown = FreeAfterBookings(node, v->second, now), surplus;
  for (auto& [name, units] : shown.units()) {
    if (units > free.GetUnits(name)) surplus.SetUnits(name, units - free.GetUnits(name));
  }
  if (!surplus.units().empty()) Book(node, surplus, /*take=*/true, now);
}

bool RemoteNodes::EndBookings(TimePoint now) {
  return DropBookings(&booked_, [&](const NodeId&, const Booking& b) { return b.until <= now; });
}

void RemoteNodes::Book(const NodeId& node, const ResourceSet& r, bool take, TimePoint now) {
  auto v = nodes_.find(node);
  if (v == nodes_.end()) return;
  if (take) {
    booked_[node].push_back(Booking{r, reported_[node], now + kBookingLife});
    return;
  }
  auto b = booked_.find(node);
  if (b != booked_.end()) {
    auto same = std::find_if(b->second.begin(), b->second.end(),
                             [&](const Booking& k) { return k.resources == r; });
    if (same != b->second.end()) {
      b->second.erase(same);
      if (b->second.empty()) booked_.erase(b);
      return;
    }
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
