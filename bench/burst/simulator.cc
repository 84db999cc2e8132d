#include "bench/burst/simulator.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <tuple>

namespace cumulus::burst {

bool Accepts(const Pod& pod, const std::string& model) {
  if (pod.need.gpu == 0) return true;
  if (model.empty()) return false;
  return pod.models.empty() ||
         std::find(pod.models.begin(), pod.models.end(), model) != pod.models.end();
}

namespace {

class Replay {
 public:
  Replay(const std::vector<Pod>& pods, const std::vector<TraceNode>& onprem,
         const std::vector<CloudType>& types, Scaler* scaler, int64_t tick,
         const std::vector<bool>& countable)
      : pods_(pods), types_(types), scaler_(scaler), tick_(tick), countable_(countable) {
    for (const TraceNode& n : onprem) {
      SimNode s;
      s.total = s.free = n.total;
      s.model = n.model;
      nodes_.push_back(s);
      onprem_total_ += n.total.gpu;
      onprem_cpu_total_ += n.total.cpu;
    }
    use_gpu_ = onprem_total_ > 0;
    t0_ = pods.front().arrival;
    for (const Pod& p : pods) trace_end_ = std::max(trace_end_, p.arrival + p.duration - t0_);
    // Pods of the same shape and models fail together within one pass.
    std::map<std::pair<Res, std::vector<std::string>>, int> shapes;
    for (const Pod& p : pods) {
      shape_.push_back(
          shapes.emplace(std::make_pair(p.need, p.models), shapes.size()).first->second);
    }
    shape_count_ = shapes.size();
    start_.assign(pods.size(), -1);
  }

  SimResult Run();

 private:
  int64_t Now(size_t pod) const { return pods_[pod].arrival - t0_; }
  int64_t CeilTick(int64_t t) const { return (t + tick_ - 1) / tick_ * tick_; }
  void Advance(int64_t t);
  int BestFit(const Pod& p) const;
  void Schedule(int64_t t, size_t first_new);
  void Apply(const Actions& a, int64_t t);
  // Adds cloud node `i`'s cost from its last change until `t` to the idle or oversized cost.
  void Account(size_t i, int64_t t);

