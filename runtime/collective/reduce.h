// The element types of collective operations and their arithmetic on host buffers: Gloo's
// reduction functions for each (type, op), 16-bit floats reduced in float32 and rounded back to
// nearest-even, and kAvg's division by the world size. Also what an operation is, as every rank
// describes it (the fingerprint that keeps ranks that disagree apart).
#pragma once

#include <gloo/allreduce.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "cumulus/collective_group.h"

namespace cumulus {

// Gloo's reduction of `type` by `op` (kAvg: the sum; Divide afterwards).
gloo::AllreduceOptions::Func ReduceFor(DType type, ReduceOp op);
// kAvg: the sum divided by the world size (integers round towards zero).
void Divide(void* data, size_t count, DType type, int by);

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
