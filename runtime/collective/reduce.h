// What a collective operation is, as every rank describes it (the fingerprint that keeps ranks
// that disagree apart). The element types' sizes, names and 16-bit conversions are in
// cumulus/collective_group.h and defined in reduce.cc; their arithmetic on host buffers is in
// gloo_reduce.h, in Gloo's module.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cumulus/collective_group.h"

namespace cumulus {

// What an operation is, for the fingerprint every rank must share and for error messages.
struct OpDesc {
  const char* kind;
  DType type = DType::kFloat32;
  size_t count = 0;
  int reduce = -1;  // a ReduceOp, or -1
  int root = -1;    // Broadcast's root, or the peer of Send/Recv
};
// "AllReduce(float32 x 100, sum)".
std::string Describe(const OpDesc& d);
// FNV-1a: Gloo tags and slots from text every rank computes the same way.
uint32_t Hash32(const std::string& key);
// The operation's number and description: ranks that disagree on either use different Gloo
// slots, so they never exchange data with each other.
uint32_t Fingerprint(uint64_t seq, const std::string& described);

}  // namespace cumulus