  const std::vector<Pod>& pods_;
  const std::vector<CloudType>& types_;
  Scaler* scaler_;
  int64_t tick_;
  const std::vector<bool>& countable_;
  std::vector<SimNode> nodes_;
  std::vector<int> shape_;
  size_t shape_count_ = 0;
  std::vector<int64_t> start_;
  std::vector<int> pending_;
  std::vector<std::vector<int>> on_;            // per node: the pods running on it
  std::vector<int64_t> accounted_;              // per node: until when Account has counted its cost
  using Event = std::tuple<int64_t, int, int>;  // time, node, pod (-1: the node is ready)
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  int64_t t0_ = 0, trace_end_ = 0, last_t_ = 0;
  int64_t onprem_total_ = 0, onprem_cpu_total_ = 0, onprem_used_ = 0;
  bool use_gpu_ = true;
  double used_integral_ = 0;
  SimResult r_;
};

void Replay::Advance(int64_t t) {
  int64_t until = std::min(t, trace_end_);
  if (until > last_t_) used_integral_ += static_cast<double>(onprem_used_) * (until - last_t_);
  last_t_ = std::max(last_t_, until);
}

void Replay::Account(size_t i, int64_t t) {
  const SimNode& n = nodes_[i];
  if (n.type < 0) return;
  if (on_.size() < nodes_.size()) {
    on_.resize(nodes_.size());
    accounted_.resize(nodes_.size(), -1);
  }
  if (accounted_[i] < 0) accounted_[i] = n.launched;
  double hours = static_cast<double>(t - accounted_[i]) / 3600.0;
  accounted_[i] = t;
  double price = types_[n.type].price_per_hour;
  if (on_[i].empty()) {
    r_.idle_cost += hours * price;
    return;
  }
  Res used = n.total;
  used -= n.free;
  double cheapest = price;
  for (const CloudType& c : types_) {
    if (c.price_per_hour >= cheapest || !c.res.Fits(used)) continue;
    bool accepted = true;
    for (int pod : on_[i]) accepted = accepted && Accepts(pods_[pod], c.model);
    if (accepted) cheapest = c.price_per_hour;
  }
  r_.oversized_cost += hours * (price - cheapest);
}

int Replay::BestFit(const Pod& p) const {
  int best = -1;
  std::tuple<bool, int64_t, int64_t> best_key;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const SimNode& n = nodes_[i];
    if (n.state != SimNode::kRunning || !n.free.Fits(p.need) || !Accepts(p, n.model)) continue;
    // On-prem first; CPU work on CPU nodes first; then the tightest fit.
    bool gpu_for_cpu = p.need.gpu == 0 && n.total.gpu > 0;
    auto key = std::make_tuple(gpu_for_cpu, n.free.gpu - p.need.gpu, n.free.cpu - p.need.cpu);
    if (n.type >= 0 && best >= 0 && nodes_[best].type < 0) break;  // on-prem found one
    if (best < 0 || key < best_key) {
      best = static_cast<int>(i);
      best_key = key;
    }
  }
  return best;
}

void Replay::Schedule(int64_t t, size_t first_new) {
  std::vector<char> failed(shape_count_, 0);
  std::vector<int> still;
  still.reserve(pending_.size());
  for (size_t k = 0; k < pending_.size(); ++k) {
    int pod = pending_[k];
    if (k < first_new || failed[shape_[pod]]) {
      still.push_back(pod);
      continue;
    }
    int node = BestFit(pods_[pod]);
    if (node < 0) {
      failed[shape_[pod]] = 1;
      still.push_back(pod);
      continue;
    }
    Account(node, t);
    SimNode& n = nodes_[node];
    if (n.type >= 0) on_[node].push_back(pod);
    n.free -= pods_[pod].need;
    n.pods++;
    n.idle_since = -1;
    if (n.type < 0) onprem_used_ += use_gpu_ ? pods_[pod].need.gpu : pods_[pod].need.cpu;
    start_[pod] = t;
    events_.emplace(t + pods_[pod].duration, node, pod);
  }
  pending_ = std::move(still);
}

void Replay::Apply(const Actions& a, int64_t t) {
  for (int type : a.launch) {
    SimNode n;
    n.type = type;
    n.total = n.free = types_[type].res;
    n.model = types_[type].model;
    n.state = SimNode::kLaunching;
    n.launched = t;
    nodes_.push_back(n);
    events_.emplace(t + types_[type].boot_s, static_cast<int>(nodes_.size() - 1), -1);
    r_.launches++;
  }
  for (int i : a.drain) {
    if (nodes_[i].type >= 0 && nodes_[i].state == SimNode::kRunning)
      nodes_[i].state = SimNode::kDraining;
  }
  for (int i : a.terminate) {
    SimNode& n = nodes_[i];
    if (n.type < 0 || n.state == SimNode::kGone || n.pods > 0) continue;  // never a busy node
    n.state = SimNode::kGone;
    n.ended = t;
  }
}

SimResult Replay::Run() {
  size_t next_pod = 0;
  int64_t next_round = kNever, t = 0;
  while (true) {
    t = next_round;
    if (next_pod < pods_.size()) t = std::min(t, Now(next_pod));
    if (!events_.empty()) t = std::min(t, std::get<0>(events_.top()));
    if (t == kNever) break;
    Advance(t);
    bool freed = false, arrived = false;
    while (!events_.empty() && std::get<0>(events_.top()) == t) {
      auto [when, node, pod] = events_.top();
      events_.pop();
      SimNode& n = nodes_[node];
      if (pod < 0) {  // booted
        if (n.state == SimNode::kLaunching) {
          n.state = SimNode::kRunning;
          n.idle_since = t;
          freed = true;
        }
        continue;
      }
      Account(node, t);
      if (n.type >= 0) on_[node].erase(std::find(on_[node].begin(), on_[node].end(), pod));
      n.free += pods_[pod].need;
      if (n.type < 0) onprem_used_ -= use_gpu_ ? pods_[pod].need.gpu : pods_[pod].need.cpu;
      if (--n.pods == 0) n.idle_since = t;
      freed = true;
    }
    size_t first_new = freed ? 0 : pending_.size();
    while (next_pod < pods_.size() && Now(next_pod) == t) {
      pending_.push_back(static_cast<int>(next_pod++));
      arrived = true;
    }
    Schedule(t, first_new);
    if (scaler_ && (freed || arrived)) next_round = std::min(next_round, CeilTick(t));
    if (scaler_ && t == next_round) {
      ClusterView view{t, nodes_, pods_, pending_, types_};
      Actions a = scaler_->Round(view);
      r_.rounds++;
      Apply(a, t);
      next_round = a.recheck == kNever ? kNever : CeilTick(std::max(a.recheck, t + 1));
    }
  }
  int64_t end = std::max(t == kNever ? last_t_ : t, trace_end_);
  for (const Pod& p : pods_) end = std::max(end, p.arrival - t0_);
  Advance(end);
  for (size_t i = 0; i < nodes_.size(); ++i)
    Account(i, nodes_[i].ended >= 0 ? nodes_[i].ended : end);
  for (const SimNode& n : nodes_) {
    if (n.type < 0) continue;
    double hours = static_cast<double>((n.ended >= 0 ? n.ended : end) - n.launched) / 3600.0;
    r_.cost += hours * types_[n.type].price_per_hour;
    r_.cloud_node_hours += hours;
  }
  std::vector<int64_t> waits;
  for (size_t i = 0; i < pods_.size(); ++i) {
    if (!countable_[i]) continue;
    if (start_[i] < 0) r_.never_started++;
    waits.push_back((start_[i] >= 0 ? start_[i] : end) - Now(i));
  }
  std::sort(waits.begin(), waits.end());
  if (!waits.empty()) {
    double sum = 0;
    for (int64_t w : waits) sum += static_cast<double>(w);
    r_.wait_mean_s = sum / static_cast<double>(waits.size());
    size_t rank = (waits.size() * 95 + 99) / 100;  // nearest rank
    r_.wait_p95_s = static_cast<double>(waits[std::max<size_t>(rank, 1) - 1]);
  }
  int64_t total = use_gpu_ ? onprem_total_ : onprem_cpu_total_;
  if (total > 0 && trace_end_ > 0) {
    r_.onprem_util =
        used_integral_ / (static_cast<double>(total) * static_cast<double>(trace_end_));
  }
  return r_;
}

}  // namespace

SimResult Simulate(const std::vector<Pod>& pods, const std::vector<TraceNode>& onprem,
                   const std::vector<CloudType>& types, Scaler* scaler, int64_t tick_s,
                   const std::vector<bool>& countable) {
  Replay replay(pods, onprem, types, scaler, tick_s, countable);
  return replay.Run();
}

}  // namespace cumulus::burst
