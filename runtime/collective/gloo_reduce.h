// The arithmetic of collective operations on host buffers, for Gloo (in Gloo's module only:
// gloo_module.h): Gloo's reduction function for each (type, op), 16-bit floats reduced in float32
// and rounded back to nearest-even, and kAvg's division by the world size.
#pragma once

#include <gloo/allreduce.h>

#include <cstddef>

#include "cumulus/collective_group.h"

namespace cumulus {

// Gloo's reduction of `type` by `op` (kAvg: the sum; Divide afterwards).
gloo::AllreduceOptions::Func ReduceFor(DType type, ReduceOp op);
// kAvg: the sum divided by the world size (integers round towards zero).
void Divide(void* data, size_t count, DType type, int by);

}  // namespace cumulus
