// ResourcePool: the exact free resources of one node, or of one placement-group bundle held on it,
// and the GPUs by device. Leases are taken from it and given back to it; a task blocked in Get
// lends its CPU back for a while (so nested tasks cannot deadlock a full node) and takes it back
// when it wakes, even if that oversubscribes the node: the debt is paid from the next CPU that
// comes free. Pure bookkeeping, no I/O. Not thread-safe: the node's event loop owns it.
#pragma once

#include <cstdint>
#include <vector>

#include "cumulus/status.h"
#include "scheduler/gpu_assignment.h"
#include "scheduler/resources.h"

namespace cumulus {

class ResourcePool {
 public:
  ResourcePool(ResourceSet total, std::vector<uint32_t> gpu_ids);

  // Takes `demand` from the free resources, GPUs device by device; returns the device ids given.
  // ResourceExhausted (and nothing changes) if it does not fit now.
  Result<std::vector<uint32_t>> Acquire(const ResourceSet& demand);
  // Gives back a lease: `demand` and `gpu_ids` as Acquire returned them, less `lent_cpu` units
  // of CPU that the lease lent already (LendCpu).
  void Release(const ResourceSet& demand, const std::vector<uint32_t>& gpu_ids,
               int64_t lent_cpu = 0);

  // A lease blocked in Get lends `units` of its CPU to the pool.
  void LendCpu(int64_t units);
  // It woke up and takes `units` back: what is not free now becomes debt.
  void ReclaimCpu(int64_t units);

  bool Fits(const ResourceSet& demand) const { return available_.Contains(demand); }
  const ResourceSet& total() const { return total_; }
  const ResourceSet& available() const { return available_; }
  int64_t cpu_debt() const { return cpu_debt_; }

 private:
  void Credit(ResourceSet r);  // CPU pays the debt first

  ResourceSet total_;
  ResourceSet available_;
  GpuAssignment gpus_;
  int64_t cpu_debt_ = 0;  // CPU units in use beyond `available_` (lenders that woke up)
};

}  // namespace cumulus
