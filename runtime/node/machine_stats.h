// MachineStats: what `cumulus top` shows of the machine a node runs on — CPU use (from /proc/stat,
// between the last two samples), memory (/proc/meminfo), and the use of the node's GPUs through
// NVML, loaded with dlopen when the driver's library is present (without it, or without GPUs,
// GPU use is "-"; nothing here needs CUDA to build or run).
//
// Not thread-safe: the node's event loop owns it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cumulus {

class MachineStats {
 public:
  // `gpu_ids`: the NVML indices of the GPUs the node offers.
  explicit MachineStats(std::vector<uint32_t> gpu_ids);
  ~MachineStats();
  MachineStats(const MachineStats&) = delete;
  MachineStats& operator=(const MachineStats&) = delete;

  // Reads /proc/stat and /proc/meminfo (about once a second: the CPU use shown is between the
  // last two samples).
  void Sample();
  // cpu_percent (of the whole machine, "-" before two samples), machine_cpus, mem_used,
  // mem_total (bytes), gpu_util (mean percent over the node's GPUs, or "-"), gpu_mem_used,
  // gpu_mem_total (bytes, or "-").
  std::map<std::string, std::string> Snapshot();

 private:
  struct Nvml;
  std::vector<uint32_t> gpu_ids_;
  std::unique_ptr<Nvml> nvml_;  // null: no NVML here (or no GPUs offered)
  uint64_t last_busy_ = 0, last_total_ = 0;
  double cpu_percent_ = -1;
  int machine_cpus_ = 0;
  uint64_t mem_total_ = 0, mem_available_ = 0;
};

}  // namespace cumulus
