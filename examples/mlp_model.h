// The model of examples/fashion_mnist.cc, on the CPU (mlp_cpu.h) or a GPU (mlp_cuda.cu):
// a 784-h1-h2-10 MLP whose parameters and gradients are flat float32 buffers, laid out in the
// order backpropagation finishes them (W3, b3, W2, b2, W1, b1; W is in x out, row-major).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

// Where each tensor lives in the flat buffers (both models share it).
struct MlpLayout {
  MlpLayout(int h1, int h2) : dims{784, h1, h2, 10} {
    for (int l = 2; l >= 0; --l) {
      sizes.push_back(size_t(dims[l]) * dims[l + 1]);
      sizes.push_back(size_t(dims[l + 1]));
    }
    for (size_t n : sizes) {
      offsets.push_back(total);
      total += n;
    }
  }
  // Layer l's weight tensor (its bias is the next one).
  static size_t WeightTensor(int l) { return size_t(2 * (2 - l)); }
  size_t weight(int l) const { return offsets[WeightTensor(l)]; }
  size_t bias(int l) const { return offsets[WeightTensor(l) + 1]; }

  int dims[4];                // 784, h1, h2, 10
  std::vector<size_t> sizes;  // element counts, in the order above
  std::vector<size_t> offsets;
  size_t total = 0;
};

class Model {
 public:
  Model() = default;
  Model(const Model&) = delete;  // models point into their own layout
  Model& operator=(const Model&) = delete;
  virtual ~Model() = default;
  // Element counts of the six tensors, in the order above.
  virtual const std::vector<size_t>& sizes() const = 0;
  // The flat buffers: host memory for the CPU model, device memory for the GPU one (so that a
  // collective group reduces them with Gloo or NCCL).
  virtual float* params() = 0;
  virtual float* grads() = 0;
  // Forward pass of m samples (x: m x 784 and y on the host); the summed loss, and right answers
  // added to *correct when given.
  virtual double Forward(const float* x, const uint8_t* y, int m, int* correct) = 0;
  // Backward pass of the last Forward (the mean loss over its m samples); calls ready(tensor) as
  // each gradient is final (its kernels enqueued, on the GPU).
  virtual void Backward(const uint8_t* y, int m, const std::function<void(size_t)>& ready) = 0;
  // SGD with momentum on the (averaged) gradients.
  virtual void Step(float lr, float momentum) = 0;
};

// The same MLP on the GPU this process sees (cuBLAS and a few kernels, on the legacy default
// stream), starting from `init` (host, the layout above). Null with `why` where this build has
// no CUDA or no GPU is visible.
std::unique_ptr<Model> MakeGpuMlp(int h1, int h2, const std::vector<float>& init, std::string* why);

// How many GPUs the CUDA runtime shows this process: 0, with `why`, where it shows none or this
// build has no CUDA; -1, with `why`, where this build's GPU model cannot be loaded (a broken
// install, not a machine without GPUs). (The embedded cluster's node detects its GPUs the same
// way.)
int VisibleGpus(std::string* why);

// Where the GPU model is a module (mlp_cuda_loader.cc loads libfashion_mnist_cuda.so), its entry,
// kGpuModelSymbol, fills in the module's own two functions above.
struct GpuModelEntry {
  std::unique_ptr<Model> (*make)(int h1, int h2, const std::vector<float>& init, std::string* why);
  int (*visible)(std::string* why);
};
constexpr const char* kGpuModelSymbol = "fashion_mnist_gpu_model";
