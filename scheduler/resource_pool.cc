#include "scheduler/resource_pool.h"

#include <algorithm>
#include <utility>

namespace cumulus {

ResourcePool::ResourcePool(ResourceSet total, std::vector<uint32_t> gpu_ids)
    : total_(std::move(total)), available_(total_), gpus_(std::move(gpu_ids)) {}

Result<std::vector<uint32_t>> ResourcePool::Acquire(const ResourceSet& demand) {
  if (!available_.Contains(demand)) {
    return Status::ResourceExhausted(available_.ToString() + " is free; " + demand.ToString() +
                                     " is asked for");
  }
  std::vector<uint32_t> ids;
  int64_t gpu_units = demand.GetUnits("GPU");
  if (gpu_units > 0) {
    CUMULUS_ASSIGN_OR_RETURN(ids, gpus_.Acquire(gpu_units));
  }
  available_.Subtract(demand);
  return ids;
}

void ResourcePool::Release(const ResourceSet& demand, const std::vector<uint32_t>& gpu_ids,
                           int64_t lent_cpu) {
  ResourceSet back = demand;
  if (lent_cpu > 0) back.SetUnits("CPU", back.GetUnits("CPU") - lent_cpu);  // given already
  Credit(std::move(back));
  int64_t gpu_units = demand.GetUnits("GPU");
  if (gpu_units > 0) (void)gpus_.Release(gpu_ids, gpu_units);
}

void ResourcePool::LendCpu(int64_t units) {
  if (units <= 0) return;
  ResourceSet r;
  r.SetUnits("CPU", units);
  Credit(std::move(r));
}

void ResourcePool::ReclaimCpu(int64_t units) {
  if (units <= 0) return;
  int64_t take = std::min(units, available_.GetUnits("CPU"));
  if (take > 0) {
    ResourceSet r;
    r.SetUnits("CPU", take);
    available_.Subtract(r);
  }
  cpu_debt_ += units - take;
}

void ResourcePool::Credit(ResourceSet r) {
  int64_t cpu = r.GetUnits("CPU");
  r.SetUnits("CPU", 0);
  available_.Add(r);
  if (cpu <= 0) return;
  int64_t pay = std::min(cpu, cpu_debt_);
  cpu_debt_ -= pay;
  if (cpu - pay <= 0) return;
  ResourceSet rest;
  rest.SetUnits("CPU", cpu - pay);
  available_.Add(rest);
}

}  // namespace cumulus
