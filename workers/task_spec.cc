#include "workers/task_spec.h"

#include "runtime/base/numeric.h"
#include "runtime/core/messages.h"
#include "runtime/head/node_codec.h"
#include "runtime/net/first_segment.h"
#include "runtime/net/frame.h"
#include "scheduler/placement.h"

namespace cumulus {

Result<std::string> BuildTaskSpec(const TaskSpecInput& t,
                                  const std::function<ArgumentLocation(const ObjectId&)>& locate) {
  const auto& targs = *t.args;
  const auto& options = *t.options;
  // -1: forever; the node treats any negative so, so a mistake must not reach it as one.
  if (Status st = CheckInteger("SetMaxRetries", t.max_retries, {-1, INT32_MAX}); !st.ok())
    return st.WithContext(t.function);
  if (Status st = CheckInteger("SetMaxRestarts", options.max_restarts, {-1, INT32_MAX}); !st.ok())
    return st.WithContext(t.function);
  // The first segment also holds the by-value arguments and the names (first_segment.h).
  size_t payload = t.function.size() + options.name.size() + options.purpose.size();
  for (const auto& a : targs) payload += a.is_ref ? 0 : a.value.size();
  capnp::MallocMessageBuilder message(FrameFirstSegmentWords(payload));
  auto spec = message.initRoot<proto::CoreMessage>().initSubmitTask();
  spec.setTaskId(DataOf(t.id));
  spec.setJobId(DataOf(t.job));
  spec.setFunctionName(t.function);
  spec.setNumReturns(1);
  spec.setMaxRetries(t.max_retries);
  spec.setAttempt(static_cast<uint32_t>(t.attempt));
  spec.setActorCreation(t.actor_creation);
  if (t.actor_creation && !t.restart_cause.empty()) spec.setRestartCause(t.restart_cause);
  if (t.actor_creation) spec.setActorClass(t.actor_class);
  if (!t.actor.IsNil()) spec.setActorId(DataOf(t.actor));
  spec.setMaxRestarts(options.max_restarts);
  spec.setName(options.name);
  spec.setDetached(options.detached);
  if (!t.actor_call && !options.purpose.empty()) {
    if (Status st = CheckPurpose(options.purpose); !st.ok()) return st.WithContext(t.function);
    spec.setPurpose(options.purpose);
  }
  auto args = spec.initArgs(static_cast<unsigned>(targs.size()));
  for (unsigned i = 0; i < targs.size(); ++i) {
    auto& a = targs[i];
    if (!a.is_ref) {
      args[i].setInline(
          capnp::Data::Reader(reinterpret_cast<const uint8_t*>(a.value.data()), a.value.size()));
      continue;
    }
    ArgumentLocation e = locate(a.ref);
    if (e.inline_value) {
      args[i].setInline(capnp::Data::Reader(
          reinterpret_cast<const uint8_t*>(e.inline_value->data()), e.inline_value->size()));
    } else {
      args[i].setObjectRef(DataOf(a.ref));
      auto loc = args[i].initLocation();
      loc.setNodeId(DataOf(e.node));
      loc.setTransferAddress(e.transfer_address);
      loc.setSize(e.size);
    }
  }
  if (!t.actor_call) {
    ResourceSet demand;
    for (auto& [name, amount] : options.resources) {
      Status valid = ResourceSet::CheckAmount(name, amount);
      if (!valid.ok()) return Status::InvalidArgument(t.function + ": " + valid.message());
      if (amount > 0) demand.Set(name, amount);
    }
    if (demand.GetUnits("GPU") > ResourceSet::kUnit &&
        demand.GetUnits("GPU") % ResourceSet::kUnit != 0) {
      return Status::InvalidArgument(t.function + " asks for " + std::to_string(demand.Get("GPU")) +
                                     " GPUs: more than one GPU must be a whole number");
    }
    EncodeResources(demand, spec.initResources(static_cast<unsigned>(demand.units().size())));
    if (!options.label_selector.empty()) {
      auto sel = ParseLabelSelector(options.label_selector);
      if (!sel.ok()) return sel.status();
      auto eq = spec.initLabelSelector(static_cast<unsigned>(sel->equals.size()));
      unsigned i = 0;
      for (auto& [k, v] : sel->equals) {
        eq[i].setKey(k);
        eq[i].setValue(v);
        ++i;
      }
      auto ne = spec.initLabelNotEqual(static_cast<unsigned>(sel->not_equals.size()));
      i = 0;
      for (auto& [k, v] : sel->not_equals) {
        ne[i].setKey(k);
        ne[i].setValue(v);
        ++i;
      }
      auto encode_sets = [](const std::map<std::string, std::set<std::string>>& terms, auto list) {
        unsigned t = 0;
        for (auto& [k, values] : terms) {
          list[t].setKey(k);
          auto out = list[t].initValues(static_cast<unsigned>(values.size()));
          unsigned j = 0;
          for (auto& v : values) out.set(j++, v);
          ++t;
        }
      };
      encode_sets(sel->in, spec.initLabelIn(static_cast<unsigned>(sel->in.size())));
      encode_sets(sel->not_in, spec.initLabelNotIn(static_cast<unsigned>(sel->not_in.size())));
    }
    switch (options.strategy) {
      case Strategy::kSpread:
        spec.setStrategy(proto::SchedulingStrategy::SPREAD);
        break;
      case Strategy::kNodeAffinity:
        if (options.affinity_node.IsNil()) {
          return Status::InvalidArgument("node affinity for " + t.function + " names no node");
        }
        spec.setStrategy(proto::SchedulingStrategy::NODE_AFFINITY);
        spec.setAffinityNodeId(DataOf(options.affinity_node));
        spec.setAffinitySoft(options.affinity_soft);
        break;
      case Strategy::kDefault:
        break;
    }
    if (!options.placement_group.IsNil()) {
      if (options.bundle_index < 0) {
        return Status::InvalidArgument(t.function + " asks for bundle " +
                                       std::to_string(options.bundle_index) +
                                       " of a placement group: give an index from 0");
      }
      spec.setPlacementGroupId(DataOf(options.placement_group));
      spec.setBundleIndex(options.bundle_index);
    }
  }
  return EncodeFrame(message);
}

}  // namespace cumulus
