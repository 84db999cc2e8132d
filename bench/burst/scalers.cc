#include "bench/burst/scalers.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "scheduler/autoscale/idle_gaps.h"
#include "scheduler/autoscale/policy.h"

namespace cumulus::burst {

namespace {

// The pending pods that nodes booting do not cover (first fit onto their capacity). With
// `one_each`, a booting node covers one pod.
std::vector<int> Uncovered(const ClusterView& v, bool one_each) {
  std::vector<Res> room;
  std::vector<const SimNode*> booting;
  for (const SimNode& n : v.nodes) {
    if (n.state == SimNode::kLaunching) {
      room.push_back(n.total);
      booting.push_back(&n);
    }
  }
  std::vector<char> taken(room.size(), 0);
  std::vector<int> out;
  for (int pod : v.pending) {
    const Pod& p = v.pods[pod];
    bool covered = false;
    for (size_t i = 0; i < room.size() && !covered; ++i) {
      if ((one_each && taken[i]) || !room[i].Fits(p.need) || !Accepts(p, booting[i]->model))
        continue;
      room[i] -= p.need;
      taken[i] = 1;
      covered = true;
    }
    if (!covered) out.push_back(pod);
  }
  return out;
}

// Terminates cloud nodes idle for `timeout` seconds; recheck when the next one would be.
void TerminateIdle(const ClusterView& v, int64_t timeout, Actions* a) {
  for (size_t i = 0; i < v.nodes.size(); ++i) {
    const SimNode& n = v.nodes[i];
    if (n.type < 0 || n.state != SimNode::kRunning || n.pods > 0) continue;
    if (v.now - n.idle_since >= timeout)
      a->terminate.push_back(static_cast<int>(i));
    else
      a->recheck = std::min(a->recheck, n.idle_since + timeout);
  }
}

bool TypeHolds(const CloudType& t, const Pod& p) {
  return t.res.Fits(p.need) && Accepts(p, t.model);
}

class BurstImmediately : public Scaler {
 public:
  Actions Round(const ClusterView& v) override {
    Actions a;
    for (int pod : Uncovered(v, true)) {
      int best = -1;
      for (size_t t = 0; t < v.types.size(); ++t) {
        if (TypeHolds(v.types[t], v.pods[pod]) &&
            (best < 0 || v.types[t].price_per_hour < v.types[best].price_per_hour))
          best = static_cast<int>(t);
      }
      if (best >= 0) a.launch.push_back(best);
    }
    TerminateIdle(v, 0, &a);
    return a;
  }
};

// Packs `pods` (in order) first fit into a fresh node of `type`; returns those it holds.
std::vector<int> PackInto(const ClusterView& v, int type, const std::vector<int>& pods, Res* left) {
  *left = v.types[type].res;
  std::vector<int> held;
  for (int pod : pods) {
    if (left->Fits(v.pods[pod].need) && Accepts(v.pods[pod], v.types[type].model)) {
      *left -= v.pods[pod].need;
      held.push_back(pod);
    }
  }
  return held;
}

class RayLike : public Scaler {
 public:
  Actions Round(const ClusterView& v) override {
    Actions a;
    std::vector<int> rest = Uncovered(v, false);
    int running = 0, launching = 0;
    for (const SimNode& n : v.nodes) {
      running += n.type >= 0 && n.state == SimNode::kRunning;
      launching += n.state == SimNode::kLaunching;
    }
    int allowed = std::max(5, running) - launching;
    while (!rest.empty() && static_cast<int>(a.launch.size()) < allowed) {
      int best = -1;
      std::tuple<bool, double, double> best_score;
      std::vector<int> best_held;
      for (size_t t = 0; t < v.types.size(); ++t) {
        Res left;
        std::vector<int> held = PackInto(v, static_cast<int>(t), rest, &left);
        if (held.empty()) continue;
        const Res& total = v.types[t].res;
        bool any_gpu = false;
        for (int pod : held) any_gpu |= v.pods[pod].need.gpu > 0;
        bool gpu_ok = total.gpu == 0 || any_gpu;
        std::vector<double> util;
        if (total.cpu) util.push_back(1.0 - static_cast<double>(left.cpu) / total.cpu);
        if (total.mem) util.push_back(1.0 - static_cast<double>(left.mem) / total.mem);
        if (total.gpu) util.push_back(1.0 - static_cast<double>(left.gpu) / total.gpu);
        double mn = *std::min_element(util.begin(), util.end());
        double mean = 0;
        for (double u : util) mean += u / util.size();
        auto score = std::make_tuple(gpu_ok, mn, mean);
        if (best < 0 || score > best_score) {
          best = static_cast<int>(t);
          best_score = score;
          best_held = held;
        }
      }
      if (best < 0) break;  // nothing left fits any type
      a.launch.push_back(best);
      std::vector<int> next;
      std::set_difference(rest.begin(), rest.end(), best_held.begin(), best_held.end(),
                          std::back_inserter(next));
      rest = std::move(next);
    }
    TerminateIdle(v, 5 * 60, &a);
    return a;
  }
};

class K8sEc2Like : public Scaler {
 public:
  Actions Round(const ClusterView& v) override {
    Actions a;
    std::vector<std::pair<int, Res>> opened;  // type, room left
    for (int pod : Uncovered(v, false)) {
      const Pod& p = v.pods[pod];
      bool placed = false;
      for (auto& [type, left] : opened) {
        if (left.Fits(p.need) && Accepts(p, v.types[type].model)) {
          left -= p.need;
          placed = true;
          break;
        }
      }
      if (placed) continue;
      for (size_t t = 0; t < v.types.size(); ++t) {
        if (!TypeHolds(v.types[t], p)) continue;
        Res left = v.types[t].res;
        left -= p.need;
        opened.emplace_back(static_cast<int>(t), left);
        a.launch.push_back(static_cast<int>(t));
        break;
      }
    }
    TerminateIdle(v, 55 * 60, &a);
    return a;
  }
};

class OurScaler : public Scaler {
 public:
  explicit OurScaler(const OurSettings& settings) : settings_(settings) {
    options_.max_drains_per_round = settings.max_drains_per_round;
  }

