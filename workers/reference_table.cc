#include "workers/reference_table.h"

#include <algorithm>

namespace cumulus {

ObjectEntry& ReferenceTable::Add(const ObjectId& id) {
  ObjectEntry& e = objects_[id];
  e = ObjectEntry();
  return e;
}

ObjectEntry* ReferenceTable::Find(const ObjectId& id) {
  auto it = objects_.find(id);
  return it == objects_.end() ? nullptr : &it->second;
}

void ReferenceTable::AddRef(const ObjectId& id) {
  if (ObjectEntry* e = Find(id)) e->refs++;
}

void ReferenceTable::RemoveRef(const ObjectId& id) {
  auto it = objects_.find(id);
  if (it == objects_.end()) return;
  it->second.refs--;
  MaybeFree(it);
}

bool ReferenceTable::Hold(const ObjectId& id) {
  ObjectEntry* e = Find(id);
  if (!e) return false;
  e->task_refs++;
  return true;
}

void ReferenceTable::Release(const ObjectId& id) {
  auto it = objects_.find(id);
  if (it == objects_.end()) return;
  it->second.task_refs--;
  MaybeFree(it);
}

void ReferenceTable::Release(const std::vector<ObjectId>& ids) {
  for (const ObjectId& id : ids) Release(id);
}

void ReferenceTable::FreeIfUnused(const ObjectId& id) {
  auto it = objects_.find(id);
  if (it != objects_.end()) MaybeFree(it);
}

void ReferenceTable::MaybeFree(Map::iterator it) {
  ObjectEntry& e = it->second;
  if (e.refs > 0 || e.task_refs > 0 || e.state == ObjectEntry::kPending) return;
  if (e.stored) {
    frees_.remote.push_back(it->first.Binary() + e.node.Binary());
    if (e.local_copy) frees_.local_copies.push_back(it->first);
  }
  std::unique_ptr<Lineage> lineage = std::move(e.lineage);
  objects_.erase(it);
  if (lineage) Release(lineage->pinned);  // may free its arguments in turn
}

void ReferenceTable::SetStored(ObjectEntry& e, const NodeId& node, const std::string& transfer,
                               uint64_t size) {
  e.state = ObjectEntry::kReady;
  e.stored = true;
  e.node = node;
  e.transfer = transfer;
  e.size = size;
}

void ReferenceTable::RecordLineage(ObjectEntry& e, const std::string& function,
                                   std::vector<internal::ArgData> args,
                                   const internal::CallOptions& options, int max_retries,
                                   std::vector<ObjectId> held) {
  int depth = 1;
  for (const ObjectId& arg : held) {
    if (const ObjectEntry* a = Find(arg)) depth = std::max(depth, a->depth + 1);
  }
  e.depth = depth;
  if (depth > max_lineage_depth_) {
    e.no_lineage = "its lineage is " + std::to_string(depth) + " tasks deep, more than the " +
                   std::to_string(max_lineage_depth_) +
                   " kept (CUMULUS_MAX_LINEAGE_DEPTH); store checkpoints with Put instead";
    Release(held);
    return;
  }
  auto l = std::make_unique<Lineage>();
  l->function = function;
  l->args = std::move(args);
  l->options = options;
  l->max_retries = max_retries;
  l->pinned = std::move(held);
  e.lineage = std::move(l);
}

ReferenceTable::RebuildPlan ReferenceTable::PlanRebuild(const ObjectId& id,
                                                        const NodeId& failed_node,
                                                        const std::string& why,
                                                        const std::string& cannot_now) {
  RebuildPlan plan;
  ObjectEntry* e = Find(id);
  if (!e) return plan;
  if (e->state == ObjectEntry::kPending) {
    plan.kind = RebuildPlan::kUnderway;
    return plan;
  }
  if (e->state != ObjectEntry::kReady || !e->stored) return plan;
  if (e->node != failed_node) {  // a report about a copy that was replaced
    plan.kind = RebuildPlan::kUnderway;
    return plan;
  }
  std::string cannot;
  if (id.IsPut()) {
    cannot = "it was made by Put, which keeps no lineage to rebuild it from";
  } else if (!e->lineage) {
    cannot = e->no_lineage.empty() ? "no lineage was kept for it" : e->no_lineage;
  } else if (e->rebuilds >= kMaxRebuilds) {
    cannot = "it was rebuilt " + std::to_string(e->rebuilds) + " times already";
  } else {
    cannot = cannot_now;
  }
  if (!cannot.empty()) {
    e->state = ObjectEntry::kFailed;
    e->error = Status::ObjectLost("object " + id.Hex() + " was lost (" + why +
                                  ") and cannot be rebuilt: " + cannot);
    std::unique_ptr<Lineage> lineage = std::move(e->lineage);
    if (lineage) Release(lineage->pinned);
    plan.kind = RebuildPlan::kLost;
    return plan;
  }
  plan.kind = RebuildPlan::kRebuild;
  plan.lineage = std::move(e->lineage);
  plan.attempt = ++e->rebuilds;
  e->state = ObjectEntry::kPending;
  e->stored = false;
  e->inline_value.reset();
  return plan;
}

bool ReferenceTable::Moved(const ObjectId& id, const NodeId& from, const NodeId& to,
                           const std::string& transfer) {
  ObjectEntry* e = Find(id);
  if (!e || e->state != ObjectEntry::kReady || !e->stored || e->node != from) return false;
  e->node = to;
  e->transfer = transfer;
  return true;
}

ReferenceTable::Frees ReferenceTable::TakeFrees() {
  Frees out;
  std::swap(out, frees_);
  return out;
}

void ReferenceTable::FreeAll() {
  for (auto& [id, e] : objects_) {
    if (e.stored) frees_.remote.push_back(id.Binary() + e.node.Binary());
    if (e.local_copy) frees_.local_copies.push_back(id);
  }
  objects_.clear();
}

}  // namespace cumulus
