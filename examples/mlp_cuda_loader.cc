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

// The module's two functions, or why it could not be loaded.
struct Loaded {
  GpuModelEntry entry{};
  std::string why;
};

const Loaded& Module() {
  static const Loaded loaded = [] {
    Loaded l;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    std::string dir = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "";
    dir = dir.substr(0, dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
    void* handle = nullptr;
    for (const std::string& path : {dir + "/" + kModule, dir + "/../lib/" + kModule}) {
      if ((handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
      const char* err = dlerror();
      l.why += std::string(l.why.empty() ? "" : "; ") + (err ? err : path);
    }
    if (!handle) {
      l.why = std::string("cannot load the GPU model ") + kModule + " (" + l.why + ")";
      return l;
    }
    auto fill = reinterpret_cast<void (*)(GpuModelEntry*)>(dlsym(handle, kGpuModelSymbol));
    if (!fill) {
      l.why = std::string(kModule) + " has no " + kGpuModelSymbol;
      return l;
    }
    l.why.clear();
    fill(&l.entry);
    return l;
  }();
  return loaded;
}

}  // namespace

std::unique_ptr<Model> MakeGpuMlp(int h1, int h2, const std::vector<float>& init,
                                  std::string* why) {
  const Loaded& m = Module();
  if (!m.entry.make) {
    *why = m.why;
    return nullptr;
  }
  return m.entry.make(h1, h2, init, why);
}

int VisibleGpus(std::string* why) {
  const Loaded& m = Module();
  if (!m.entry.visible) {
    *why = m.why;
    return -1;
  }
  return m.entry.visible(why);
}
