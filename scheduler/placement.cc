#include "scheduler/placement.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

namespace cumulus {

namespace {

// How full `node` would be with `demand` on it: the largest used fraction over the resources the
// demand asks for (or over all of them for an empty demand). 0 = idle, 1 = full.
double LoadAfter(const NodeView& node, const ResourceSet& demand) {
  double worst = 0;
  const auto& names = demand.empty() ? node.total.units() : demand.units();
  for (auto& [name, unused] : names) {
    int64_t total = node.total.GetUnits(name);
    if (total <= 0) continue;
    int64_t used = total - node.available.GetUnits(name) + demand.GetUnits(name);
    worst = std::max(worst, static_cast<double>(used) / static_cast<double>(total));
  }
  return worst;
}

// How many copies of `demand` the node would hold with nothing on it (its size for this work).
double CopiesWhenEmpty(const NodeView& node, const ResourceSet& demand) {
  double fewest = std::numeric_limits<double>::infinity();
  for (auto& [name, units] : demand.units()) {
    if (units > 0) {
      fewest = std::min(
          fewest, static_cast<double>(node.total.GetUnits(name)) / static_cast<double>(units));
    }
  }
  return fewest;
}

bool Rented(const NodeView& node) { return node.labels.count(kNodeTypeLabel) > 0; }

// Narrows `nodes` to those `keep` accepts if there are any; false (and `nodes` as it was) if none.
template <typename Keep>
bool KeepIfAny(std::vector<const NodeView*>* nodes, Keep keep) {
  std::vector<const NodeView*> kept;
  for (const NodeView* n : *nodes) {
    if (keep(n)) kept.push_back(n);
  }
  if (kept.empty()) return false;
  *nodes = std::move(kept);
  return true;
}

// Why no node's total resources fit `demand` (for the infeasible message).
std::string MissingReason(const std::vector<const NodeView*>& matching, const ResourceSet& demand) {
  for (auto& [name, units] : demand.units()) {
    int64_t best = 0;
    for (const NodeView* n : matching) best = std::max(best, n->total.GetUnits(name));
    if (best < units) {
      ResourceSet asked, largest;
      asked.SetUnits(name, units);
      largest.SetUnits(name, best);
      return "it asks for " + asked.ToString() + " but the largest matching node has " +
             (best ? largest.ToString() : "no " + name);
    }
  }
  return "no single matching node has all of " + demand.ToString();
}

}  // namespace

bool LabelSelector::Matches(const Labels& labels) const {
  for (auto& [k, v] : equals) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (auto& [k, v] : not_equals) {
    auto it = labels.find(k);
    if (it != labels.end() && it->second == v) return false;
  }
  for (auto& [k, values] : in) {
    auto it = labels.find(k);
    if (it == labels.end() || !values.count(it->second)) return false;
  }
  for (auto& [k, values] : not_in) {
    auto it = labels.find(k);
    if (it != labels.end() && values.count(it->second)) return false;
  }
  return true;
}

std::string LabelSelector::ToString() const {
  std::string out;
  auto add = [&](const std::string& term) { out += (out.empty() ? "" : ",") + term; };
  auto set_term = [&](const std::string& k, const char* op, const std::set<std::string>& values) {
    std::string list;
    for (auto& v : values) list += (list.empty() ? "" : ",") + v;
    add(k + " " + op + " (" + list + ")");
  };
  for (auto& [k, v] : equals) add(k + "=" + v);
  for (auto& [k, v] : not_equals) add(k + "!=" + v);
  for (auto& [k, values] : in) set_term(k, "in", values);
  for (auto& [k, values] : not_in) set_term(k, "notin", values);
  return out;
}

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits a selector at the commas outside parentheses. Empty when the parentheses do not balance.
std::optional<std::vector<std::string_view>> SplitTerms(std::string_view spec) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= spec.size(); ++i) {
    char c = i < spec.size() ? spec[i] : ',';
    if (c == '(') ++depth;
    if (c == ')' && --depth < 0) return std::nullopt;
    if (c == ',' && depth == 0) {
      out.push_back(spec.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) return std::nullopt;
  return out;
}

// "KEY in (A,B)" / "KEY notin (A,B)" (`term` trimmed, with a '('). Sets `*negate`.
Result<std::pair<std::string, std::set<std::string>>> ParseSetTerm(std::string_view term,
                                                                   bool* negate) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("label selector '" + std::string(term) + "': " + why +
                                   " (e.g. gpu_model in (A100,H100))");
  };
  size_t open = term.find('(');
  if (term.back() != ')') return bad("a set term must end with ')'");
  std::string_view head = Trim(term.substr(0, open));
  size_t space = head.find_last_of(" \t");
  if (space == std::string_view::npos)
    return bad("a set term must be KEY in (...) or KEY notin (...)");
  std::string_view op = head.substr(space + 1), key = Trim(head.substr(0, space));
  if (op != "in" && op != "notin") return bad("unknown operator '" + std::string(op) + "'");
  *negate = op == "notin";
  std::pair<std::string, std::set<std::string>> out;
  out.first = std::string(key);
  for (std::string_view v : SplitList(term.substr(open + 1, term.size() - open - 2), ',')) {
    v = Trim(v);
    // ParseLabels checks the key and each value with the rules of labels.
    auto one = ParseLabels(std::string(key) + "=" + std::string(v));
    if (!one.ok()) return bad(one.status().message());
    if (!out.second.insert(std::string(v)).second)
      return bad("'" + std::string(v) + "' is listed twice");
  }
  return out;
}

}  // namespace

