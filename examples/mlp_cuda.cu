// The MLP of examples/fashion_mnist.cc on a GPU: cuBLAS for the matrix products, a few kernels
// for the rest, all on the legacy default stream (which the NCCL stream of a collective group
// waits for). Matrices are row-major as on the CPU; cuBLAS is column-major, so each product
// C = A.B is computed as C^T = B^T.A^T on the same memory.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "mlp_model.h"

namespace {

void Cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

void Blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(int(s)));
  }
}

constexpr int kThreads = 256;
int Blocks(size_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

// z[i, j] = b[j]
__global__ void FillBias(float* z, const float* b, int m, int n) {
  size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (k < size_t(m) * n) z[k] = b[k % n];
}

__global__ void Relu(float* z, size_t n) {
  size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (k < n) z[k] = fmaxf(z[k], 0.0f);
}

// One thread per row of 10 logits: softmax in place, the row's loss, whether it was right, and
// the gradient of the mean loss over m rows ((p - onehot) / m) in delta.
__global__ void SoftmaxLoss(float* z, const uint8_t* y, int m, float* loss, int* right,
                            float* delta) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  float* zi = z + size_t(i) * 10;
  float mx = zi[0];
  int best = 0;
  for (int j = 1; j < 10; ++j) {
    if (zi[j] > mx) {
      mx = zi[j];
      best = j;
    }
  }
  float sum = 0;
  for (int j = 0; j < 10; ++j) sum += (zi[j] = expf(zi[j] - mx));
  for (int j = 0; j < 10; ++j) zi[j] /= sum;
  loss[i] = -logf(fmaxf(zi[y[i]], 1e-12f));
  right[i] = best == y[i];
  for (int j = 0; j < 10; ++j) delta[size_t(i) * 10 + j] = (zi[j] - (j == y[i] ? 1.0f : 0.0f)) / m;
}

// db[j] = sum over rows of delta[i, j]
__global__ void BiasGrad(const float* delta, float* db, int m, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  float s = 0;
  for (int i = 0; i < m; ++i) s += delta[size_t(i) * n + j];
  db[j] = s;
}

// ReLU's derivative: zero where the forward activation was not positive.
__global__ void ReluGrad(float* d, const float* act, size_t n) {
  size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (k < n && act[k] <= 0.0f) d[k] = 0.0f;
}

__global__ void Sgd(float* w, float* v, const float* g, size_t n, float lr, float momentum) {
  size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (k < n) {
    v[k] = momentum * v[k] + g[k];
    w[k] -= lr * v[k];
  }
}

template <typename T>
struct DeviceBuffer {
  T* p = nullptr;
  size_t n = 0;
  void Reserve(size_t want) {
    if (want <= n) return;
    if (p) cudaFree(p);
    p = nullptr;
    Cuda(cudaMalloc(&p, want * sizeof(T)), "cudaMalloc");
    n = want;
  }
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
};

class GpuMlp final : public Model {
 public:
  GpuMlp(int h1, int h2, const std::vector<float>& init)
      : layout_(h1, h2), dims_(layout_.dims), total_(layout_.total) {
    if (init.size() != total_) throw std::runtime_error("initial parameters of the wrong size");
    params_.Reserve(total_);
    grads_.Reserve(total_);
    velocity_.Reserve(total_);
    Cuda(cudaMemcpy(params_.p, init.data(), total_ * sizeof(float), cudaMemcpyHostToDevice),
         "copying the initial parameters");
    Cuda(cudaMemset(velocity_.p, 0, total_ * sizeof(float)), "cudaMemset");
    Blas(cublasCreate(&blas_), "cublasCreate");
  }
  ~GpuMlp() override { cublasDestroy(blas_); }

  const std::vector<size_t>& sizes() const override { return layout_.sizes; }
  float* params() override { return params_.p; }
  float* grads() override { return grads_.p; }

