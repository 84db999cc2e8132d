#include "runtime/node/machine_stats.h"

#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace cumulus {

// The few NVML calls used, resolved from libnvidia-ml.so.1 (their C ABI: return 0 on success).
struct MachineStats::Nvml {
  struct Utilization {
    unsigned int gpu, memory;
  };
  struct Memory {
    unsigned long long total, free, used;
  };
  void* lib = nullptr;
  int (*shutdown)() = nullptr;
  int (*handle_by_index)(unsigned int, void**) = nullptr;
  int (*utilization)(void*, Utilization*) = nullptr;
  int (*memory)(void*, Memory*) = nullptr;

  static std::unique_ptr<Nvml> Load() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    auto n = std::make_unique<Nvml>();
    n->lib = lib;
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    n->shutdown = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlShutdown"));
    n->handle_by_index = reinterpret_cast<int (*)(unsigned int, void**)>(
        dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    n->utilization =
        reinterpret_cast<int (*)(void*, Utilization*)>(dlsym(lib, "nvmlDeviceGetUtilizationRates"));
    n->memory = reinterpret_cast<int (*)(void*, Memory*)>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
    if (!init || !n->shutdown || !n->handle_by_index || !n->utilization || !n->memory ||
        init() != 0) {
      n->shutdown = nullptr;
      return nullptr;  // (~Nvml closes the library)
    }
    return n;
  }
  ~Nvml() {
    if (shutdown) shutdown();
    if (lib) dlclose(lib);
  }
};

MachineStats::MachineStats(std::vector<uint32_t> gpu_ids) : gpu_ids_(std::move(gpu_ids)) {
  if (!gpu_ids_.empty()) nvml_ = Nvml::Load();
  Sample();
}

MachineStats::~MachineStats() = default;

void MachineStats::Sample() {
  std::ifstream stat("/proc/stat");
  std::string line;
  int cpus = 0;
  uint64_t busy = 0, total = 0;
  while (std::getline(stat, line)) {
    if (line.rfind("cpu", 0) != 0) break;
    if (line.rfind("cpu ", 0) != 0) {
      ++cpus;
      continue;
    }
    std::istringstream in(line.substr(4));
    uint64_t v[10] = {0};
    for (auto& x : v) in >> x;
    // user nice system idle iowait irq softirq steal (guest time is inside user and nice)
    uint64_t idle = v[3] + v[4];
    for (int i = 0; i < 8; ++i) total += v[i];
    busy = total - idle;
  }
  if (last_total_ != 0 && total > last_total_) {
    cpu_percent_ =
        100.0 * static_cast<double>(busy - last_busy_) / static_cast<double>(total - last_total_);
  }
  last_busy_ = busy;
  last_total_ = total;
  machine_cpus_ = cpus;
  std::ifstream meminfo("/proc/meminfo");
  while (std::getline(meminfo, line)) {
    std::istringstream in(line);
    std::string key;
    uint64_t kib = 0;
    in >> key >> kib;
    if (key == "MemTotal:") mem_total_ = kib * 1024;
    if (key == "MemAvailable:") mem_available_ = kib * 1024;
  }
}

std::map<std::string, std::string> MachineStats::Snapshot() {
  std::map<std::string, std::string> out;
  char buf[32];
  if (cpu_percent_ >= 0) {
    std::snprintf(buf, sizeof(buf), "%.1f", cpu_percent_);
    out["cpu_percent"] = buf;
  } else {
    out["cpu_percent"] = "-";
  }
  out["machine_cpus"] = std::to_string(machine_cpus_);
  out["mem_total"] = std::to_string(mem_total_);
  out["mem_used"] = std::to_string(mem_total_ > mem_available_ ? mem_total_ - mem_available_ : 0);
  out["gpu_util"] = out["gpu_mem_used"] = out["gpu_mem_total"] = "-";
  if (!nvml_) return out;
  double util = 0;
  uint64_t used = 0, total = 0;
  size_t read = 0;
  for (uint32_t g : gpu_ids_) {
    void* device = nullptr;
    Nvml::Utilization u{};
    Nvml::Memory m{};
    if (nvml_->handle_by_index(g, &device) != 0 || nvml_->utilization(device, &u) != 0 ||
        nvml_->memory(device, &m) != 0) {
      continue;
    }
    util += u.gpu;
    used += m.used;
    total += m.total;
    ++read;
  }
  if (read == 0) return out;
  std::snprintf(buf, sizeof(buf), "%.0f", util / static_cast<double>(read));
  out["gpu_util"] = buf;
  out["gpu_mem_used"] = std::to_string(used);
  out["gpu_mem_total"] = std::to_string(total);
  return out;
}

}  // namespace cumulus
