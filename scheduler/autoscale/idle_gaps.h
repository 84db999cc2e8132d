// Learning each cloud type's idle timeout from how soon work came back for it (ski rental with a
// learned distribution). Pure, like the policy: the head's monitor and the trace replay
// (bench/burst/scalers.cc) keep one IdleGapRecorder, show it each round's Snapshot and Decision,
// and put its gaps into the next Snapshot (Snapshot::idle_gaps); the policy turns them into a
// timeout with LearnedIdleTimeout for the types whose learn_idle_timeout is set.
//
// An idle gap of a type: how long after a node of the type went idle work for the type came
// back. Observed two ways: the idle node itself took work again (its gap ends when a round sees
// it busy, or idle again since a later time), or the node was drained and the policy later
// launched a node of its type (the gap ends at that launch; the node that went idle last is
// matched first). A drained node whose type no launch asked for within `horizon` is a gap
// longer than any timeout considered (kNeverCameBack).
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "scheduler/autoscale/snapshot.h"

namespace cumulus::autoscale {

constexpr int64_t kNeverCameBack = std::numeric_limits<int64_t>::max();

struct LearnOptions {
  // Fewer gaps known than this: the type's configured idle_timeout is used.
  int min_gaps = 10;
  // The recorder keeps this many recent gaps per type (older ones are forgotten).
  int max_gaps = 200;
  // A drained node not asked for again within this long counts as kNeverCameBack; the learned
  // timeout is never longer.
  int64_t horizon_micros = 6 * 60 * kMicrosPerMinute;
};

// The idle timeout that costs least over `gaps` (microseconds; kNeverCameBack allowed), as
// dollars of node time: a gap g under a timeout T costs g (kept idle, then used), a gap longer
// than T costs T plus a boot (`boot_micros`, billed while the new node starts). The result is 0
// or one of the gaps (ties: the shorter); `fallback` when fewer than options.min_gaps are given.
int64_t LearnedIdleTimeout(const std::vector<int64_t>& gaps, int64_t boot_micros, int64_t fallback,
                           const LearnOptions& options = {});

// The idle timeout the policy uses for `type` in `snapshot`; `*learned` (if given): whether it
// came from the gaps rather than the type's idle_timeout_micros.
int64_t EffectiveIdleTimeout(const NodeType& type, const Snapshot& snapshot,
                             const LearnOptions& options = {}, bool* learned = nullptr);

class IdleGapRecorder {
 public:
  explicit IdleGapRecorder(LearnOptions options = {}) : options_(options) {}

  // One round: what the policy saw and what it decided (drains and launches end gaps).
  // REQUIRES: rounds in the order of their Snapshot::now.
  void Observe(const Snapshot& snapshot, const Decision& decision);

  // Recent gaps per type name, oldest first: what Snapshot::idle_gaps should hold.
  std::map<std::string, std::vector<int64_t>> Gaps() const;

 private:
  void Record(const std::string& type, int64_t gap);

  LearnOptions options_;
  struct Idle {
    std::string type;
    int64_t since = 0;
  };
  std::map<std::string, Idle> idle_;                     // node id -> idle since (last seen)
  std::map<std::string, std::vector<int64_t>> drained_;  // type -> idle since, drained nodes
  std::map<std::string, std::deque<int64_t>> gaps_;      // type -> recent gaps
};

}  // namespace cumulus::autoscale
