#include "runtime/node/detect_resources.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <sched.h>

#include "runtime/object_store/shared_region.h"

#include "runtime/base/cuda_libs.h"

namespace cumulus {

std::string GpuModelShortName(std::string_view name) {
  std::vector<std::string> words;
  std::string word;
  for (size_t i = 0; i <= name.size(); ++i) {
    char c = i < name.size() ? name[i] : ' ';
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  // Vendor and family words carry no model.
  auto noise = [](const std::string& w) {
    return w == "NVIDIA" || w == "Tesla" || w == "GeForce" || w == "Quadro" || w == "AMD";
  };
  words.erase(std::remove_if(words.begin(), words.end(), noise), words.end());
  if (words.empty()) return "";
  std::string model = words[0];
  // "RTX 4090", "RTX A6000": the series word is not a model by itself.
  if ((model == "RTX" || model == "GTX" || model == "TITAN") && words.size() > 1) model += words[1];
  model = model.substr(0, model.find('-'));  // "A100-SXM4-40GB"
  std::string out;
  for (char c : model) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') out += c;
  }
  return out;
}

namespace {

// The first GPU's name as nvidia-smi reports it; empty when there is no nvidia-smi or no GPU.
std::string NvidiaSmiGpuName() {
  FILE* p = popen("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null", "r");
  if (!p) return "";
  char line[256] = {0};
  std::string name = fgets(line, sizeof(line), p) ? line : "";
  pclose(p);
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  return name;
}

}  // namespace

DetectedResources DetectResources() {
  DetectedResources d;
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  d.resources.Set("CPU", cpus);
  d.resources.Set("memory", static_cast<double>(PhysicalMemoryBytes()));
#if CUMULUS_HAVE_CUDA
  std::string why;
  if (const CudaRuntimeApi* cuda = CudaRuntime(&why); !cuda) {
    d.gpu_note = "no GPU visible: the CUDA runtime cannot be loaded (" + why + ")";
  } else {
    int count = 0;
    cudaError_t err = cuda->cudaGetDeviceCount(&count);
    if (err == cudaSuccess && count > 0) {
      d.resources.Set("GPU", count);
      for (int i = 0; i < count; ++i) d.gpu_ids.push_back(static_cast<uint32_t>(i));
      cudaDeviceProp prop;
      if (cuda->cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        d.gpu_model = GpuModelShortName(prop.name);
    } else {
      d.gpu_note =
          std::string("no GPU visible to the CUDA runtime (") + cuda->cudaGetErrorString(err) + ")";
    }
  }
#else
  d.gpu_note = "built without CUDA";
#endif
  // Without the CUDA runtime a GPU still has a model worth showing (a node may declare GPU=N).
  if (d.gpu_model.empty()) d.gpu_model = GpuModelShortName(NvidiaSmiGpuName());
  return d;
}

MemoryUse MemoryUsage() {
  auto read_u64 = [](const char* path, uint64_t* out) {
    std::ifstream f(path);
    std::string v;
    if (!(f >> v) || v == "max") return false;
    *out = std::strtoull(v.c_str(), nullptr, 10);
    return *out > 0;
  };
  MemoryUse m;
  uint64_t current = 0, limit = 0;
  if (read_u64("/sys/fs/cgroup/memory.max", &limit) &&
      read_u64("/sys/fs/cgroup/memory.current", &current) && limit < (1ull << 50)) {
    // The cgroup counts page cache the kernel can drop: leave out the inactive file pages.
    std::ifstream stat("/sys/fs/cgroup/memory.stat");
    std::string key;
    uint64_t value = 0;
    while (stat >> key >> value) {
      if (key == "inactive_file") current -= std::min(current, value);
    }
    m.used = current;
    m.limit = limit;
    return m;
  }
  std::ifstream info("/proc/meminfo");
  std::string key, unit;
  uint64_t value = 0, total = 0, available = 0;
  while (info >> key >> value >> unit) {
    if (key == "MemTotal:") total = value * 1024;
    if (key == "MemAvailable:") available = value * 1024;
  }
  if (total == 0) return m;
  m.limit = total;
  m.used = total - std::min(total, available);
  return m;
}

}  // namespace cumulus
