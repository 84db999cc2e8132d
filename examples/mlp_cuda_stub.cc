// Builds without the CUDA compiler: the GPU model does not exist (see mlp_cuda.cu).
#include "mlp_model.h"

namespace {
const char* kNoCuda =
    "this build of the example has no CUDA (no CUDA compiler was found at configure time)";
}

std::unique_ptr<Model> MakeGpuMlp(int, int, const std::vector<float>&, std::string* why) {
  *why = kNoCuda;
  return nullptr;
}

int VisibleGpus(std::string* why) {
  *why = kNoCuda;
  return 0;
}
