// What this machine has: CPUs (those this process may run on), memory, and GPUs (through the CUDA
// runtime when Cumulus was built with CUDA and a driver is present).
#pragma once

#include <cstdint>
#include <vector>

#include "scheduler/resources.h"

namespace cumulus {

struct DetectedResources {
  ResourceSet resources;  // CPU, memory (bytes), GPU when any
  std::vector<uint32_t> gpu_ids;
  std::string gpu_note;  // why no GPU was found, for the log
};

DetectedResources DetectResources();

// Memory in use now: in this process's cgroup if it has a limit (a container), else on the
// machine (MemTotal - MemAvailable). limit 0: unknown.
struct MemoryUse {
  uint64_t used = 0, limit = 0;
  double fraction() const { return limit ? static_cast<double>(used) / limit : -1; }
};
MemoryUse MemoryUsage();

}  // namespace cumulus
