#include "runtime/node/detect_resources.h"

#include <sched.h>

#include "runtime/object_store/shared_region.h"

#if CUMULUS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace cumulus {

DetectedResources DetectResources() {
  DetectedResources d;
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  d.resources.Set("CPU", cpus);
  d.resources.Set("memory", static_cast<double>(PhysicalMemoryBytes()));
#if CUMULUS_HAVE_CUDA
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess && count > 0) {
    d.resources.Set("GPU", count);
    for (int i = 0; i < count; ++i) d.gpu_ids.push_back(static_cast<uint32_t>(i));
  } else {
    d.gpu_note =
        std::string("no GPU visible to the CUDA runtime (") + cudaGetErrorString(err) + ")";
  }
#else
  d.gpu_note = "built without CUDA";
#endif
  return d;
}

}  // namespace cumulus
