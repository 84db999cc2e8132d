#include "scheduler/gpu_assignment.h"

namespace cumulus {

GpuAssignment::GpuAssignment(std::vector<uint32_t> gpu_ids) {
  for (uint32_t id : gpu_ids) free_[id] = ResourceSet::kUnit;
}

Result<std::vector<uint32_t>> GpuAssignment::Acquire(int64_t units) {
  if (units <= 0) return std::vector<uint32_t>();
  if (units > ResourceSet::kUnit) {
    if (units % ResourceSet::kUnit != 0) {
      return Status::InvalidArgument(
          "a request for more than one GPU must be whole (got " +
          std::to_string(static_cast<double>(units) / ResourceSet::kUnit) + ")");
    }
    std::vector<uint32_t> ids;
    for (auto& [id, free] : free_) {
      if (free == ResourceSet::kUnit) ids.push_back(id);
      if (static_cast<int64_t>(ids.size()) * ResourceSet::kUnit == units) break;
    }
    if (static_cast<int64_t>(ids.size()) * ResourceSet::kUnit < units) {
      return Status::ResourceExhausted("not enough free GPUs: asked for " +
                                       std::to_string(units / ResourceSet::kUnit));
    }
    for (uint32_t id : ids) free_[id] = 0;
    return ids;
  }
  // One GPU or a fraction: the fullest device that still has room (a whole request needs an idle
  // one).
  const uint32_t* best = nullptr;
  for (auto& [id, free] : free_) {
    if (free < units) continue;
    if (!best || free < free_.at(*best)) best = &id;
  }
  if (!best)
    return Status::ResourceExhausted(
        "no GPU has " + std::to_string(static_cast<double>(units) / ResourceSet::kUnit) + " free");
  uint32_t id = *best;
  free_[id] -= units;
  return std::vector<uint32_t>{id};
}

Status GpuAssignment::Release(const std::vector<uint32_t>& ids, int64_t units) {
  int64_t each = ids.size() > 1 ? ResourceSet::kUnit : units;
  for (uint32_t id : ids) {
    auto it = free_.find(id);
    if (it == free_.end() || it->second + each > ResourceSet::kUnit) {
      return Status::InvalidArgument("releasing more of GPU " + std::to_string(id) +
                                     " than is held");
    }
  }
  for (uint32_t id : ids) free_[id] += each;
  return Status();
}

int64_t GpuAssignment::free_units() const {
  int64_t total = 0;
  for (auto& [id, free] : free_) total += free;
  return total;
}

std::string GpuAssignment::VisibleDevices(const std::vector<uint32_t>& ids) {
  std::string out;
  for (uint32_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

}  // namespace cumulus
