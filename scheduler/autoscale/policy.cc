#include "scheduler/autoscale/policy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>

#include "scheduler/autoscale/bins.h"
#include "scheduler/autoscale/idle_gaps.h"

namespace cumulus::autoscale {

int64_t BackoffUntil(const LaunchHistory& h, const Options& o) {
  if (h.failures_in_a_row <= 0) return 0;
  int64_t wait = o.backoff_base_micros;
  for (int i = 1; i < h.failures_in_a_row && wait < o.backoff_max_micros; ++i) wait *= 2;
  return h.last_failure + std::min(wait, o.backoff_max_micros);
}

namespace {

std::string Minutes(int64_t micros) {
  int64_t s = micros / kMicrosPerSecond;
  if (s < 120) return std::to_string(s) + "s";
  return std::to_string(s / 60) + "m";
}

std::string Dollars(double d) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "$%.2f", d);
  return buf;
}

// One pending copy of a DemandItem.
struct Unit {
  size_t item;
  Reason reason = Reason::kNoTypeFits;
  std::string detail;
};

// The state of one round: what exists, what is opened, what blocks.
class Round {
 public:
  Round(const Snapshot& s, const Options& o) : s_(s), o_(o) {}

  Result<Decision> Run();

 private:
  Status Validate();
  void CountNodes();
  void FitOntoExisting(std::vector<Unit>& units);
  // FitBundles for demand item `i` onto nodes that boot or are opened this round: CPU-only
  // work that a CPU type could hold is kept off GPU nodes there, as a type is chosen for it.
  bool FitNew(std::vector<Bin>& bins, size_t i);
  void LaunchFor(std::vector<Unit>& units);
  // Picks the type to open for `item`, or says why none (`*reason`, `*detail`).
  int ChooseType(const DemandItem& item, const std::vector<Unit>& units, size_t next,
                 Reason* reason, std::string* detail);
  bool MayOpen(int type, Reason* reason, std::string* detail);
  void Open(int type);
  void KeepMinCounts();
  void ScaleDown();
  void Report(const std::vector<Unit>& units);

  double HourlyNow() const {
    double sum = 0;
    for (size_t t = 0; t < s_.types.size(); ++t) {
      sum += s_.types[t].price_per_hour * (alive_[t] + opened_[t]);
    }
    return sum;
  }

  const Snapshot& s_;
  const Options& o_;
  Decision d_;
  std::map<std::string, int> type_index_;
  std::vector<int> running_, launching_, draining_, idle_, opened_, alive_, unreachable_;
  std::vector<int64_t> backoff_until_;
  std::vector<int64_t> idle_timeout_;  // per type: configured or learned (idle_gaps.h)
  std::vector<bool> learned_;          // per type: idle_timeout_ came from the gaps
  std::vector<std::string> backoff_why_;
  std::vector<Bin> free_;                             // on-prem nodes, then running cloud nodes
  std::vector<Bin> booting_;                          // launching nodes (not timed out)
  std::vector<Bin> planned_;                          // nodes opened this round
  std::vector<std::vector<std::string>> opened_for_;  // per type: ids the launches are for
  std::vector<bool> cpu_work_;  // per demand item: CPU-only, and a CPU type could hold it
  double committed_ = 0;        // least cost of the launches decided this round
  int running_cloud_ = 0, launching_now_ = 0;
};

Status Round::Validate() {
  if (s_.version != kSnapshotVersion) {
    return Status::InvalidArgument("autoscaler snapshot version " + std::to_string(s_.version) +
                                   " is not " + std::to_string(kSnapshotVersion) +
                                   ": the head and its policy are of different builds");
  }
  for (size_t t = 0; t < s_.types.size(); ++t) {
    if (!type_index_.emplace(s_.types[t].name, static_cast<int>(t)).second) {
      return Status::InvalidArgument("node type " + s_.types[t].name + " is given twice");
    }
  }
  for (const Node& n : s_.nodes) {
    if (n.state != NodeState::kOnPrem && !type_index_.count(n.type)) {
      return Status::InvalidArgument("node " + n.id + " is of unknown type '" + n.type + "'");
    }
  }
  for (const DemandItem& item : s_.demand) {
    if (item.count < 1 || item.bundles.empty()) {
      return Status::InvalidArgument("pending item " + item.id + " has no copies or no bundles");
    }
  }
  return Status();
}

