// NcclComm: one member's NCCL communicator, for collective groups on device buffers. Every
// operation is enqueued on the communicator's own CUDA stream (a blocking stream: it waits for
// work on the legacy default stream; work on other streams must be synchronized by the caller
// first) and then polled until its deadline:
// an operation still running then (a peer died or hangs: NCCL has no timeout of its own), or one
// NCCL reports an asynchronous error for, aborts the communicator and fails. Built only with
// NCCL (CUMULUS_HAVE_NCCL), which Available() loads with CUDA's runtime on its first call
// (runtime/base/cuda_libs.h); where either is missing it says why not and every call fails.
#pragma once

#include <memory>
#include <string>

#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/collective/collective.h"

namespace cumulus {

class NcclComm {
 public:
  // Whether this build has NCCL, this process sees a GPU and NCCL loads; `why` says what is
  // missing.
  static bool Available(std::string* why);
  // Whether `p` is device (or managed) memory; false for host memory and in builds without CUDA.
  static bool IsDevicePointer(const void* p);
  // The UUID of visible device `device` (hex), to tell whether two members share a GPU.
  static std::string DeviceUuid(int device);
  // A new NCCL unique id (rank 0 makes it; the others read it from the head), as bytes.
  static Result<std::string> NewUniqueId();
  // Joins the communicator on `device`; fails (and aborts) if the others have not joined within
  // `timeout`.
  static Result<std::unique_ptr<NcclComm>> Create(const std::string& unique_id, int world_size,
                                                  int rank, int device, Duration timeout);
  ~NcclComm();

  Status AllReduce(void* data, size_t count, DType type, ReduceOp op, Duration timeout);
  Status Broadcast(void* data, size_t count, DType type, int root, Duration timeout);
  Status AllGather(const void* in, void* out, size_t count, DType type, Duration timeout);
  Status ReduceScatter(const void* in, void* out, size_t count, DType type, ReduceOp op,
                       Duration timeout);
  Status Send(const void* data, size_t count, DType type, int peer, Duration timeout);
  Status Recv(void* data, size_t count, DType type, int peer, Duration timeout);
  // Aborts the communicator: a kernel waiting for a peer returns, later operations fail. Call it
  // on the thread that runs the operations.
  void Abort();
  // From any other thread (the watchdog): the operation being polled aborts the communicator at
  // its next poll, and fails.
  void RequestAbort();

  struct State;

 private:
  explicit NcclComm(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace cumulus
