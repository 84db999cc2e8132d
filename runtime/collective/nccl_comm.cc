#include "runtime/collective/nccl_comm.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "runtime/base/cuda_libs.h"

namespace cumulus {

#if CUMULUS_HAVE_NCCL

namespace {

// The CUDA runtime and NCCL, loaded by the first Available() (runtime/base/cuda_libs.h); only
// called once it said yes, or once VisibleDevices() found a device.
const CudaRuntimeApi& Cuda() { return *CudaRuntime(); }
const NcclApi& Nc() { return *Nccl(); }

// The devices this process sees, and why none where there are none.
int VisibleDevices(std::string* why = nullptr) {
  static std::string error;
  static const int n = [] {
    if (!CudaRuntime(&error)) return 0;
    int count = 0;
    cudaError_t e = Cuda().cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      error = Cuda().cudaGetErrorString(e);
      Cuda().cudaGetLastError();  // clear it: "no device" is not an error for a CPU-only member
      return 0;
    }
    if (count == 0) error = "CUDA sees no device (CUDA_VISIBLE_DEVICES)";
    return count;
  }();
  if (why) *why = error;
  return n;
}

ncclDataType_t NcclType(DType t) {
  switch (t) {
    case DType::kFloat32:
      return ncclFloat32;
    case DType::kFloat64:
      return ncclFloat64;
    case DType::kInt32:
      return ncclInt32;
    case DType::kInt64:
      return ncclInt64;
    case DType::kFloat16:
      return ncclFloat16;
    case DType::kBFloat16:
      return ncclBfloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAvg:
      return ncclAvg;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
  }
  return ncclSum;
}

}  // namespace

struct NcclComm::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0;
  std::atomic<bool> aborted{false};          // ncclCommAbort was called (by the op thread)
  std::atomic<bool> abort_requested{false};  // another thread asked for it
};

// Aborts once, on the thread that polls the communicator.
static void AbortOnce(NcclComm::State& s) {
  if (!s.aborted.exchange(true)) Nc().ncclCommAbort(s.comm);
}

bool NcclComm::Available(std::string* why) {
  std::string error;
  if (VisibleDevices(&error) == 0) {
    if (why) *why = "no GPU is visible to this process: " + error;
    return false;
  }
  if (!Nccl(&error)) {
    if (why) *why = "NCCL is not available: " + error;
    return false;
  }
  return true;
}

std::string NcclComm::DeviceUuid(int device) {
  cudaDeviceProp prop{};
  if (VisibleDevices() == 0) return "device-" + std::to_string(device);
  if (Cuda().cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    Cuda().cudaGetLastError();
    return "device-" + std::to_string(device);
  }
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : prop.uuid.bytes) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

