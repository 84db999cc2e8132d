// GpuUsage: each GPU's utilization and memory, read through NVML (libnvidia-ml.so.1, part of the
// NVIDIA driver) opened with dlopen at first use, so that Cumulus builds and runs without it.
// Where there is no driver or no GPU, Read() returns nothing and the node shows no GPU metrics.
//
// Thread-safe (NVML is); one per process is enough.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cumulus::metrics {

struct GpuSample {
  uint32_t index = 0;      // NVML's index (as nvidia-smi numbers them)
  std::string name;        // "NVIDIA H100 80GB HBM3"
  double utilization = 0;  // percent of the last sample period the GPU was busy (0..100)
  uint64_t memory_used = 0, memory_total = 0;  // bytes
};

class GpuUsage {
 public:
  GpuUsage();
  ~GpuUsage();
  GpuUsage(const GpuUsage&) = delete;
  GpuUsage& operator=(const GpuUsage&) = delete;

  // Every GPU NVML sees; empty without NVML (`why_not()` says why).
  std::vector<GpuSample> Read();
  const std::string& why_not() const { return why_not_; }

 private:
  struct Api;
  std::unique_ptr<Api> api_;
  std::string why_not_;
};

}  // namespace cumulus::metrics
