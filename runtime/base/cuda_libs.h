// The CUDA runtime and NCCL, loaded the first time they are used (dlopen) instead of linked.
//
// Every worker is the user's program started again, and most workers never touch a GPU. Linked,
// libcudart and libnccl (a 218 MB library) cost each process start a few milliseconds of their
// own initialisers (docs/benchmarks.md, "What a process start costs"). Loaded here, only a
// process that asks about GPUs pays: the node daemon detecting its GPUs, a collective group
// member looking at a buffer, an NCCL communicator. The library loaded is the one whose major
// version this build's headers name (libcudart.so.13, libnccl.so.2): the dynamic loader's search
// first (LD_LIBRARY_PATH, the loader's cache), then the directory the build found it in.
//
// Call sites use the API's own names through the table: `cuda->cudaGetDeviceCount(&n)`. A
// function the headers rename by macro (cudaGetDeviceProperties_v2 in CUDA 12) is looked up
// under the name the macro gives, as a linked call would be.
#pragma once

#include <string>

#if CUMULUS_HAVE_CUDA || CUMULUS_HAVE_NCCL
#include <cuda_runtime_api.h>
#endif
#if CUMULUS_HAVE_NCCL
#include <nccl.h>
#endif

namespace cumulus {

#if CUMULUS_HAVE_CUDA || CUMULUS_HAVE_NCCL

// The CUDA runtime functions Cumulus calls.
#define CUMULUS_CUDART_FUNCTIONS(X) \
  X(cudaGetDeviceCount)             \
  X(cudaGetDeviceProperties)        \
  X(cudaGetErrorString)             \
  X(cudaGetLastError)               \
  X(cudaSetDevice)                  \
  X(cudaStreamCreate)               \
  X(cudaStreamDestroy)              \
  X(cudaStreamQuery)                \
  X(cudaPointerGetAttributes)

struct CudaRuntimeApi {
#define CUMULUS_CUDA_LIBS_MEMBER(f) decltype(&::f) f = nullptr;
  CUMULUS_CUDART_FUNCTIONS(CUMULUS_CUDA_LIBS_MEMBER)
#undef CUMULUS_CUDA_LIBS_MEMBER
};

// The CUDA runtime, loaded on the first call (thread-safe); nullptr when it cannot be loaded, and
// then `why` (if given) says which library was tried and what the loader said.
const CudaRuntimeApi* CudaRuntime(std::string* why = nullptr);

#endif

#if CUMULUS_HAVE_NCCL

// The NCCL functions Cumulus calls.
#define CUMULUS_NCCL_FUNCTIONS(X) \
  X(ncclGetErrorString)           \
  X(ncclGetUniqueId)              \
  X(ncclCommInitRankConfig)       \
  X(ncclCommGetAsyncError)        \
  X(ncclCommAbort)                \
  X(ncclCommFinalize)             \
  X(ncclCommDestroy)              \
  X(ncclAllReduce)                \
  X(ncclBroadcast)                \
  X(ncclAllGather)                \
  X(ncclReduceScatter)            \
  X(ncclSend)                     \
  X(ncclRecv)

struct NcclApi {
#define CUMULUS_CUDA_LIBS_MEMBER(f) decltype(&::f) f = nullptr;
  CUMULUS_NCCL_FUNCTIONS(CUMULUS_CUDA_LIBS_MEMBER)
#undef CUMULUS_CUDA_LIBS_MEMBER
};

// NCCL, loaded on the first call (thread-safe); nullptr when it cannot be loaded (or lacks a
// function above: NCCL 2.14 or later is needed), with `why` as for CudaRuntime.
const NcclApi* Nccl(std::string* why = nullptr);

#endif

}  // namespace cumulus