Result<LabelSelector> ParseLabelSelector(std::string_view spec) {
  LabelSelector sel;
  if (spec.empty()) return sel;
  auto terms = SplitTerms(spec);
  if (!terms) {
    return Status::InvalidArgument("label selector '" + std::string(spec) +
                                   "': parentheses do not balance");
  }
  for (std::string_view item : *terms) {
    item = Trim(item);
    if (item.find('(') != std::string_view::npos) {
      bool negate = false;
      CUMULUS_ASSIGN_OR_RETURN(auto term, ParseSetTerm(item, &negate));
      auto& target = negate ? sel.not_in : sel.in;
      if (target.count(term.first))
        return Status::InvalidArgument("label selector repeats " + term.first);
      target.insert(std::move(term));
      continue;
    }
    bool negate = false;
    size_t op = item.find("!=");
    if (op != std::string_view::npos) {
      negate = true;
    } else {
      op = item.find('=');
    }
    if (op == std::string_view::npos || op == 0) {
      return Status::InvalidArgument("label selector '" + std::string(item) +
                                     "' must be KEY=VALUE, KEY!=VALUE, KEY in (V1,V2) or "
                                     "KEY notin (V1,V2)");
    }
    std::string rewritten = std::string(Trim(item.substr(0, op))) + "=" +
                            std::string(Trim(item.substr(op + (negate ? 2 : 1))));
    CUMULUS_ASSIGN_OR_RETURN(Labels one, ParseLabels(rewritten));
    auto& target = negate ? sel.not_equals : sel.equals;
    for (auto& [k, v] : one) {
      if (target.count(k)) return Status::InvalidArgument("label selector repeats " + k);
      target[k] = v;
    }
  }
  return sel;
}