  double Forward(const float* x, const uint8_t* y, int m, int* correct) override {
    for (int l = 0; l < 4; ++l) act_[l].Reserve(size_t(m) * dims_[l]);
    labels_.Reserve(m);
    loss_.Reserve(m);
    right_.Reserve(m);
    delta_.Reserve(size_t(m) * 10);
    Cuda(cudaMemcpy(act_[0].p, x, size_t(m) * 784 * sizeof(float), cudaMemcpyHostToDevice),
         "copying the batch");
    Cuda(cudaMemcpy(labels_.p, y, m, cudaMemcpyHostToDevice), "copying the labels");
    const float one = 1.0f;
    for (int l = 0; l < 3; ++l) {
      int in = dims_[l], out = dims_[l + 1];
      FillBias<<<Blocks(size_t(m) * out), kThreads>>>(act_[l + 1].p, B(params_.p, l), m, out);
      // Z (m x out) += A (m x in) . W (in x out), as Z^T = W^T . A^T.
      Blas(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, out, m, in, &one, W(params_.p, l), out,
                       act_[l].p, in, &one, act_[l + 1].p, out),
           "forward sgemm");
      if (l < 2) Relu<<<Blocks(size_t(m) * out), kThreads>>>(act_[l + 1].p, size_t(m) * out);
    }
    SoftmaxLoss<<<Blocks(m), kThreads>>>(act_[3].p, labels_.p, m, loss_.p, right_.p, delta_.p);
    std::vector<float> loss(m);
    std::vector<int> right(m);
    Cuda(cudaMemcpy(loss.data(), loss_.p, m * sizeof(float), cudaMemcpyDeviceToHost), "loss");
    Cuda(cudaMemcpy(right.data(), right_.p, m * sizeof(int), cudaMemcpyDeviceToHost), "right");
    if (correct) *correct += std::accumulate(right.begin(), right.end(), 0);
    return std::accumulate(loss.begin(), loss.end(), 0.0);
  }

  void Backward(const uint8_t*, int m, const std::function<void(size_t)>& ready) override {
    const float one = 1.0f, zero = 0.0f;
    float* delta = delta_.p;  // (softmax - one-hot) / m, from Forward
    for (int l = 2; l >= 0; --l) {
      int in = dims_[l], out = dims_[l + 1];
      // dW (in x out) = A^T (in x m) . delta (m x out), as dW^T = delta^T . A.
      Blas(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_T, out, in, m, &one, delta, out, act_[l].p, in,
                       &zero, W(grads_.p, l), out),
           "weight gradient sgemm");
      BiasGrad<<<Blocks(out), kThreads>>>(delta, B(grads_.p, l), m, out);
      ready(MlpLayout::WeightTensor(l));
      ready(MlpLayout::WeightTensor(l) + 1);
      if (l == 0) break;
      // prev (m x in) = delta (m x out) . W^T (out x in), as prev^T = W . delta^T.
      auto& prev = back_[l];
      prev.Reserve(size_t(m) * in);
      Blas(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, in, m, out, &one, W(params_.p, l), out,
                       delta, out, &zero, prev.p, in),
           "backward sgemm");
      ReluGrad<<<Blocks(size_t(m) * in), kThreads>>>(prev.p, act_[l].p, size_t(m) * in);
      delta = prev.p;
    }
    Cuda(cudaGetLastError(), "backward kernels");
  }

  void Step(float lr, float momentum) override {
    Sgd<<<Blocks(total_), kThreads>>>(params_.p, velocity_.p, grads_.p, total_, lr, momentum);
    Cuda(cudaGetLastError(), "the SGD kernel");
  }

 private:
  float* W(float* base, int l) const { return base + layout_.weight(l); }
  float* B(float* base, int l) const { return base + layout_.bias(l); }

  MlpLayout layout_;
  const int* dims_;
  size_t total_;
  cublasHandle_t blas_ = nullptr;
  DeviceBuffer<float> params_, grads_, velocity_, delta_, loss_;
  DeviceBuffer<float> act_[4], back_[3];
  DeviceBuffer<uint8_t> labels_;
  DeviceBuffer<int> right_;
};

}  // namespace

int VisibleGpus(std::string* why) {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e == cudaSuccess && devices > 0) return devices;
  *why = e != cudaSuccess ? cudaGetErrorString(e) : "CUDA sees no device";
  cudaGetLastError();
  return 0;
}

std::unique_ptr<Model> MakeGpuMlp(int h1, int h2, const std::vector<float>& init,
                                  std::string* why) {
  std::string none;
  if (VisibleGpus(&none) == 0) {
    *why = "no GPU is visible to this actor: " + none;
    return nullptr;
  }
  try {
    return std::make_unique<GpuMlp>(h1, h2, init);
  } catch (const std::exception& ex) {
    *why = ex.what();
    return nullptr;
  }
}

// The module's entry (mlp_cuda_loader.cc): this file is libfashion_mnist_cuda.so, built with
// hidden symbols but this one.
extern "C" __attribute__((visibility("default"))) void fashion_mnist_gpu_model(GpuModelEntry* out) {
  out->make = &MakeGpuMlp;
  out->visible = &VisibleGpus;
}
