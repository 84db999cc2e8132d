#include "runtime/base/cuda_libs.h"

#if CUMULUS_HAVE_CUDA || CUMULUS_HAVE_NCCL

#include <dlfcn.h>

#include <vector>

// The name a call would link against, after the headers' own macros (cudaGetDeviceProperties
// may be cudaGetDeviceProperties_v2).
#define CUMULUS_CUDA_LIBS_STR2(x) #x
#define CUMULUS_CUDA_LIBS_STR(x) CUMULUS_CUDA_LIBS_STR2(x)

namespace cumulus {

namespace {

// Opens `soname` through the loader's search, then in `build_dir` (where the build found it);
// nullptr with `why` set when neither works.
void* Open(const std::string& soname, const char* build_dir, std::string* why) {
  std::vector<std::string> tries = {soname};
  if (build_dir && *build_dir) tries.push_back(std::string(build_dir) + "/" + soname);
  std::string said;
  for (const std::string& path : tries) {
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
    const char* err = dlerror();
    said += std::string(said.empty() ? "" : "; ") + (err ? err : path + ": unknown error");
  }
  *why = "cannot load " + soname + " (" + said + "): set LD_LIBRARY_PATH to its directory";
  return nullptr;
}

// Looks `name` up in `handle`; false with `why` set when it is missing.
template <typename Fn>
bool Find(void* handle, const char* name, const std::string& soname, Fn* fn, std::string* why) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*fn) return true;
  *why = soname + " has no " + name + " (too old a version?)";
  return false;
}

template <typename Api>
struct Loaded {
  Api api;
  bool ok = false;
  std::string why;
};

// Opens `soname` and fills the table with `find_all(handle, soname, api, why)`.
template <typename Api, typename FindAll>
Loaded<Api> Load(const std::string& soname, const char* build_dir, FindAll find_all) {
  Loaded<Api> l;
  if (void* handle = Open(soname, build_dir, &l.why))
    l.ok = find_all(handle, soname, l.api, &l.why);
  return l;
}

template <typename Api>
const Api* TableOf(const Loaded<Api>& loaded, std::string* why) {
  if (!loaded.ok && why) *why = loaded.why;
  return loaded.ok ? &loaded.api : nullptr;
}

#ifndef CUMULUS_CUDART_DIR
#define CUMULUS_CUDART_DIR nullptr
#endif
#ifndef CUMULUS_NCCL_DIR
#define CUMULUS_NCCL_DIR nullptr
#endif

// CUDA's runtime's soname: libcudart.so.12 from CUDA 12 on; 11.x kept libcudart.so.11.0, and
// earlier ones named their minor version too (libcudart.so.10.2).
std::string CudartSoname() {
  constexpr int kMajor = CUDART_VERSION / 1000, kMinor = CUDART_VERSION % 1000 / 10;
  if (kMajor >= 12) return "libcudart.so." + std::to_string(kMajor);
  return "libcudart.so." + std::to_string(kMajor) + "." + std::to_string(kMajor == 11 ? 0 : kMinor);
}

// One `&& Find(...)` per function of a table.
#define CUMULUS_CUDA_LIBS_FIND(f) &&Find(handle, CUMULUS_CUDA_LIBS_STR(f), soname, &api.f, why)

}  // namespace

const CudaRuntimeApi* CudaRuntime(std::string* why) {
  static const Loaded<CudaRuntimeApi> loaded = Load<CudaRuntimeApi>(
      CudartSoname(), CUMULUS_CUDART_DIR,
      [](void* handle, const std::string& soname, CudaRuntimeApi& api, std::string* why) {
        return true CUMULUS_CUDART_FUNCTIONS(CUMULUS_CUDA_LIBS_FIND);
      });
  return TableOf(loaded, why);
}

#if CUMULUS_HAVE_NCCL

const NcclApi* Nccl(std::string* why) {
  static const Loaded<NcclApi> loaded =
      Load<NcclApi>("libnccl.so." + std::to_string(NCCL_MAJOR), CUMULUS_NCCL_DIR,
                    [](void* handle, const std::string& soname, NcclApi& api, std::string* why) {
                      return true CUMULUS_NCCL_FUNCTIONS(CUMULUS_CUDA_LIBS_FIND);
                    });
  return TableOf(loaded, why);
}

#endif

}  // namespace cumulus

#endif
