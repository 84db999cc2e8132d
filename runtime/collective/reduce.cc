#include "runtime/collective/reduce.h"

#include <gloo/types.h>  // its inline half-precision conversions

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
