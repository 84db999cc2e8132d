#include "runtime/tune/refusal_checks.h"

#include "scheduler/placement.h"

namespace cumulus::tune {

bool AnyNodeCouldHold(const std::vector<NodeRecord>& nodes, const ResourceSet& bundle,
                      const std::string& label_selector) {
  auto selector = ParseLabelSelector(label_selector);
  for (const NodeRecord& n : nodes) {
    if (n.state == NodeState::kDead || n.left || n.draining) continue;
    if (selector.ok() && !selector->Matches(n.labels)) continue;
    if (n.total.Contains(bundle)) return true;
  }
  return false;
}

bool VerdictFreshness::Fresh(int64_t updated_micros, Clock::time_point now) {
  if (seen_ && updated_micros != last_stamp_) written_after_ = last_look_;
  seen_ = true;
  last_stamp_ = updated_micros;
  last_look_ = now;
  return written_after_ != Clock::time_point() && now - written_after_ <= window_;
}

}  // namespace cumulus::tune
