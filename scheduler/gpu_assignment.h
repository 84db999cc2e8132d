// GpuAssignment: which physical GPUs of a node a task or actor gets. Whole-GPU requests get
// devices of their own; a fractional request (GPU=0.25) shares one device with other fractions,
// packed onto the fullest device that still has room so whole devices stay free. The ids become
// the worker's CUDA_VISIBLE_DEVICES. Pure bookkeeping, not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cumulus/status.h"
#include "scheduler/resources.h"

namespace cumulus {

class GpuAssignment {
 public:
  explicit GpuAssignment(std::vector<uint32_t> gpu_ids);

  // `units` is the GPU amount in ResourceSet units (1 GPU = ResourceSet::kUnit). Returns the ids
  // given out. InvalidArgument for a request over 1 GPU that is not whole; ResourceExhausted if
  // it does not fit now.
  Result<std::vector<uint32_t>> Acquire(int64_t units);
  // Gives back what Acquire(units) returned. InvalidArgument (and nothing changes) if that is more
  // than is held on those devices: a double or mismatched release must not free someone else's GPU.
  Status Release(const std::vector<uint32_t>& ids, int64_t units);

  int64_t free_units() const;
  // "0,2"
  static std::string VisibleDevices(const std::vector<uint32_t>& ids);

 private:
  std::map<uint32_t, int64_t> free_;  // id -> free units on that device
};

}  // namespace cumulus
