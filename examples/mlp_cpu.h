// The model of the Fashion-MNIST examples (fashion_mnist.cc, tune_fashion_mnist.cc) on the CPU:
// a 784-h1-h2-10 MLP (ReLU, softmax cross-entropy, SGD with momentum) in plain loops, behind
// mlp_model.h's Model so that a collective group averages its flat gradient buffer. Header-only,
// so that each example stays one .cc to build. Not thread-safe: one instance per trainer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "mlp_model.h"

// --- the model: 784 -> h1 -> h2 -> 10, ReLU, softmax cross-entropy ----------------------------

// C (m x n) += A (m x k) . B (k x n)
inline void MatMulAdd(const float* a, const float* b, float* c, int m, int k, int n) {
  for (int i = 0; i < m; ++i) {
    float* ci = c + size_t(i) * n;
    for (int p = 0; p < k; ++p) {
      float v = a[size_t(i) * k + p];
      if (v == 0.0f) continue;  // ReLU outputs and image backgrounds are mostly zero
      const float* bp = b + size_t(p) * n;
      for (int j = 0; j < n; ++j) ci[j] += v * bp[j];
    }
  }
}

// C (k x n) += A^T . B, with A (m x k) and B (m x n)
inline void MatTMulAdd(const float* a, const float* b, float* c, int m, int k, int n) {
  for (int i = 0; i < m; ++i) {
    const float* bi = b + size_t(i) * n;
    for (int p = 0; p < k; ++p) {
      float v = a[size_t(i) * k + p];
      if (v == 0.0f) continue;
      float* cp = c + size_t(p) * n;
      for (int j = 0; j < n; ++j) cp[j] += v * bi[j];
    }
  }
}

// C (m x k) = A . B^T, with A (m x n) and B (k x n)
inline void MatMulT(const float* a, const float* b, float* c, int m, int k, int n) {
  for (int i = 0; i < m; ++i) {
    const float* ai = a + size_t(i) * n;
    for (int p = 0; p < k; ++p) {
      const float* bp = b + size_t(p) * n;
      float s = 0;
      for (int j = 0; j < n; ++j) s += ai[j] * bp[j];
      c[size_t(i) * k + p] = s;
    }
  }
}

class Mlp final : public Model {
 public:
  // Parameters and gradients are flat, in the order backpropagation finishes them:
  // W3, b3, W2, b2, W1, b1 (W is in x out).
  Mlp(int h1, int h2, int seed) : layout_(h1, h2), dims_(layout_.dims) {
    params_.assign(layout_.total, 0.0f);
    grads_.assign(layout_.total, 0.0f);
    velocity_.assign(layout_.total, 0.0f);
    std::mt19937 rng(seed);
    for (int l = 0; l < 3; ++l) {  // He initialisation; biases start at zero
      std::normal_distribution<float> dist(0.0f, std::sqrt(2.0f / dims_[l]));
      float* w = W(params_, l);
      for (size_t i = 0; i < size_t(dims_[l]) * dims_[l + 1]; ++i) w[i] = dist(rng);
    }
  }

  const std::vector<size_t>& sizes() const override { return layout_.sizes; }
  float* params() override { return params_.data(); }
  float* grads() override { return grads_.data(); }
  const std::vector<float>& host_params() const { return params_; }
  // The momentum buffers (host_params()'s size): with the parameters, the state a checkpoint
  // keeps.
  const std::vector<float>& host_velocity() const { return velocity_; }
  // Sets parameters and momentum buffers, each host_params().size() floats (from a checkpoint).
  void SetState(const float* params, const float* velocity) {
    std::copy(params, params + params_.size(), params_.begin());
    std::copy(velocity, velocity + velocity_.size(), velocity_.begin());
  }

  // Forward pass of m samples; fills the activations; returns the summed loss (and, with
  // `correct`, counts right answers).
  double Forward(const float* x, const uint8_t* y, int m, int* correct) override {
    act_[0].assign(x, x + size_t(m) * 784);
    for (int l = 0; l < 3; ++l) {
      int in = dims_[l], out = dims_[l + 1];
      auto& next = act_[l + 1];
      next.assign(size_t(m) * out, 0.0f);
      const float* b = B(params_, l);
      for (int i = 0; i < m; ++i) std::copy(b, b + out, next.begin() + size_t(i) * out);
      MatMulAdd(act_[l].data(), W(params_, l), next.data(), m, in, out);
      if (l < 2) {
        for (auto& v : next) v = std::max(v, 0.0f);
      }
    }
    // Softmax in place on the logits.
    double loss = 0;
    auto& z = act_[3];
    for (int i = 0; i < m; ++i) {
      float* zi = z.data() + size_t(i) * 10;
      float mx = *std::max_element(zi, zi + 10);
      float sum = 0;
      for (int j = 0; j < 10; ++j) sum += (zi[j] = std::exp(zi[j] - mx));
      for (int j = 0; j < 10; ++j) zi[j] /= sum;
      loss -= std::log(std::max(zi[y[i]], 1e-12f));
      if (correct && std::max_element(zi, zi + 10) - zi == y[i]) ++*correct;
    }
    return loss;
  }

  // Backward pass of the last Forward (mean loss over its m samples); calls ready(tensor) as
  // each gradient is final.
  void Backward(const uint8_t* y, int m, const std::function<void(size_t)>& ready) override {
    std::vector<float> delta(act_[3]);  // softmax - one-hot, over m
    for (int i = 0; i < m; ++i) delta[size_t(i) * 10 + y[i]] -= 1.0f;
    for (auto& v : delta) v /= m;
    for (int l = 2; l >= 0; --l) {
      int in = dims_[l], out = dims_[l + 1];
      float* gw = W(grads_, l);
      float* gb = B(grads_, l);
      std::fill(gw, gw + size_t(in) * out, 0.0f);
      std::fill(gb, gb + out, 0.0f);
      MatTMulAdd(act_[l].data(), delta.data(), gw, m, in, out);
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < out; ++j) gb[j] += delta[size_t(i) * out + j];
      }
      ready(MlpLayout::WeightTensor(l));
      ready(MlpLayout::WeightTensor(l) + 1);
      if (l == 0) break;
      std::vector<float> prev(size_t(m) * in);
      MatMulT(delta.data(), W(params_, l), prev.data(), m, in, out);
      for (size_t i = 0; i < prev.size(); ++i) {
        if (act_[l][i] <= 0.0f) prev[i] = 0.0f;  // ReLU
      }
      delta.swap(prev);
    }
  }

  // SGD with momentum on the (averaged) gradients.
  void Step(float lr, float momentum) override {
    for (size_t i = 0; i < params_.size(); ++i) {
      velocity_[i] = momentum * velocity_[i] + grads_[i];
      params_[i] -= lr * velocity_[i];
    }
  }

 private:
  float* W(std::vector<float>& v, int l) { return v.data() + layout_.weight(l); }
  float* B(std::vector<float>& v, int l) { return v.data() + layout_.bias(l); }

  MlpLayout layout_;
  const int* dims_;
  std::vector<float> params_, grads_, velocity_;
  std::vector<float> act_[4];
};
