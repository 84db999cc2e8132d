// Builds without the CUDA compiler: the GPU model does not exist (see mlp_cuda.cu).
#include "mlp_model.h"

std::unique_ptr<Model> MakeGpuMlp(int, int, const std::vector<float>&, std::string* why) {
  *why = "this build of the example has no CUDA (no CUDA compiler was found at configure time)";
  return nullptr;
}