PlacementDecision PlaceTask(const ClusterSnapshot& cluster, const PlacementRequest& req) {
  PlacementDecision d;
  std::vector<const NodeView*> matching, feasible, ready;
  for (const NodeView& n : cluster.nodes) {
    if (!n.alive && n.recovering && IsPinned(req) && n.id == req.affinity_node &&
        req.labels.Matches(n.labels) && n.total.Contains(req.demand)) {
      d.kind = PlacementDecision::kWait;
      d.reason = "waiting for node " + n.id.Hex() +
                 ", which the head has not heard from since the head restarted";
      return d;
    }
    if (!n.alive || !req.labels.Matches(n.labels)) continue;
    matching.push_back(&n);
    if (!n.total.Contains(req.demand)) continue;
    feasible.push_back(&n);
    bool pinned_here = IsPinned(req) && n.id == req.affinity_node;
    if (n.draining && !pinned_here) continue;  // no new work, but counted as feasible
    if (n.available.Contains(req.demand)) ready.push_back(&n);
  }
  if (matching.empty()) {
    d.reason = req.labels.empty() ? "the cluster has no alive node"
                                  : "no alive node has the labels " + req.labels.ToString();
    return d;
  }
  if (feasible.empty()) {
    d.reason = "no node can ever run it: " + MissingReason(matching, req.demand);
    return d;
  }

  if (req.strategy == PlacementStrategy::kNodeAffinity) {
    auto is_target = [&](const NodeView* n) { return n->id == req.affinity_node; };
    auto target = std::find_if(feasible.begin(), feasible.end(), is_target);
    if (target != feasible.end()) {
      if (std::any_of(ready.begin(), ready.end(), is_target)) {
        d.kind = PlacementDecision::kPlace;
        d.node = req.affinity_node;
        return d;
      }
      if (!req.affinity_soft) {
        d.kind = PlacementDecision::kWait;
        d.reason = "waiting for " + req.demand.ToString() + " to be free on node " +
                   req.affinity_node.Hex();
        return d;
      }
    } else if (!req.affinity_soft) {
      d.reason = "node " + req.affinity_node.Hex() + " is not alive, does not match " +
                 (req.labels.empty() ? std::string("the request") : req.labels.ToString()) +
                 ", or is too small for " + req.demand.ToString();
      return d;
    }
  }

  if (ready.empty()) {
    size_t draining = static_cast<size_t>(std::count_if(
        feasible.begin(), feasible.end(), [](const NodeView* n) { return n->draining; }));
    d.kind = PlacementDecision::kWait;
    d.reason = draining == feasible.size()
                   ? "waiting for " + req.demand.ToString() + ": only draining node(s) could run it"
                   : "waiting for " + req.demand.ToString() + ": " +
                         std::to_string(feasible.size() - draining) +
                         " node(s) could run it, none has it free now";
    return d;
  }

  const NodeView* choice = nullptr;
  if (req.strategy != PlacementStrategy::kSpread) {
    // Data locality first: the node that already holds the most argument bytes.
    uint64_t most = 0;
    for (const NodeView* n : ready) {
      auto it = req.argument_bytes.find(n->id);
      if (it != req.argument_bytes.end() && it->second > most) {
        most = it->second;
        choice = n;
      }
    }
  }
  // Nodes that cost nothing more come first (on-prem first, as the autoscaler's policy assumes):
  // past data locality, work goes to a node the autoscaler did not launch when one can run it now,
  // and rented nodes are used only when none can. Among rented nodes work is packed (below), so
  // the others go idle and are removed (Ray #21870: spread work keeps every node just busy enough).
  // SPREAD still spreads over every node: that is what it asks for.
  bool rented_only = false;
  if (!choice && req.strategy != PlacementStrategy::kSpread) {
    rented_only = !KeepIfAny(&ready, [](const NodeView* n) { return !Rented(*n); });
    // GPU nodes are kept for GPU work (as in Ray's default policy, scheduler_avoid_gpu_nodes):
    // CPU-only work goes to a node without GPUs when one can run it now, so it neither takes the
    // CPUs GPU work needs nor keeps a dearer node busy (the autoscaler launches CPU types for it).
    if (!req.demand.Has("GPU")) {
      KeepIfAny(&ready, [](const NodeView* n) { return !n->total.Has("GPU"); });
    }
    for (const NodeView* n : ready) {
      if (n->id == cluster.local_node) choice = n;
    }
  }
  if (!choice && req.strategy == PlacementStrategy::kSpread) {
    // The least loaded; ties go round the nodes after `spread_after`.
    double least = std::numeric_limits<double>::infinity();
    for (const NodeView* n : ready) least = std::min(least, LoadAfter(*n, req.demand));
    const NodeView* first = nullptr;  // lowest id among the least loaded (the wrap-around)
    for (const NodeView* n : ready) {
      if (LoadAfter(*n, req.demand) > least + 1e-9) continue;
      if (!first || n->id < first->id) first = n;
      if (req.spread_after < n->id && (!choice || n->id < choice->id)) choice = n;
    }
    if (!choice) choice = first;
  }
  if (!choice && rented_only) {
    // The tightest fit: the fullest once it runs this, then the node holding fewest copies of it.
    choice =
        *std::min_element(ready.begin(), ready.end(), [&](const NodeView* a, const NodeView* b) {
          double la = LoadAfter(*a, req.demand), lb = LoadAfter(*b, req.demand);
          if (std::abs(la - lb) > 1e-9) return la > lb;
          double ca = CopiesWhenEmpty(*a, req.demand), cb = CopiesWhenEmpty(*b, req.demand);
          return ca != cb ? ca < cb : a->id < b->id;
        });
  }
  if (!choice) {
    choice =
        *std::min_element(ready.begin(), ready.end(), [&](const NodeView* a, const NodeView* b) {
          double la = LoadAfter(*a, req.demand), lb = LoadAfter(*b, req.demand);
          return la != lb ? la < lb : a->id < b->id;
        });
  }
  d.kind = PlacementDecision::kPlace;
  d.node = choice->id;
  return d;
}

