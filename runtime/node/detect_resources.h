// What this machine has: CPUs (those this process may run on), memory, and GPUs (through the CUDA
// runtime when Cumulus was built with CUDA and a driver is present).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/resources.h"

namespace cumulus {

struct DetectedResources {
  ResourceSet resources;  // CPU, memory (bytes), GPU when any
  std::vector<uint32_t> gpu_ids;
  std::string gpu_note;   // why no GPU was found, for the log
  std::string gpu_model;  // short model name of GPU 0 ("H100", "A100", "T4"); empty: none found
};

// Detects CPUs, memory and GPUs (CUDA runtime when built with it), and the GPU model (the CUDA
// runtime's device name, else `nvidia-smi --query-gpu=name`). The node shows the model as the label
// gpu_model=<short name> unless the user gave a gpu_model label.
DetectedResources DetectResources();

// The short model name of a GPU's full name: "NVIDIA H100 80GB HBM3" -> "H100",
// "NVIDIA A100-SXM4-40GB" -> "A100", "Tesla T4" -> "T4", "NVIDIA GeForce RTX 4090" -> "RTX4090".
// Empty for an empty name.
std::string GpuModelShortName(std::string_view full_name);

// Memory in use now: in this process's cgroup if it has a limit (a container), else on the
// machine (MemTotal - MemAvailable). limit 0: unknown.
struct MemoryUse {
  uint64_t used = 0, limit = 0;
  double fraction() const { return limit ? static_cast<double>(used) / limit : -1; }
};
MemoryUse MemoryUsage();

}  // namespace cumulus
