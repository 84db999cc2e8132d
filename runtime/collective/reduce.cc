#include "runtime/collective/reduce.h"

#include <gloo/math.h>
#include <gloo/types.h>

#include <algorithm>
#include <cstring>

namespace cumulus {

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
  }
  return 0;
}

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "?";
}

// 16-bit floats: reduced in float32, rounded back to nearest-even.
float HalfToFloat(uint16_t h) {
  gloo::float16 v;
  v.x = h;
  return gloo::cpu_half2float(v);
}

uint16_t FloatToHalf(float f) { return gloo::cpu_float2half_rn(f).x; }

float BFloatToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToBFloat(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(x >> 16);
}

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

std::string Describe(const OpDesc& d) {
  static const char* kOps[] = {"sum", "avg", "max", "min"};
  std::string s = std::string(d.kind) + "(";
  if (d.count > 0) s += std::string(DTypeName(d.type)) + " x " + std::to_string(d.count);
  if (d.reduce >= 0) s += std::string(", ") + kOps[d.reduce];
  if (d.root >= 0) s += ", rank " + std::to_string(d.root);
  return s + ")";
}

// FNV-1a: Gloo tags and slots from text every rank computes the same way.
uint32_t Hash32(const std::string& key) {
  uint32_t h = 2166136261u;
  for (unsigned char c : key) h = (h ^ c) * 16777619u;
  return h;
}

// The operation's number and description: ranks that disagree on either use different Gloo
// slots, so they never exchange data with each other.
uint32_t Fingerprint(uint64_t seq, const std::string& described) {
  return Hash32(std::to_string(seq) + " " + described);
}

}  // namespace cumulus