namespace {

// Tries to place every bundle on `nodes` (whose `available` is the capacity to use). Returns the
// node per bundle, or an empty vector.
std::vector<NodeId> AssignBundles(std::vector<NodeView> nodes,
                                  const std::vector<ResourceSet>& bundles, GroupStrategy strategy) {
  std::vector<NodeId> out(bundles.size());
  if (bundles.empty()) return out;
  if (strategy == GroupStrategy::kStrictPack || strategy == GroupStrategy::kPack) {
    ResourceSet sum;
    for (auto& b : bundles) sum.Add(b);
    // The least loaded that holds them all; among rented nodes the fullest (PlaceGroup tries the
    // nodes not rented alone first, so rented ones compete here only with nodes that cannot).
    auto key = [&](const NodeView& n) {
      double load = LoadAfter(n, sum);
      return std::make_pair(Rented(n), Rented(n) ? -load : load);
    };
    const NodeView* best = nullptr;
    for (auto& n : nodes) {
      if (n.available.Contains(sum) && (!best || key(n) < key(*best))) best = &n;
    }
    if (best) {
      std::fill(out.begin(), out.end(), best->id);
      return out;
    }
    if (strategy == GroupStrategy::kStrictPack) return {};
  }
  // Largest bundles first (by their largest share of the biggest node's total), each on a node
  // chosen by the strategy.
  auto share = [&](const ResourceSet& bundle) {
    double worst = 0;
    for (auto& [name, units] : bundle.units()) {
      int64_t biggest = 0;
      for (auto& n : nodes) biggest = std::max(biggest, n.total.GetUnits(name));
      worst = std::max(worst, biggest > 0 ? static_cast<double>(units) / biggest : 1e9);
    }
    return worst;
  };
  std::vector<size_t> order(bundles.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return share(bundles[a]) > share(bundles[b]); });
  std::map<NodeId, int> used;
  for (size_t i : order) {
    NodeView* best = nullptr;
    for (auto& n : nodes) {
      if (!n.available.Contains(bundles[i])) continue;
      bool taken = used.count(n.id) > 0;
      if (strategy == GroupStrategy::kStrictSpread && taken) continue;
      if (!best) {
        best = &n;
        continue;
      }
      bool best_taken = used.count(best->id) > 0;
      if (strategy == GroupStrategy::kPack) {
        // Prefer a node already in the group, then the fullest that fits.
        if (taken != best_taken) {
          if (taken) best = &n;
          continue;
        }
        if (LoadAfter(n, bundles[i]) > LoadAfter(*best, bundles[i])) best = &n;
      } else {
        // Prefer a node not in the group yet, then the least loaded.
        if (taken != best_taken) {
          if (!taken) best = &n;
          continue;
        }
        if (LoadAfter(n, bundles[i]) < LoadAfter(*best, bundles[i])) best = &n;
      }
    }
    if (!best) return {};
    best->available.Subtract(bundles[i]);
    used[best->id]++;
    out[i] = best->id;
  }
  return out;
}

}  // namespace

const char* GroupStrategyName(GroupStrategy s) {
  switch (s) {
    case GroupStrategy::kPack:
      return "PACK";
    case GroupStrategy::kSpread:
      return "SPREAD";
    case GroupStrategy::kStrictPack:
      return "STRICT_PACK";
    case GroupStrategy::kStrictSpread:
      return "STRICT_SPREAD";
  }
  return "?";
}