void Round::CountNodes() {
  size_t n = s_.types.size();
  running_.assign(n, 0);
  launching_.assign(n, 0);
  draining_.assign(n, 0);
  unreachable_.assign(n, 0);
  idle_.assign(n, 0);
  opened_.assign(n, 0);
  alive_.assign(n, 0);
  backoff_until_.assign(n, 0);
  backoff_why_.assign(n, "");
  idle_timeout_.assign(n, 0);
  learned_.assign(n, false);
  for (size_t t = 0; t < n; ++t) {
    bool learned = false;
    idle_timeout_[t] = EffectiveIdleTimeout(s_.types[t], s_, {}, &learned);
    learned_[t] = learned;
  }
  opened_for_.assign(n, {});
  for (size_t t = 0; t < n; ++t) {
    auto h = s_.launch_history.find(s_.types[t].name);
    if (h == s_.launch_history.end()) continue;
    backoff_until_[t] = BackoffUntil(h->second, o_);
    backoff_why_[t] = h->second.last_error;
  }
  for (const Node& node : s_.nodes) {
    if (node.state == NodeState::kOnPrem) {
      free_.push_back(Bin{node.id, -1, node.labels, node.total, node.free});
      continue;
    }
    int t = type_index_.at(node.type);
    const NodeType& type = s_.types[t];
    alive_[t]++;
    if (node.state == NodeState::kLaunching) {
      int64_t timeout = std::max(
          static_cast<int64_t>(o_.launch_timeout_factor * static_cast<double>(type.boot_micros)),
          o_.min_launch_timeout_micros);
      if (s_.now - node.since >= timeout) {
        d_.terminations.push_back({node.id, "launch timed out after " + Minutes(timeout)});
        alive_[t]--;
        // Backed off at once, as the monitor will record it.
        LaunchHistory h;
        auto it = s_.launch_history.find(type.name);
        if (it != s_.launch_history.end()) h = it->second;
        h.failures_in_a_row++;
        h.last_failure = s_.now;
        backoff_until_[t] = BackoffUntil(h, o_);
        backoff_why_[t] = "launch timed out";
        continue;
      }
      d_.recheck_at = std::min(d_.recheck_at, node.since + timeout);
      launching_[t]++;
      launching_now_++;
      booting_.push_back(Bin{node.id, t, type.labels, type.resources, type.resources});
    } else if (node.state == NodeState::kRunning && node.unreachable) {
      unreachable_[t]++;  // in alive_ (max, budget): no capacity, no min count, kept as it is
    } else if (node.state == NodeState::kRunning) {
      running_[t]++;
      running_cloud_++;
      if (node.idle_since >= 0 && !node.busy) idle_[t]++;
      free_.push_back(Bin{node.id, t, node.labels, node.total, node.free});
    } else {
      draining_[t]++;
    }
  }
  for (size_t t = 0; t < n; ++t) {
    if (backoff_until_[t] > s_.now) d_.recheck_at = std::min(d_.recheck_at, backoff_until_[t]);
  }
}

bool Round::FitNew(std::vector<Bin>& bins, size_t i) {
  const DemandItem& item = s_.demand[i];
  if (!cpu_work_[i]) return FitBundles(bins, item.bundles, item.strategy, item.labels);
  std::vector<size_t> cpu;
  std::vector<Bin> sub;
  for (size_t k = 0; k < bins.size(); ++k) {
    if (bins[k].total.Has("GPU")) continue;
    cpu.push_back(k);
    sub.push_back(bins[k]);
  }
  if (!FitBundles(sub, item.bundles, item.strategy, item.labels)) return false;
  for (size_t k = 0; k < cpu.size(); ++k) bins[cpu[k]] = std::move(sub[k]);
  return true;
}