  Actions Round(const ClusterView& v) override {
    using namespace autoscale;
    if (types_.empty()) {
      for (const CloudType& t : v.types) {
        NodeType nt;
        nt.name = t.name;
        nt.resources = ToResources(t.res);
        nt.labels["site"] = "cloud";
        if (!t.model.empty()) nt.labels["gpu_model"] = t.model;
        nt.price_per_hour = t.price_per_hour;
        nt.boot_micros = t.boot_s * kMicrosPerSecond;
        nt.idle_timeout_micros = settings_.idle_timeout_s >= 0
                                     ? settings_.idle_timeout_s * kMicrosPerSecond
                                     : static_cast<int64_t>(settings_.idle_timeout_boots *
                                                            static_cast<double>(t.boot_s)) *
                                           kMicrosPerSecond;
        nt.learn_idle_timeout = settings_.learn_idle_timeout;
        nt.launch_after_waiting_micros =
            (settings_.launch_after_waiting_s >= 0 ? settings_.launch_after_waiting_s : t.boot_s) *
            kMicrosPerSecond;
        types_.push_back(nt);
      }
    }
    Snapshot s;
    s.now = v.now * kMicrosPerSecond;
    s.types = types_;
    s.idle_gaps = recorder_.Gaps();
    for (size_t i = 0; i < v.nodes.size(); ++i) {
      const SimNode& n = v.nodes[i];
      if (n.state == SimNode::kGone) continue;
      if (n.type < 0 && n.free == Res{}) continue;  // a full on-prem node holds nothing more
      Node node;
      node.id = std::to_string(i);
      node.total = ToResources(n.total);
      node.free = ToResources(n.free);
      node.labels["site"] = n.type < 0 ? "onprem" : "cloud";
      if (!n.model.empty()) node.labels["gpu_model"] = n.model;
      if (n.type >= 0) node.type = v.types[n.type].name;
      node.state = n.type < 0                       ? NodeState::kOnPrem
                   : n.state == SimNode::kLaunching ? NodeState::kLaunching
                   : n.state == SimNode::kDraining  ? NodeState::kDraining
                                                    : NodeState::kRunning;
      node.since = n.launched * kMicrosPerSecond;
      node.busy = n.pods > 0;
      node.idle_since = n.pods > 0 ? -1 : n.idle_since * kMicrosPerSecond;
      // A simulated node reports its drain done (and leaves) as soon as nothing runs on it.
      node.drained = n.state == SimNode::kDraining && n.pods == 0;
      s.nodes.push_back(std::move(node));
    }
    // Pending pods of one shape, one set of models and one arrival are one item with a count.
    std::map<std::tuple<Res, std::vector<std::string>, int64_t>, size_t> items;
    for (int pod : v.pending) {
      const Pod& p = v.pods[pod];
      auto [it, added] =
          items.emplace(std::make_tuple(p.need, p.models, p.arrival), s.demand.size());
      if (!added) {
        s.demand[it->second].count++;
        continue;
      }
      DemandItem d;
      d.id = "shape " + std::to_string(s.demand.size());
      d.bundles = {ToResources(p.need)};
      if (p.need.gpu > 0 && !p.models.empty()) {
        d.labels.in["gpu_model"] = std::set<std::string>(p.models.begin(), p.models.end());
      }
      d.since = (p.arrival - v.pods.front().arrival) * kMicrosPerSecond;  // on the view's clock
      s.demand.push_back(std::move(d));
    }
    Actions a;
    auto decided = Decide(s, options_);
    if (!decided.ok()) return a;  // cannot happen: the snapshot is built above
    recorder_.Observe(s, *decided);
    for (const Launch& l : decided->launches) {
      int type =
          static_cast<int>(std::find_if(types_.begin(), types_.end(),
                                        [&](const NodeType& t) { return t.name == l.type; }) -
                           types_.begin());
      for (int k = 0; k < l.count; ++k) a.launch.push_back(type);
    }
    for (const Drain& d : decided->drains) a.drain.push_back(std::stoi(d.node));
    for (const Termination& t : decided->terminations) a.terminate.push_back(std::stoi(t.node));
    if (decided->recheck_at != std::numeric_limits<int64_t>::max()) {
      a.recheck = (decided->recheck_at + kMicrosPerSecond - 1) / kMicrosPerSecond;
    }
    return a;
  }

 private:
  static ResourceSet ToResources(const Res& r) {
    ResourceSet out;
    out.SetUnits("CPU", r.cpu * (ResourceSet::kUnit / 1000));
    out.SetUnits("memory", r.mem * (int64_t{1} << 20) * ResourceSet::kUnit);
    out.SetUnits("GPU", r.gpu * (ResourceSet::kUnit / 1000));
    return out;
  }

  OurSettings settings_;
  autoscale::Options options_;
  autoscale::IdleGapRecorder recorder_;
  std::vector<autoscale::NodeType> types_;
};

}  // namespace

std::unique_ptr<Scaler> MakeOurScaler(const OurSettings& settings) {
  return std::make_unique<OurScaler>(settings);
}
std::unique_ptr<Scaler> MakeBurstImmediately() { return std::make_unique<BurstImmediately>(); }
std::unique_ptr<Scaler> MakeRayLike() { return std::make_unique<RayLike>(); }
std::unique_ptr<Scaler> MakeK8sEc2Like() { return std::make_unique<K8sEc2Like>(); }

}  // namespace cumulus::burst