PlacementDecision PlaceGroup(const ClusterSnapshot& cluster,
                             const std::vector<ResourceSet>& bundles, GroupStrategy strategy,
                             const LabelSelector& labels) {
  PlacementDecision d;
  std::vector<NodeView> now, ever;
  for (const NodeView& n : cluster.nodes) {
    if (!n.alive || !labels.Matches(n.labels)) continue;
    if (!n.draining) now.push_back(n);  // no new bundles on a draining node; counted below
    NodeView empty = n;
    empty.available = n.total;
    ever.push_back(empty);
  }
  if (ever.empty()) {
    d.reason = labels.empty() ? "the cluster has no alive node"
                              : "no alive node has the labels " + labels.ToString();
    return d;
  }
  std::vector<NodeId> placed = AssignBundles(now, bundles, strategy);
  if (!placed.empty() &&
      (strategy == GroupStrategy::kPack || strategy == GroupStrategy::kStrictPack)) {
    // On nodes not rented alone if they hold the group on as few nodes as every node would
    // (PACK does not trade togetherness for cost); SPREAD groups spread over every node.
    std::vector<NodeView> owned;
    for (const NodeView& n : now) {
      if (!Rented(n)) owned.push_back(n);
    }
    if (!owned.empty() && owned.size() < now.size()) {
      std::vector<NodeId> kept = AssignBundles(owned, bundles, strategy);
      auto distinct = [](const std::vector<NodeId>& v) {
        return std::set<NodeId>(v.begin(), v.end()).size();
      };
      if (!kept.empty() && distinct(kept) <= distinct(placed)) placed = std::move(kept);
    }
  }
  if (!placed.empty() || bundles.empty()) {
    d.kind = PlacementDecision::kPlace;
    d.bundle_nodes = placed;
    return d;
  }
  std::string what = std::to_string(bundles.size()) + " bundle(s) " + GroupStrategyName(strategy);
  // Infeasible only when a necessary condition fails; a greedy packing that misses is not proof.
  std::string impossible;
  for (const ResourceSet& b : bundles) {
    bool fits_somewhere = std::any_of(ever.begin(), ever.end(),
                                      [&](const NodeView& n) { return n.total.Contains(b); });
    if (!fits_somewhere) impossible = "no matching node can ever hold a bundle of " + b.ToString();
  }
  if (impossible.empty() && strategy == GroupStrategy::kStrictPack) {
    ResourceSet sum;
    for (auto& b : bundles) sum.Add(b);
    if (!std::any_of(ever.begin(), ever.end(),
                     [&](const NodeView& n) { return n.total.Contains(sum); })) {
      impossible = "no matching node can ever hold all of " + sum.ToString();
    }
  }
  if (impossible.empty() &&
      (strategy == GroupStrategy::kPack || strategy == GroupStrategy::kSpread)) {
    // The group over every matching node, each empty. Copies of one bundle: how many each node
    // holds, summed (exact); different bundles: their sum against the nodes' totals summed.
    bool same = std::all_of(bundles.begin(), bundles.end(),
                            [&](const ResourceSet& b) { return b == bundles[0]; });
    if (same) {
      size_t copies = 0;
      for (const NodeView& n : ever) {
        ResourceSet left = n.total;
        while (copies < bundles.size() && left.Contains(bundles[0])) {
          left.Subtract(bundles[0]);
          ++copies;
        }
      }
      if (copies < bundles.size()) {
        impossible = "the matching nodes can ever hold " + std::to_string(copies) + " of its " +
                     std::to_string(bundles.size()) + " bundles of " + bundles[0].ToString();
      }
    } else {
      ResourceSet sum, all;
      for (auto& b : bundles) sum.Add(b);
      for (const NodeView& n : ever) all.Add(n.total);
      if (!all.Contains(sum)) {
        impossible =
            "it needs " + sum.ToString() + " in all, the matching nodes have " + all.ToString();
      }
    }
  }
  if (impossible.empty() && strategy == GroupStrategy::kStrictSpread &&
      bundles.size() > ever.size()) {
    impossible = "it needs " + std::to_string(bundles.size()) +
                 " distinct nodes, the cluster has " + std::to_string(ever.size());
  }
  if (!impossible.empty()) {
    d.reason = "no node can ever hold " + what + ": " + impossible;
    return d;
  }
  d.kind = PlacementDecision::kWait;
  d.reason = "waiting for room for " + what + ": it fits the cluster, not what is free now";
  return d;
}

}  // namespace cumulus
