#include "scheduler/autoscale/idle_gaps.h"

#include <algorithm>
#include <set>

namespace cumulus::autoscale {

int64_t LearnedIdleTimeout(const std::vector<int64_t>& gaps, int64_t boot_micros, int64_t fallback,
                           const LearnOptions& options) {
  if (static_cast<int>(gaps.size()) < std::max(1, options.min_gaps)) return fallback;
  std::vector<int64_t> sorted = gaps;
  std::sort(sorted.begin(), sorted.end());
  const double boot = static_cast<double>(boot_micros);
  const double n = static_cast<double>(sorted.size());
  // cost(T) = sum over g <= T of g + (number of g > T) * (T + boot); T = 0 or a finite gap.
  double below = 0;  // sum of the gaps <= T
  int64_t best = 0;
  double best_cost = n * boot;  // T = 0: every gap pays a boot
  for (size_t i = 0; i < sorted.size() && sorted[i] != kNeverCameBack; ++i) {
    int64_t t = sorted[i];
    below += static_cast<double>(t);
    if (i + 1 < sorted.size() && sorted[i + 1] == t) continue;  // all equal gaps at once
    double above = n - static_cast<double>(i + 1);
    double cost = below + above * (static_cast<double>(t) + boot);
    if (cost < best_cost - 1e-6) {
      best_cost = cost;
      best = t;
    }
  }
  return std::min(best, options.horizon_micros);
}

int64_t EffectiveIdleTimeout(const NodeType& type, const Snapshot& snapshot,
                             const LearnOptions& options, bool* learned) {
  if (learned) *learned = false;
  if (!type.learn_idle_timeout) return type.idle_timeout_micros;
  auto it = snapshot.idle_gaps.find(type.name);
  if (it == snapshot.idle_gaps.end() ||
      static_cast<int>(it->second.size()) < std::max(1, options.min_gaps)) {
    return type.idle_timeout_micros;
  }
  if (learned) *learned = true;
  return LearnedIdleTimeout(it->second, type.boot_micros, type.idle_timeout_micros, options);
}

void IdleGapRecorder::Record(const std::string& type, int64_t gap) {
  std::deque<int64_t>& g = gaps_[type];
  g.push_back(gap);
  while (static_cast<int>(g.size()) > std::max(1, options_.max_gaps)) g.pop_front();
}

void IdleGapRecorder::Observe(const Snapshot& s, const Decision& d) {
  std::set<std::string> seen;
  std::set<std::string> drained;
  for (const Drain& dr : d.drains) drained.insert(dr.node);
  for (const Node& node : s.nodes) {
    if (node.state != NodeState::kRunning) continue;
    seen.insert(node.id);
    bool idle = !node.busy && node.idle_since >= 0;
    auto was = idle_.find(node.id);
    if (was != idle_.end()) {
      if (!idle) {  // took work since the last round
        Record(was->second.type, s.now - was->second.since);
        idle_.erase(was);
      } else if (node.idle_since > was->second.since) {  // worked in between, idle again
        Record(was->second.type, node.idle_since - was->second.since);
        was->second.since = node.idle_since;
      }
    } else if (idle) {
      idle_[node.id] = Idle{node.type, node.idle_since};
    }
    if (idle && drained.count(node.id)) {
      drained_[node.type].push_back(idle_[node.id].since);
      idle_.erase(node.id);
    }
  }
  for (auto it = idle_.begin(); it != idle_.end();) {
    it = seen.count(it->first) ? std::next(it) : idle_.erase(it);
  }
  // A launch of a type ends the gap of its drained node that went idle last.
  for (const Launch& l : d.launches) {
    std::vector<int64_t>& waiting = drained_[l.type];
    for (int k = 0; k < l.count && !waiting.empty(); ++k) {
      auto last = std::max_element(waiting.begin(), waiting.end());
      Record(l.type, s.now - *last);
      waiting.erase(last);
    }
  }
  for (auto& [type, waiting] : drained_) {
    for (auto it = waiting.begin(); it != waiting.end();) {
      if (s.now - *it > options_.horizon_micros) {
        Record(type, kNeverCameBack);
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
  }
}

std::map<std::string, std::vector<int64_t>> IdleGapRecorder::Gaps() const {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& [type, g] : gaps_) out[type] = std::vector<int64_t>(g.begin(), g.end());
  return out;
}

}  // namespace cumulus::autoscale
