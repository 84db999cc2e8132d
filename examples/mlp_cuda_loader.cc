// The GPU model is a module of its own, libfashion_mnist_cuda.so (mlp_cuda.cu), loaded by the
// first call below: cuBLAS and CUDA's runtime take about 0.3 s to load into a process, and every
// worker of this program is the program started again, most of them (--device cpu) never
// touching a GPU. The module is looked for next to the program and in ../lib (build/bin and
// build/lib in Cumulus's tree).
#include <dlfcn.h>
#include <unistd.h>

#include "mlp_model.h"

namespace {

constexpr const char* kModule = "libfashion_mnist_cuda.so";

const GpuModelEntry& Module(std::string** error) {
  static std::string why;
  static const GpuModelEntry entry = [] {
    GpuModelEntry e{};
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    std::string dir = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "";
    dir = dir.substr(0, dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
    void* handle = nullptr;
    for (const std::string& path : {dir + "/" + kModule, dir + "/../lib/" + kModule}) {
      if ((handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
      const char* err = dlerror();
      why += std::string(why.empty() ? "" : "; ") + (err ? err : path);
    }
    if (!handle) {
      why = std::string("cannot load the GPU model ") + kModule + " (" + why + ")";
      return e;
    }
    auto fill = reinterpret_cast<void (*)(GpuModelEntry*)>(dlsym(handle, kGpuModelSymbol));
    if (!fill) {
      why = std::string(kModule) + " has no " + kGpuModelSymbol;
      return e;
    }
    fill(&e);
    return e;
  }();
  *error = &why;
  return entry;
}

}  // namespace

std::unique_ptr<Model> MakeGpuMlp(int h1, int h2, const std::vector<float>& init,
                                  std::string* why) {
  std::string* error = nullptr;
  const GpuModelEntry& m = Module(&error);
  if (!m.make) {
    *why = *error;
    return nullptr;
  }
  return m.make(h1, h2, init, why);
}

int VisibleGpus(std::string* why) {
  std::string* error = nullptr;
  const GpuModelEntry& m = Module(&error);
  if (!m.visible) {
    *why = *error;
    return -1;
  }
  return m.visible(why);
}