void Round::FitOntoExisting(std::vector<Unit>& units) {
  size_t onprem = 0;
  while (onprem < free_.size() && free_[onprem].type < 0) ++onprem;
  for (Unit& u : units) {
    const DemandItem& item = s_.demand[u.item];
    if (!item.pinned_to.empty()) {  // waits for its node: takes no room, launches nothing
      u.reason = Reason::kPinnedToNode;
      u.detail = "it may run only on node " + item.pinned_to.substr(0, 8) +
                 " (hard node affinity, or forwarded there and kept); a new node cannot run it";
      continue;
    }
    std::vector<Bin> before(free_.begin() + onprem, free_.end());
    if (FitBundles(free_, item.bundles, item.strategy, item.labels)) {
      bool cloud = false;
      for (size_t j = onprem; j < free_.size(); ++j) {
        cloud |= !(free_[j].free == before[j - onprem].free);
      }
      u.reason = cloud ? Reason::kFitsCloudNow : Reason::kFitsOnPremNow;
      u.detail = cloud ? "free resources of a running cloud node will run it"
                       : "free on-prem resources will run it";
      continue;
    }
    if (FitNew(booting_, u.item)) {
      u.reason = Reason::kBootInProgress;
      u.detail = "nodes launching will run it";
      continue;
    }
    u.reason = Reason::kLaunching;  // not yet: LaunchFor decides
  }
}

bool Round::MayOpen(int t, Reason* reason, std::string* detail) {
  const NodeType& type = s_.types[t];
  if (backoff_until_[t] > s_.now) {
    *reason = Reason::kBackoff;
    *detail = "backoff of type " + type.name + " until +" + Minutes(backoff_until_[t] - s_.now) +
              (backoff_why_[t].empty() ? "" : " (" + backoff_why_[t] + ")");
    return false;
  }
  if (alive_[t] + opened_[t] >= type.max_count) {
    *reason = Reason::kTypeMaxReached;
    *detail = "type " + type.name + " is at its max of " + std::to_string(type.max_count);
    return false;
  }
  double hourly = HourlyNow() + type.price_per_hour;
  if (hourly > s_.budget_per_hour + 1e-9) {
    *reason = Reason::kBudgetPerHour;
    *detail = "a " + type.name + " node would bring the cost to " + Dollars(hourly) +
              "/h, the budget is " + Dollars(s_.budget_per_hour) + "/h";
    return false;
  }
  double least = type.price_per_hour * static_cast<double>(type.boot_micros + idle_timeout_[t]) /
                 static_cast<double>(60 * kMicrosPerMinute);
  if (s_.spend + committed_ + least > s_.budget_total + 1e-9) {
    *reason = Reason::kBudgetTotal;
    *detail = "a " + type.name + " node would pass the total budget of " +
              Dollars(s_.budget_total) + " (spent " + Dollars(s_.spend) + ")";
    return false;
  }
  int allowed = std::max(o_.min_launch_batch,
                         static_cast<int>(std::floor(s_.upscaling_speed * running_cloud_)));
  int launching = launching_now_;
  for (int c : opened_) launching += c;
  if (launching + 1 > allowed) {
    *reason = Reason::kUpscalingSpeed;
    *detail = std::to_string(launching) + " node(s) launching, the upscaling speed allows " +
              std::to_string(allowed);
    return false;
  }
  return true;
}

