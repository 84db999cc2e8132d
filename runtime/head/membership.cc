#include "runtime/head/membership.h"

#include "runtime/base/logging.h"
#include "runtime/net/tcp.h"

namespace cumulus {

const char* NodeStateName(NodeState state) {
  switch (state) {
    case NodeState::kAlive:
      return "ALIVE";
    case NodeState::kDead:
      return "DEAD";
    case NodeState::kRecovering:
      return "RECOVERING";
  }
  return "?";
}

const char* NodeStateName(const NodeRecord& node) {
  if (node.state == NodeState::kDead && node.left) return "STOPPED";
  if (node.state == NodeState::kAlive && node.draining) return "DRAINING";
  return NodeStateName(node.state);
}

Status Membership::Register(NodeRecord node) {
  auto it = nodes_.find(node.id);
  if (it != nodes_.end() && it->second.state == NodeState::kDead && !it->second.left) {
    return Status::NotFound("node " + node.id.Hex() + " was declared dead (" +
                            it->second.death_reason + "); it must rejoin with a new node id");
  }
  if (!node.metrics_address.empty()) {
    // It becomes a Prometheus target as published: one no scraper can dial is dropped here.
    if (auto at = ParseHostPort(node.metrics_address); !at.ok()) {
      CUMULUS_LOG(WARN) << "node " << node.id.Hex()
                        << " registers without its metrics address: " << at.status().message();
      node.metrics_address.clear();
    }
  }
  int64_t now_micros = clock_.WallMicros();
  node.state = NodeState::kAlive;
  node.registered_micros = it != nodes_.end() ? it->second.registered_micros : now_micros;
  node.last_heartbeat_micros = now_micros;
  node.death_micros = 0;
  node.death_reason.clear();
  node.left = false;
  // Draining is the head's decision, not the node's: a node registering again keeps it (and
  // what it last said it waits for, until its next heartbeat).
  node.draining = it != nodes_.end() && it->second.draining && it->second.state != NodeState::kDead;
  node.drain_note = node.draining ? it->second.drain_note : "";
  uint64_t old_version = it != nodes_.end() ? it->second.view_version : 0;
  NodeRecord& stored = nodes_[node.id] = node;
  stored.view_version = old_version;
  Changed(stored);
  liveness_[node.id] = Liveness{clock_.Now(), std::nullopt};
  return Status();
}

bool Membership::Heartbeat(const NodeId& id, const ResourceSet& available,
                           DemandList pending_demand, const std::string& drain_note,
                           uint32_t work) {
  auto live = liveness_.find(id);
  if (live == liveness_.end()) return false;
  live->second.last_heartbeat = clock_.Now();
  live->second.disconnected_at.reset();
  NodeRecord& node = nodes_.at(id);
  bool changed = node.state != NodeState::kAlive || !(node.available == available) ||
                 node.pending_demand != pending_demand || node.work != work ||
                 (node.draining && node.drain_note != drain_note);
  if (node.draining) node.drain_note = drain_note;
  node.state = NodeState::kAlive;
  node.available = available;
  node.pending_demand = std::move(pending_demand);
  node.work = work;
  node.last_heartbeat_micros = clock_.WallMicros();
  if (changed) Changed(node);
  return true;
}

bool Membership::Left(const NodeId& id, const std::string& why) {
  auto live = liveness_.find(id);
  if (live == liveness_.end()) return false;
  NodeRecord& node = nodes_.at(id);
  node.state = NodeState::kDead;
  node.left = true;
  node.death_reason = "stopped: " + why;
  node.death_micros = clock_.WallMicros();
  node.available = ResourceSet();
  node.work = 0;
  Changed(node);
  liveness_.erase(live);
  return true;
}

Status Membership::Drain(const NodeId& id) {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) return Status::NotFound("the head knows no node " + id.Hex());
  NodeRecord& node = it->second;
  if (node.state == NodeState::kDead) {
    return Status::InvalidArgument("node " + id.Hex() + " is " + NodeStateName(node) +
                                   " already: there is nothing to drain");
  }
  if (node.draining) return Status();
  node.draining = true;
  node.drain_note = "asked to drain";
  Changed(node);
  return Status();
}

void Membership::Disconnected(const NodeId& id) {
  auto live = liveness_.find(id);
  if (live != liveness_.end()) live->second.disconnected_at = clock_.Now();
}

void Membership::Recover(NodeRecord node) {
  if (node.state != NodeState::kDead) {
    node.state = NodeState::kRecovering;
    liveness_[node.id] = Liveness{clock_.Now(), std::nullopt};
  }
  auto old = nodes_.find(node.id);
  if (old != nodes_.end()) by_version_.erase(old->second.view_version);
  NodeRecord& stored = nodes_[node.id] = std::move(node);
  stored.view_version = 0;
  Changed(stored);
}

void Membership::Changed(NodeRecord& node) {
  if (node.view_version != 0) by_version_.erase(node.view_version);
  node.view_version = ++version_;
  by_version_[node.view_version] = node.id;
}

std::vector<const NodeRecord*> Membership::ChangedSince(uint64_t since) const {
  std::vector<const NodeRecord*> out;
  for (auto it = by_version_.upper_bound(since); it != by_version_.end(); ++it) {
    out.push_back(&nodes_.at(it->second));
  }
  return out;
}

void Membership::ForgiveStall(Duration d) {
  for (auto& [id, l] : liveness_) {
    l.last_heartbeat += d;
    if (l.disconnected_at) *l.disconnected_at += d;
  }
}

std::vector<NodeId> Membership::Tick() {
  std::vector<NodeId> died;
  TimePoint now = clock_.Now();
  for (auto it = liveness_.begin(); it != liveness_.end();) {
    const Liveness& l = it->second;
    std::string reason;
    if (l.disconnected_at && now - *l.disconnected_at >= options_.disconnect_grace) {
      reason = "its connection to the head closed and it did not reconnect";
    } else if (now - l.last_heartbeat >= options_.heartbeat_timeout) {
      reason = "no heartbeat for " +
               std::to_string(
                   std::chrono::duration_cast<std::chrono::milliseconds>(now - l.last_heartbeat)
                       .count()) +
               " ms";
    }
    if (reason.empty()) {
      ++it;
      continue;
    }
    NodeRecord& node = nodes_.at(it->first);
    node.state = NodeState::kDead;
    node.death_reason = reason;
    node.death_micros = clock_.WallMicros();
    node.available = ResourceSet();
    node.work = 0;
    Changed(node);
    died.push_back(it->first);
    it = liveness_.erase(it);
  }
  return died;
}

const NodeRecord* Membership::Find(const NodeId& id) const {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : &it->second;
}

size_t Membership::alive_count() const {
  size_t n = 0;
  for (auto& [id, l] : liveness_) n += nodes_.at(id).state == NodeState::kAlive;
  return n;
}

}  // namespace cumulus
