#include "runtime/metrics/gpu_usage.h"

#include <dlfcn.h>

#include <type_traits>

namespace cumulus::metrics {

namespace {

// The few NVML declarations used (nvml.h, stable across driver versions).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};

}  // namespace

struct GpuUsage::Api {
  void* lib = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
};

GpuUsage::GpuUsage() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    why_not_ = "no NVML (libnvidia-ml.so.1): no NVIDIA driver here";
    return;
  }
  auto api = std::make_unique<Api>();
  api->lib = lib;
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    return fn != nullptr;
  };
  bool ok = sym(api->init, "nvmlInit_v2") && sym(api->shutdown, "nvmlShutdown") &&
            sym(api->count, "nvmlDeviceGetCount_v2") &&
            sym(api->handle, "nvmlDeviceGetHandleByIndex_v2") &&
            sym(api->name, "nvmlDeviceGetName") &&
            sym(api->utilization, "nvmlDeviceGetUtilizationRates") &&
            sym(api->memory, "nvmlDeviceGetMemoryInfo");
  if (!ok) {
    why_not_ = "NVML lacks a function this build uses";
    dlclose(lib);
    return;
  }
  if (api->init() != 0) {
    why_not_ = "NVML did not initialize (no GPU, or the driver is not loaded)";
    dlclose(lib);
    return;
  }
  api_ = std::move(api);
}

GpuUsage::~GpuUsage() {
  if (!api_) return;
  api_->shutdown();
  dlclose(api_->lib);
}

std::vector<GpuSample> GpuUsage::Read() {
  std::vector<GpuSample> out;
  if (!api_) return out;
  unsigned int n = 0;
  if (api_->count(&n) != 0) return out;
  for (unsigned int i = 0; i < n && i < 64; ++i) {
    nvmlDevice_t dev = nullptr;
    if (api_->handle(i, &dev) != 0) continue;
    GpuSample s;
    s.index = i;
    char name[96] = {0};
    if (api_->name(dev, name, sizeof(name) - 1) == 0) s.name = name;
    nvmlUtilization_t u{};
    if (api_->utilization(dev, &u) == 0) s.utilization = u.gpu;
    nvmlMemory_t m{};
    if (api_->memory(dev, &m) == 0) {
      s.memory_used = m.used;
      s.memory_total = m.total;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace cumulus::metrics