int Round::ChooseType(const DemandItem& item, const std::vector<Unit>& units, size_t next,
                      Reason* reason, std::string* detail) {
  ResourceSet sum = SumOf(item.bundles);
  ResourceSet largest = item.bundles[0];
  for (const ResourceSet& b : item.bundles) {
    if (SizeKey(b) > SizeKey(largest)) largest = b;
  }
  // What one new node must hold: the whole group for STRICT_PACK, else its largest bundle
  // (PACK prefers types that hold it whole).
  bool whole = item.bundles.size() == 1 || item.strategy == GroupStrategy::kStrictPack;
  const ResourceSet& need = whole ? sum : largest;
  LabelSelector without_model = item.labels;
  without_model.equals.erase("gpu_model");
  without_model.in.erase("gpu_model");
  without_model.not_equals.erase("gpu_model");
  without_model.not_in.erase("gpu_model");

  std::vector<int> fit;
  bool label_match = false, model_blocked = false;
  for (size_t t = 0; t < s_.types.size(); ++t) {
    const NodeType& type = s_.types[t];
    bool big_enough = type.resources.Contains(need);
    if (!item.labels.Matches(type.labels)) {
      if (big_enough && without_model.Matches(type.labels)) model_blocked = true;
      continue;
    }
    label_match = true;
    if (big_enough) fit.push_back(static_cast<int>(t));
  }
  if (fit.empty()) {
    if (model_blocked) {
      *reason = Reason::kGpuModelNotAccepted;
      *detail = "the types with room for it have GPU models " + item.labels.ToString() +
                " does not accept";
    } else if (!label_match) {
      *reason = Reason::kLabelsExcludeCloud;
      *detail = "no cloud type has the labels " + item.labels.ToString();
    } else {
      *reason = Reason::kNoTypeFits;
      *detail = "no cloud type can hold " + need.ToString();
    }
    return -1;
  }
  // Never a GPU type for CPU-only work when a CPU type could hold it.
  if (!sum.Has("GPU")) {
    std::vector<int> cpu_only;
    for (int t : fit) {
      if (!s_.types[t].resources.Has("GPU")) cpu_only.push_back(t);
    }
    if (!cpu_only.empty()) fit = cpu_only;
  }
  std::vector<int> open;
  Reason first_reason = Reason::kNoTypeFits;
  std::vector<std::string> whys;  // each fitting type's, the first's reason the verdict's
  for (int t : fit) {
    Reason r;
    std::string why;
    if (MayOpen(t, &r, &why)) {
      open.push_back(t);
    } else {
      if (whys.empty()) first_reason = r;
      whys.push_back(std::move(why));
    }
  }
  if (open.empty()) {
    // Every type that could hold it, each with why not (at most 3 named; the rest counted).
    *reason = first_reason;
    constexpr size_t kNamed = 3;
    std::string all;
    for (size_t k = 0; k < whys.size() && k < kNamed; ++k) all += (k ? "; " : "") + whys[k];
    if (whys.size() > kNamed) all += "; and " + std::to_string(whys.size() - kNamed) + " more";
    *detail = all;
    return -1;
  }
  // Cheapest per waiting copy it would hold: fill a fresh node of each type with this item and
  // the next single-bundle copies its labels admit (a bounded look-ahead), then least waste.
  constexpr size_t kLookAhead = 64;
  int best = -1;
  double best_cost = 0, best_waste = 0;
  for (int t : open) {
    const NodeType& type = s_.types[t];
    std::vector<Bin> fresh{Bin{"", t, type.labels, type.resources, type.resources}};
    int held = 0;
    if (whole) {
      if (!FitBundles(fresh, item.bundles, item.strategy, item.labels)) continue;
    } else if (!FitBundles(fresh, {largest}, GroupStrategy::kPack, item.labels)) {
      continue;
    }
    held++;
    for (size_t k = next + 1; k < units.size() && k <= next + kLookAhead; ++k) {
      const DemandItem& other = s_.demand[units[k].item];
      if (units[k].reason != Reason::kLaunching || other.bundles.size() != 1) continue;
      if (cpu_work_[units[k].item] && type.resources.Has("GPU")) continue;  // as FitNew
      if (FitBundles(fresh, other.bundles, other.strategy, other.labels)) held++;
    }
    double cost = type.price_per_hour / held;
    double waste = WasteOf(type.resources, fresh[0].free);
    if (best < 0 || cost < best_cost - 1e-12 ||
        (std::abs(cost - best_cost) <= 1e-12 && waste < best_waste)) {
      best = t;
      best_cost = cost;
      best_waste = waste;
    }
  }
  return best;
}

void Round::Open(int t) {
  const NodeType& type = s_.types[t];
  planned_.push_back(Bin{"", t, type.labels, type.resources, type.resources});
  opened_[t]++;
  committed_ += type.price_per_hour * static_cast<double>(type.boot_micros + idle_timeout_[t]) /
                static_cast<double>(60 * kMicrosPerMinute);
}

