#include "runtime/collective/gloo_reduce.h"

#include <gloo/math.h>

#include <algorithm>
#include <cstdint>

namespace cumulus {

namespace {

template <float (*Load)(uint16_t), uint16_t (*Store)(float), int Op>
void Reduce16(void* c_, const void* a_, const void* b_, size_t n) {
  auto* c = static_cast<uint16_t*>(c_);
  auto* a = static_cast<const uint16_t*>(a_);
  auto* b = static_cast<const uint16_t*>(b_);
  for (size_t i = 0; i < n; ++i) {
    float x = Load(a[i]), y = Load(b[i]);
    c[i] = Store(Op == 0 ? x + y : Op == 1 ? std::max(x, y) : std::min(x, y));
  }
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
gloo::AllreduceOptions::Func Reduce16Func(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax:
      return &Reduce16<Load, Store, 1>;
    case ReduceOp::kMin:
      return &Reduce16<Load, Store, 2>;
    default:
      return &Reduce16<Load, Store, 0>;
  }
}

template <typename T>
gloo::AllreduceOptions::Func ReduceFunc(ReduceOp op) {
  using F = void (*)(void*, const void*, const void*, size_t);
  switch (op) {
    case ReduceOp::kMax:
      return static_cast<F>(&gloo::max<T>);
    case ReduceOp::kMin:
      return static_cast<F>(&gloo::min<T>);
    default:
      return static_cast<F>(&gloo::sum<T>);
  }
}

}  // namespace

gloo::AllreduceOptions::Func ReduceFor(DType type, ReduceOp op) {
  switch (type) {
    case DType::kFloat16:
      return Reduce16Func<HalfToFloat, FloatToHalf>(op);
    case DType::kBFloat16:
      return Reduce16Func<BFloatToFloat, FloatToBFloat>(op);
    case DType::kFloat32:
      return ReduceFunc<float>(op);
    case DType::kFloat64:
      return ReduceFunc<double>(op);
    case DType::kInt32:
      return ReduceFunc<int32_t>(op);
    case DType::kInt64:
      return ReduceFunc<int64_t>(op);
  }
  return nullptr;
}

namespace {

template <typename T>
void DivideT(void* data, size_t count, int by) {
  T* p = static_cast<T*>(data);
  for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / by);
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void Divide16(void* data, size_t count, int by) {
  auto* p = static_cast<uint16_t*>(data);
  for (size_t i = 0; i < count; ++i) p[i] = Store(Load(p[i]) / by);
}

}  // namespace

void Divide(void* data, size_t count, DType type, int by) {
  switch (type) {
    case DType::kFloat16:
      return Divide16<HalfToFloat, FloatToHalf>(data, count, by);
    case DType::kBFloat16:
      return Divide16<BFloatToFloat, FloatToBFloat>(data, count, by);
    case DType::kFloat32:
      return DivideT<float>(data, count, by);
    case DType::kFloat64:
      return DivideT<double>(data, count, by);
    case DType::kInt32:
      return DivideT<int32_t>(data, count, by);
    case DType::kInt64:
      return DivideT<int64_t>(data, count, by);
  }
}

}  // namespace cumulus
