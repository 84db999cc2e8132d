// The tuner's side of the autoscaler: trials whose resources can never exist are refused, also on
// a cluster whose nodes let work no node can run wait for an autoscaler (`--wait-for-nodes`),
// where the node does not refuse it. See tuner_impl.h (RefuseTrialsNoNodeCanHold).
#include <chrono>

#include "runtime/autoscaler/monitor_books.h"
#include "runtime/call/json_value.h"
#include "runtime/tune/refusal_checks.h"
#include "runtime/tune/tuner_impl.h"
#include "scheduler/autoscale/snapshot.h"
#include "scheduler/placement.h"

namespace cumulus::tune {

namespace {

std::string Text(const JsonValue* v) {
  return v && v->kind == JsonValue::kString ? v->text : std::string();
}

}  // namespace

bool Tuner::Impl::AnyNodeCouldHoldABundle(const ClusterView& view) const {
  ResourceSet bundle;
  for (auto& [r, amount] : spec_.resources)
    if (amount > 0) bundle.Set(r, amount);
  return AnyNodeCouldHold(view.nodes, bundle, spec_.label_selector);
}

Status Tuner::Impl::RefuseTrialsNoNodeCanHold() {
  bool waiting = false;
  for (auto& [id, live] : live_) waiting = waiting || !live.placed;
  auto now = Clock::now();
  if (!waiting || (refusals_checked_ != Clock::time_point() &&
                   now - refusals_checked_ < kRefusalCheckInterval)) {
    return Status::OK();
  }
  refusals_checked_ = now;
  ControlClient& head = journal_->head();
  auto text = head.KvGet(kAutoscalerNamespace, kStatusJsonKey);
  if (!text.ok()) return Status::OK();  // no autoscaler: the nodes refuse what none can run
  auto json = ParseJson(*text);
  if (!json.ok()) return Status::OK();
  // Verdicts of a monitor that stopped publishing are not believed: its stamp must have changed
  // lately on this process's clock (the monitor host's clock may not agree with this one).
  const JsonValue* updated = json->Member("updated_micros");
  if (!updated || updated->kind != JsonValue::kNumber ||
      !verdict_freshness_.Fresh(std::atoll(updated->text.c_str()), now)) {
    return Status::OK();
  }
  const JsonValue* demand = json->Member("demand");
  if (!demand || demand->kind != JsonValue::kArray) return Status::OK();
  std::map<uint64_t, std::string> refused;  // trial -> the autoscaler's detail
  const std::string no_type = autoscale::ReasonName(autoscale::Reason::kNoTypeFits);
  for (auto& v : demand->items) {
    if (Text(v.Member("reason")) != no_type) continue;
    std::string item = Text(v.Member("id"));
    for (auto& [id, live] : live_) {
      std::string prefix = TrialPurpose(id) + " {";
      if (!live.placed && item.compare(0, prefix.size(), prefix) == 0)
        refused[id] = Text(v.Member("detail"));
    }
  }
  if (refused.empty()) return Status::OK();
  // The autoscaler says no type it may launch can hold them; a node of the cluster may still
  // (busy now): then they wait for it.
  auto view = head.GetClusterStatus();
  if (!view.ok() || AnyNodeCouldHoldABundle(*view)) return Status::OK();
  for (auto& [id, detail] : refused) {
    CUMULUS_RETURN_IF_ERROR(
        EndTrial(id, TrialState::kFailed,
                 "its resources can never be had on this cluster: no node has them and the "
                 "autoscaler can launch none that has (" +
                     detail + ")"));
  }
  return Status::OK();
}

}  // namespace cumulus::tune