void Round::LaunchFor(std::vector<Unit>& units) {
  for (size_t i = 0; i < units.size(); ++i) {
    Unit& u = units[i];
    if (u.reason != Reason::kLaunching) continue;
    const DemandItem& item = s_.demand[u.item];
    size_t before = planned_.size();
    if (FitNew(planned_, u.item)) {
      u.detail = "on a node launched this round";
      continue;
    }
    // Open nodes until the item fits them (a STRICT_SPREAD group may need several) or none may.
    auto saved_planned = planned_;
    auto saved_opened = opened_;
    double saved_committed = committed_;
    bool placed = false;
    Reason reason = Reason::kNoTypeFits;
    std::string detail = "no cloud type can hold it";
    for (size_t k = 0; k < item.bundles.size() && !placed; ++k) {
      int t = ChooseType(item, units, i, &reason, &detail);
      if (t < 0) break;
      // Rent only once waiting has lasted the type's launch_after_waiting: work that on-prem
      // frees room for sooner never pays for a node.
      int64_t launch_at = item.since + s_.types[t].launch_after_waiting_micros;
      if (k == 0 && s_.now < launch_at) {
        reason = Reason::kWaitingBriefly;
        detail = "waited " + Minutes(s_.now - item.since) + " of the " +
                 Minutes(s_.types[t].launch_after_waiting_micros) + " before a " +
                 s_.types[t].name + " node is launched";
        d_.recheck_at = std::min(d_.recheck_at, launch_at);
        break;
      }
      Open(t);
      placed = FitNew(planned_, u.item);
    }
    if (!placed) {
      planned_ = std::move(saved_planned);
      opened_ = std::move(saved_opened);
      committed_ = saved_committed;
      u.reason = reason;
      u.detail = detail;
      continue;
    }
    for (size_t j = before; j < planned_.size(); ++j) {
      opened_for_[planned_[j].type].push_back(item.id);
    }
    u.detail = "on a node launched this round";
  }
}

void Round::KeepMinCounts() {
  for (size_t t = 0; t < s_.types.size(); ++t) {
    while (alive_[t] + opened_[t] - draining_[t] - unreachable_[t] < s_.types[t].min_count) {
      Reason r;
      std::string why;
      if (!MayOpen(static_cast<int>(t), &r, &why)) break;
      Open(static_cast<int>(t));
      opened_for_[t].push_back("min count " + std::to_string(s_.types[t].min_count));
    }
  }
}

void Round::ScaleDown() {
  struct Candidate {
    const Node* node;
    int type;
  };
  std::vector<Candidate> idle;
  std::set<std::string> needed;  // running nodes pending work was fitted onto
  for (const Bin& b : free_) {
    if (b.used) needed.insert(b.node);
  }
  for (const Node& node : s_.nodes) {
    if (node.state == NodeState::kOnPrem || node.state == NodeState::kLaunching) continue;
    bool quiet = !node.busy && !node.holds_sole_copy;
    if (node.state == NodeState::kDraining) {
      // Only the node's own word ends it: a quiet view may predate the drain (snapshot.h).
      if (node.drained && quiet) {
        d_.terminations.push_back({node.id, "drained, and gone from the cluster"});
      }
      continue;
    }
    if (!quiet || node.idle_since < 0 || needed.count(node.id)) continue;
    int t = type_index_.at(node.type);
    int64_t timeout_at = node.idle_since + idle_timeout_[t];
    if (s_.now < timeout_at) {
      d_.recheck_at = std::min(d_.recheck_at, timeout_at);
      continue;
    }
    idle.push_back({&node, t});
  }
  std::stable_sort(idle.begin(), idle.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.node->idle_since != b.node->idle_since) return a.node->idle_since < b.node->idle_since;
    return s_.types[a.type].price_per_hour > s_.types[b.type].price_per_hour;
  });
  std::vector<int> kept(s_.types.size());
  for (size_t t = 0; t < s_.types.size(); ++t) kept[t] = running_[t] + launching_[t];
  int drains = 0;
  for (const Candidate& c : idle) {
    if (drains >= o_.max_drains_per_round) {
      d_.recheck_at = std::min(d_.recheck_at, s_.now + 1);  // the rest next round
      break;
    }
    if (kept[c.type] - 1 < s_.types[c.type].min_count) continue;
    kept[c.type]--;
    drains++;
    d_.drains.push_back({c.node->id, "idle for " + Minutes(s_.now - c.node->idle_since) +
                                         ", timeout " + Minutes(idle_timeout_[c.type]) +
                                         (learned_[c.type] ? " (learned)" : "")});
  }
  if (!d_.drains.empty()) d_.recheck_at = std::min(d_.recheck_at, s_.now + 1);
}