bool NcclComm::IsDevicePointer(const void* p) {
  if (!p || VisibleDevices() == 0) return false;
  cudaPointerAttributes attr{};
  if (Cuda().cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    Cuda().cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

Result<std::string> NcclComm::NewUniqueId() {
  std::string why;
  if (!Available(&why)) return Status::Unavailable(why);
  ncclUniqueId id;
  ncclResult_t r = Nc().ncclGetUniqueId(&id);
  if (r != ncclSuccess) {
    return Status::Unavailable(std::string("ncclGetUniqueId: ") + Nc().ncclGetErrorString(r));
  }
  return std::string(id.internal, sizeof(id.internal));
}

// Polls the communicator until `done` says the work finished; past `deadline`, or on an
// asynchronous NCCL error, aborts it.
static Status Poll(NcclComm::State& s, TimePoint deadline, const std::function<Status()>& done,
                   const char* what) {
  auto pause = std::chrono::microseconds(20);
  while (true) {
    if (s.aborted) return Status::Unavailable(std::string("NCCL ") + what + ": aborted");
    if (s.abort_requested) {
      AbortOnce(s);
      return Status::Unavailable(std::string("NCCL ") + what + ": aborted by the watchdog");
    }
    Status st = done();  // OK: finished; Cancelled: not yet; anything else: failed
    if (st.ok()) return st;
    if (st.code() != StatusCode::kCancelled) {
      AbortOnce(s);
      return Status::Unavailable(std::string("NCCL ") + what + ": " + st.message());
    }
    ncclResult_t async = ncclSuccess;
    Nc().ncclCommGetAsyncError(s.comm, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      std::string why = Nc().ncclGetErrorString(async);
      AbortOnce(s);
      return Status::Unavailable(std::string("NCCL ") + what + ": " + why);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      AbortOnce(s);
      return Status::TimedOut(std::string("NCCL ") + what +
                              " did not finish in time (a peer died or hangs); the communicator "
                              "was aborted");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

// The communicator's state after a non-blocking call: done, not yet, or failed.
static Status CommState(NcclComm::State& s) {
  ncclResult_t state = ncclInProgress;
  Nc().ncclCommGetAsyncError(s.comm, &state);
  if (state == ncclSuccess) return Status();
  if (state == ncclInProgress) return Status::Cancelled("in progress");
  return Status::Unavailable(Nc().ncclGetErrorString(state));
}

Result<std::unique_ptr<NcclComm>> NcclComm::Create(const std::string& unique_id, int world_size,
                                                   int rank, int device, Duration timeout) {
  std::string why;
  if (!Available(&why)) return Status::Unavailable(why);
  if (device < 0 || device >= VisibleDevices()) {
    return Status::InvalidArgument("CUDA device " + std::to_string(device) + " is not visible (" +
                                   std::to_string(VisibleDevices()) + " visible)");
  }
  if (unique_id.size() != sizeof(ncclUniqueId::internal)) {
    return Status::InvalidArgument("a malformed NCCL unique id (" +
                                   std::to_string(unique_id.size()) + " bytes)");
  }
  auto s = std::make_unique<State>();
  s->device = device;
  if (cudaError_t e = Cuda().cudaSetDevice(device); e != cudaSuccess) {
    Cuda().cudaGetLastError();
    return Status::Unavailable("cudaSetDevice(" + std::to_string(device) +
                               "): " + Cuda().cudaGetErrorString(e));
  }
  if (Cuda().cudaStreamCreate(&s->stream) != cudaSuccess) {
    return Status::Unavailable(std::string("cudaStreamCreate: ") +
                               Cuda().cudaGetErrorString(Cuda().cudaGetLastError()));
  }
  ncclUniqueId id;
  std::memcpy(id.internal, unique_id.data(), sizeof(id.internal));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so that a missing rank makes joining time out instead of hang
  ncclResult_t r = Nc().ncclCommInitRankConfig(&s->comm, world_size, id, rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    if (s->comm) Nc().ncclCommAbort(s->comm);
    Cuda().cudaStreamDestroy(s->stream);
    return Status::Unavailable(std::string("ncclCommInitRankConfig: ") +
                               Nc().ncclGetErrorString(r));
  }
  // Creating a communicator (and a CUDA context) can take seconds: at least 30 s for it.
  Duration init_time = std::max<Duration>(timeout, std::chrono::seconds(30));
  Status st = Poll(
      *s, std::chrono::steady_clock::now() + init_time, [&] { return CommState(*s); }, "joining");
  if (!st.ok()) {
    Cuda().cudaStreamDestroy(s->stream);
    return st;
  }
  return std::unique_ptr<NcclComm>(new NcclComm(std::move(s)));
}

NcclComm::NcclComm(std::unique_ptr<State> state) : state_(std::move(state)) {}

NcclComm::~NcclComm() {
  State& s = *state_;
  if (!s.aborted) {
    // Finalize first (it waits for the peers, so bounded here), after which destroy never
    // blocks; a communicator that does not finalize in time is aborted instead.
    bool finalized = false;
    ncclResult_t r = Nc().ncclCommFinalize(s.comm);
    if (r == ncclSuccess || r == ncclInProgress) {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (std::chrono::steady_clock::now() < deadline) {
        ncclResult_t state = ncclInProgress;
        Nc().ncclCommGetAsyncError(s.comm, &state);
        if (state == ncclSuccess) {
          finalized = true;
          break;
        }
        if (state != ncclInProgress) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    if (finalized) {
      Nc().ncclCommDestroy(s.comm);
    } else {
      AbortOnce(s);
    }
  }
  Cuda().cudaStreamDestroy(s.stream);
}

void NcclComm::Abort() { AbortOnce(*state_); }

void NcclComm::RequestAbort() { state_->abort_requested = true; }

// Enqueues with `enqueue` (non-blocking communicator: ncclInProgress is fine), then waits for
// the stream.
template <typename Fn>
static Status Launch(NcclComm::State& s, const char* what, Duration timeout, Fn enqueue) {
  if (s.aborted) return Status::Unavailable(std::string("NCCL ") + what + ": aborted");
  Cuda().cudaSetDevice(s.device);
  TimePoint deadline = std::chrono::steady_clock::now() + timeout;
  ncclResult_t r = enqueue();
  if (r == ncclInProgress) {
    CUMULUS_RETURN_IF_ERROR(Poll(
        s, deadline, [&] { return CommState(s); }, what));
  } else if (r != ncclSuccess) {
    return Status::Unavailable(std::string("NCCL ") + what + ": " + Nc().ncclGetErrorString(r));
  }
  return Poll(
      s, deadline,
      [&] {
        cudaError_t e = Cuda().cudaStreamQuery(s.stream);
        if (e == cudaSuccess) return Status();
        if (e == cudaErrorNotReady) return Status::Cancelled("running");
        Cuda().cudaGetLastError();
        return Status::Unavailable(std::string("CUDA: ") + Cuda().cudaGetErrorString(e));
      },
      what);
}

Status NcclComm::AllReduce(void* data, size_t count, DType type, ReduceOp op, Duration timeout) {
  return Launch(*state_, "allreduce", timeout, [&] {
    return Nc().ncclAllReduce(data, data, count, NcclType(type), NcclOp(op), state_->comm,
                              state_->stream);
  });
}

Status NcclComm::Broadcast(void* data, size_t count, DType type, int root, Duration timeout) {
  return Launch(*state_, "broadcast", timeout, [&] {
    return Nc().ncclBroadcast(data, data, count, NcclType(type), root, state_->comm,
                              state_->stream);
  });
}

Status NcclComm::AllGather(const void* in, void* out, size_t count, DType type, Duration timeout) {
  return Launch(*state_, "allgather", timeout, [&] {
    return Nc().ncclAllGather(in, out, count, NcclType(type), state_->comm, state_->stream);
  });
}

Status NcclComm::ReduceScatter(const void* in, void* out, size_t count, DType type, ReduceOp op,
                               Duration timeout) {
  return Launch(*state_, "reduce-scatter", timeout, [&] {
    return Nc().ncclReduceScatter(in, out, count, NcclType(type), NcclOp(op), state_->comm,
                                  state_->stream);
  });
}

Status NcclComm::Send(const void* data, size_t count, DType type, int peer, Duration timeout) {
  return Launch(*state_, "send", timeout, [&] {
    return Nc().ncclSend(data, count, NcclType(type), peer, state_->comm, state_->stream);
  });
}

Status NcclComm::Recv(void* data, size_t count, DType type, int peer, Duration timeout) {
  return Launch(*state_, "recv", timeout, [&] {
    return Nc().ncclRecv(data, count, NcclType(type), peer, state_->comm, state_->stream);
  });
}

#else  // no NCCL in this build

struct NcclComm::State {};

bool NcclComm::Available(std::string* why) {
  if (why) *why = "this build of Cumulus has no NCCL (configure with -DCUMULUS_CUDA=ON)";
  return false;
}
bool NcclComm::IsDevicePointer(const void*) { return false; }
std::string NcclComm::DeviceUuid(int) { return ""; }
Result<std::string> NcclComm::NewUniqueId() {
  return Status::Unavailable("this build of Cumulus has no NCCL");
}
Result<std::unique_ptr<NcclComm>> NcclComm::Create(const std::string&, int, int, int, Duration) {
  return Status::Unavailable("this build of Cumulus has no NCCL");
}
NcclComm::NcclComm(std::unique_ptr<State> state) : state_(std::move(state)) {}
NcclComm::~NcclComm() = default;
void NcclComm::Abort() {}
void NcclComm::RequestAbort() {}
static Status NoNccl() { return Status::Unavailable("this build of Cumulus has no NCCL"); }
Status NcclComm::AllReduce(void*, size_t, DType, ReduceOp, Duration) { return NoNccl(); }
Status NcclComm::Broadcast(void*, size_t, DType, int, Duration) { return NoNccl(); }
Status NcclComm::AllGather(const void*, void*, size_t, DType, Duration) { return NoNccl(); }
Status NcclComm::ReduceScatter(const void*, void*, size_t, DType, ReduceOp, Duration) {
  return NoNccl();
}
Status NcclComm::Send(const void*, size_t, DType, int, Duration) { return NoNccl(); }
Status NcclComm::Recv(void*, size_t, DType, int, Duration) { return NoNccl(); }

#endif

}  // namespace cumulus
