// What the tuner checks before it refuses trials that no node can hold (tuner_refusals.cc), apart
// from the tuner so that they are tested without a cluster.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/head/membership.h"

namespace cumulus::tune {

// True when a node that may take new work (neither dead nor draining) and matches
// `label_selector` ("" for any; an unreadable one matches any) has `bundle` among its totals.
bool AnyNodeCouldHold(const std::vector<NodeRecord>& nodes, const ResourceSet& bundle,
                      const std::string& label_selector);

// Whether the autoscaler's monitor still publishes its verdicts. Its `updated_micros` comes from
// the monitor host's clock, which need not agree with this one; so what counts is this process's
// own steady clock: a stamp that differs from the one seen at the look before was written after
// that look, and the verdict is fresh while that look is within `window`. A stamp seen only once
// (nothing known of when it was written) is not fresh.
// Not thread-safe: the tuner's loop owns it.
class VerdictFreshness {
 public:
  using Clock = std::chrono::steady_clock;
  explicit VerdictFreshness(Clock::duration window) : window_(window) {}

  // `updated_micros`: the stamp just read; `now`: when it was read.
  bool Fresh(int64_t updated_micros, Clock::time_point now);

 private:
  Clock::duration window_;
  bool seen_ = false;
  int64_t last_stamp_ = 0;
  Clock::time_point last_look_;
  Clock::time_point written_after_;  // the latest stamp was written after this (epoch: unknown)
};

}  // namespace cumulus::tune
