#include "runtime/autoscaler/snapshot_builder.h"

#include <set>

namespace cumulus {

namespace {

int64_t Micros(double seconds) { return static_cast<int64_t>(seconds * 1e6); }

// The last listed state of instance `id`, or nullptr.
const Instance* Listed(const MonitorView& view, const std::string& provider,
                       const std::string& id) {
  auto it = view.listed.find(provider);
  if (it == view.listed.end()) return nullptr;
  for (auto& in : it->second) {
    if (in.id == id) return &in;
  }
  return nullptr;
}

}  // namespace

std::vector<Instance> TrustedListing(const std::vector<Instance>& listed,
                                     int64_t list_started_micros, const MonitorBooks& books,
                                     const std::map<std::string, int64_t>& booked_micros) {
  std::vector<Instance> out;
  out.reserve(listed.size());
  for (const Instance& in : listed) {
    bool ended = in.state == InstanceState::kTerminated || in.state == InstanceState::kFailed;
    auto booked = books.instances.find(in.id);
    if (ended && booked != books.instances.end()) {
      int64_t since = booked->second.launched_micros;
      auto answered = booked_micros.find(in.id);
      if (answered != booked_micros.end()) since = std::max(since, answered->second);
      if (since >= list_started_micros) continue;  // the List began before the Launch ended
    }
    out.push_back(in);
  }
  return out;
}

std::vector<autoscale::NodeType> PolicyTypes(const ClusterConfig& config) {
  std::vector<autoscale::NodeType> out;
  for (auto& t : config.node_types) {
    autoscale::NodeType p;
    p.name = t.name;
    p.resources = t.resources;
    p.labels = t.labels;
    if (!t.gpu_model.empty()) p.labels["gpu_model"] = t.gpu_model;
    p.price_per_hour = t.price_per_hour;
    p.boot_micros = Micros(t.boot_time_s);
    p.min_count = static_cast<int>(t.min_count);
    p.max_count = static_cast<int>(t.max_count);
    p.spot = t.spot;
    p.idle_timeout_micros = Micros(t.idle_timeout_s);
    p.learn_idle_timeout = t.learn_idle_timeout;
    p.launch_after_waiting_micros = Micros(t.launch_after_waiting_s);
    out.push_back(std::move(p));
  }
  return out;
}

BuiltSnapshot BuildSnapshot(const ClusterConfig& config, const MonitorBooks& books,
                            const MonitorView& view, std::map<std::string, int64_t>* idle_since,
                            std::map<std::string, int64_t>* demand_since) {
  std::set<std::string> demand_seen;
  BuiltSnapshot built;
  autoscale::Snapshot& s = built.snapshot;
  s.now = view.now;
  s.types = PolicyTypes(config);
  s.spend = books.TotalSpend();
  s.budget_per_hour = config.budget.per_hour;
  s.budget_total = config.budget.total;
  s.upscaling_speed = config.upscaling_speed;
  for (auto& [name, t] : books.types) s.launch_history[name] = t.history;

  std::set<std::string> alive_hex;
  std::set<std::string> recovering;  // instances whose node a restarted head waits to hear from
  // Instances with a node record that died without a drain less than the grace ago: the grace
  // holds for the instance, whatever older DEAD records of it (an earlier cut-off) say.
  std::set<std::string> dying;
  for (auto& n : view.nodes) {
    auto its = n.labels.find(kInstanceIdLabel);
    if (its != n.labels.end()) {
      if (n.state == NodeState::kRecovering) recovering.insert(its->second);
      if (n.state == NodeState::kDead && !n.draining &&
          view.now - n.death_micros < view.dead_grace_micros)
        dying.insert(its->second);
    }
    if (n.state != NodeState::kAlive) continue;
    std::string hex = n.id.Hex();
    alive_hex.insert(hex);
    autoscale::Node node;
    node.id = hex;
    node.total = n.total;
    node.free = n.available;
    node.labels = n.labels;
    // Busy while it holds any work, whatever its resources say: an actor or task that takes no
    // resources leaves them all free, and a node drained then would wait for it forever.
    node.busy = !(n.available == n.total) || n.work > 0;
    if (n.draining) {
      // Marked DRAINING on the head: it takes no new work (no capacity for demand). While it
      // is alive it is never `drained`, whatever its resources or note say ("asked to drain",
      // "", "waiting for ...", a hand-off): they may come from a heartbeat older than the
      // drain, or than work sent to it just before. It is done when it leaves (below).
      node.free = ResourceSet();
      node.holds_sole_copy = n.drain_note.rfind("waiting for", 0) == 0;
    }
    if (node.busy) {
      idle_since->erase(hex);
      node.idle_since = -1;
    } else {
      node.idle_since = idle_since->emplace(hex, view.now).first->second;
    }
    auto type = n.labels.find(kNodeTypeLabel);
    auto instance = n.labels.find(kInstanceIdLabel);
    if (type != n.labels.end() && config.FindType(type->second)) {
      node.type = type->second;
      node.state = autoscale::NodeState::kRunning;
      if (instance != n.labels.end()) {
        built.instance_of[hex] = instance->second;
        built.registered.insert(instance->second);
        auto in = books.instances.find(instance->second);
        if ((in != books.instances.end() && in->second.draining) || n.draining)
          node.state = autoscale::NodeState::kDraining;
      }
    }
    s.nodes.push_back(std::move(node));

    for (auto& d : view.demand_settled ? n.pending_demand : DemandList{}) {
      autoscale::DemandItem item;
      // Named for who waits when the work said (a trial), else for the node it waits on.
      item.id = (d.purpose.empty() ? "node " + hex.substr(0, 8) : d.purpose) + " {" +
                d.shape.ToString() + "}" + (d.selector.empty() ? "" : " on " + d.selector) +
                (d.pinned_to.empty() ? "" : " pinned to " + d.pinned_to.substr(0, 8));
      item.bundles = {d.shape};
      auto selector = ParseLabelSelector(d.selector);
      if (selector.ok()) item.labels = *selector;
      item.count = static_cast<int>(d.count);
      item.pinned_to = d.pinned_to;
      item.since = view.now;
      if (demand_since) {
        std::string key = hex + " " + item.id;
        demand_seen.insert(key);
        item.since = demand_since->emplace(key, view.now).first->second;
      }
      if (item.count > 0) s.demand.push_back(std::move(item));
    }
  }
  for (auto it = idle_since->begin(); it != idle_since->end();) {
    it = alive_hex.count(it->first) ? std::next(it) : idle_since->erase(it);
  }
  // Demand no longer reported has ended its wait (while demand is unsettled, nothing is known).
  if (demand_since && view.demand_settled) {
    for (auto it = demand_since->begin(); it != demand_since->end();) {
      it = demand_seen.count(it->first) ? std::next(it) : demand_since->erase(it);
    }
  }

  // Launched nodes that were draining and are gone: a node leaves once its own drain is done
  // (nothing runs, its objects handed on; or it was stopped: nothing runs there either), or it
  // died meanwhile (crashed, killed, cut off: the head declared it dead, so nothing runs there
  // for the cluster). Its instance is still in the books: kDraining and `drained`, so the policy
  // terminates it, and no launch failure is counted against its type. The same for a launched
  // node that registered and then died or stopped without a drain, once it has been dead for
  // the grace. One record per instance, and none while another record of it is ALIVE or
  // RECOVERING.
  for (auto& n : view.nodes) {
    if (n.state != NodeState::kDead) continue;
    auto type = n.labels.find(kNodeTypeLabel);
    auto instance = n.labels.find(kInstanceIdLabel);
    if (type == n.labels.end() || instance == n.labels.end() || !config.FindType(type->second))
      continue;
    auto in = books.instances.find(instance->second);
    if (in == books.instances.end() || built.registered.count(instance->second) ||
        recovering.count(instance->second))
      continue;
    bool drain = n.draining || in->second.draining;
    if (!drain && !in->second.registered) continue;  // not its node: a launch is not a death
    if (!drain && dying.count(instance->second)) {
      // Died without a drain a moment ago: a node cut off rejoins under a new id when it
      // reconnects. Not launching meanwhile (below), and not terminated yet.
      continue;
    }
    if (!drain) {
      // It registered, then died or stopped without a drain (killed, crashed, cut off, `cumulus
      // stop`): gone, not a launch that never came up. Its instance is terminated (the provider
      // frees it) and no launch failure is counted against its type.
      built.gone[instance->second] = n.death_reason;
    }
    autoscale::Node node;
    node.id = n.id.Hex();
    node.type = type->second;
    node.state = autoscale::NodeState::kDraining;
    node.total = n.total;
    node.labels = n.labels;
    node.drained = true;
    built.instance_of[node.id] = instance->second;
    built.registered.insert(instance->second);
    s.nodes.push_back(std::move(node));
  }

  // Instances launched and not registered yet: capacity that is booting. One whose node
  // registered once is not launching whatever its node is now (gone: above). One whose node is
  // recovering after a head restart, dead for less than the grace, or missing from the view is
  // still a machine the provider runs and bills: `unreachable` (draining, if it was), so that it
  // counts against its type's max and the budget (a second machine is not launched for a type
  // at its max while the first may come back) but keeps no min count, and is never placed on,
  // drained or terminated on this view.
  for (auto& [id, in] : books.instances) {
    const NodeTypeConfig* type = config.FindType(in.type);
    if (!type) continue;
    const Instance* listed = Listed(view, in.provider, id);
    bool ended = listed && (listed->state == InstanceState::kFailed ||
                            listed->state == InstanceState::kTerminated);
    if (in.registered && !built.registered.count(id)) {
      built.registered.insert(id);
      if (ended) continue;  // the provider says the machine is gone: it bills no more
      autoscale::Node node;
      node.id = id;
      node.type = in.type;
      // Draining before its node went away: still draining (terminated once it has left).
      node.state = in.draining ? autoscale::NodeState::kDraining : autoscale::NodeState::kRunning;
      node.unreachable = !in.draining;
      node.total = type->resources;
      node.labels = type->labels;
      node.busy = true;
      node.idle_since = -1;
      built.instance_of[id] = id;
      s.nodes.push_back(std::move(node));
      continue;
    }
    if (built.registered.count(id) || ended) continue;
    autoscale::Node node;
    node.id = id;
    node.type = in.type;
    node.state = autoscale::NodeState::kLaunching;
    node.since = in.launched_micros;
    built.instance_of[id] = id;
    s.nodes.push_back(std::move(node));
  }
  for (auto& [type, count] : view.in_flight_launches) {
    if (!config.FindType(type)) continue;
    for (int i = 0; i < count; ++i) {
      autoscale::Node node;
      node.id = "asking/" + type + "/" + std::to_string(i);
      node.type = type;
      node.state = autoscale::NodeState::kLaunching;
      auto since = view.in_flight_since.find(type);
      node.since = since == view.in_flight_since.end() ? view.now : since->second;
      s.nodes.push_back(std::move(node));
    }
  }
  return built;
}

}  // namespace cumulus