void Round::Report(const std::vector<Unit>& units) {
  // Verdicts per item in the order of `demand`, copies with the same reason together.
  std::vector<std::vector<const Unit*>> by_item(s_.demand.size());
  for (const Unit& u : units) by_item[u.item].push_back(&u);
  for (size_t i = 0; i < s_.demand.size(); ++i) {
    for (const Unit* u : by_item[i]) {
      if (!d_.verdicts.empty() && d_.verdicts.back().id == s_.demand[i].id &&
          d_.verdicts.back().reason == u->reason && d_.verdicts.back().detail == u->detail) {
        d_.verdicts.back().count++;
      } else {
        d_.verdicts.push_back({s_.demand[i].id, 1, u->reason, u->detail});
      }
    }
  }
  for (size_t t = 0; t < s_.types.size(); ++t) {
    if (opened_[t] > 0) {
      std::string why;
      std::set<std::string> seen;
      size_t shown = 0;
      for (const std::string& id : opened_for_[t]) {
        if (!seen.insert(id).second) continue;
        if (shown++ < 3) why += (why.empty() ? "" : ", ") + id;
      }
      if (shown > 3) why += " and " + std::to_string(shown - 3) + " more";
      d_.launches.push_back({s_.types[t].name, opened_[t], "for " + why});
    }
    TypeReport r;
    r.type = s_.types[t].name;
    r.running = running_[t];
    r.launching = launching_[t];
    r.draining = draining_[t];
    r.unreachable = unreachable_[t];
    r.idle = idle_[t];
    r.launches = opened_[t];
    r.backoff_until = backoff_until_[t] > s_.now ? backoff_until_[t] : 0;
    r.price_per_hour_now = s_.types[t].price_per_hour * alive_[t];
    d_.types.push_back(r);
  }
}

Result<Decision> Round::Run() {
  CUMULUS_RETURN_IF_ERROR(Validate());
  CountNodes();
  std::vector<Unit> units;
  for (size_t i = 0; i < s_.demand.size(); ++i) {
    for (int c = 0; c < s_.demand[i].count; ++c) units.push_back(Unit{i, Reason::kNoTypeFits, {}});
  }
  // Largest first (first-fit decreasing), then in the order given.
  std::vector<SizeKey> keys;
  for (const DemandItem& item : s_.demand) keys.emplace_back(SumOf(item.bundles));
  std::stable_sort(units.begin(), units.end(),
                   [&](const Unit& a, const Unit& b) { return keys[a.item] > keys[b.item]; });
  for (const DemandItem& item : s_.demand) {
    ResourceSet sum = SumOf(item.bundles);
    bool held = false;
    for (const NodeType& t : s_.types) {
      held = held || (!t.resources.Has("GPU") && item.labels.Matches(t.labels) &&
                      t.resources.Contains(sum));
    }
    cpu_work_.push_back(!sum.Has("GPU") && held);
  }
  FitOntoExisting(units);
  LaunchFor(units);
  KeepMinCounts();
  ScaleDown();
  Report(units);
  return std::move(d_);
}

}  // namespace

Result<Decision> Decide(const Snapshot& snapshot, const Options& options) {
  Round round(snapshot, options);
  return round.Run();
}

}  // namespace cumulus::autoscale
