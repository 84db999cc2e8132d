// CollectiveGroup: a group of processes (actors, or any processes with the cluster's address and
// token) that run collective operations together: on host buffers over Gloo's TCP transport, on
// device buffers over NCCL (when built with NCCL and the member sees a GPU). One API: the backend
// is chosen by where the buffer lives.
//
// Each member joins with (group name, generation, world size, rank). Rendezvous goes through the
// head's key-value store (a Gloo rendezvous Store backed by it, and the NCCL unique id), in
// namespace "collective" under key prefix "<scope>/<name>/<generation>/", so a group re-formed
// after a failure (a new generation) never reads the old one's addresses; the node of a job's
// driver deletes the job's entries when the driver goes away. NCCL is used only if every member can
// (each has NCCL, sees a GPU, and a different one).
//
// Every rank must issue the same collective operations in the same order. Each operation carries
// a fingerprint of (its number in the group, kind, dtype, count, reduce op, root): ranks whose
// operations differ never exchange data, and when the operation fails (at the latest at the
// group's timeout) the error says which rank issued what. A member that died or hangs makes the
// operation fail on the others within the timeout (a watchdog fails an operation still running
// past its deadline, and aborts the NCCL communicator); the group is then unusable and must be
// formed again with a new generation.
//
// float16 and bfloat16 are reduced in float32 (on Gloo) and rounded back to nearest-even.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/net/tcp.h"

namespace cumulus {

enum class ReduceOp { kSum, kAvg, kMax, kMin };
enum class DType { kFloat32, kFloat64, kInt32, kInt64, kFloat16, kBFloat16 };
size_t DTypeSize(DType t);
const char* DTypeName(DType t);
// IEEE binary16 and bfloat16 from and to float (round to nearest even).
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float BFloatToFloat(uint16_t b);
uint16_t FloatToBFloat(float f);

struct CollectiveOptions {
  std::string name;  // the group
  // What distinguishes this run's group from another of the same name and generation (the
  // runtime's joins use the job id). Members of one group share it; a (scope, name, generation)
  // must not be reused, or members meet the old run's rendezvous entries.
  std::string scope;
  uint32_t generation = 0;  // a re-formed group takes a new one
  int world_size = 0;
  int rank = -1;
  HostPort head;  // rendezvous through the head's key-value store
  std::string token;
  std::string bind_host = "127.0.0.1";          // where this member listens for the others
  Duration timeout = std::chrono::seconds(60);  // joining, and every operation
  // NCCL for device buffers: kAuto forms an NCCL communicator when every member can (this build
  // has NCCL, each sees a GPU through CUDA_VISIBLE_DEVICES, and no two share one); kOn fails Join
  // otherwise; kOff never. All members must pass the same setting.
  enum class Nccl { kAuto, kOn, kOff } nccl = Nccl::kAuto;
  int cuda_device = 0;  // the device (of those visible) the NCCL communicator uses
};

// An operation started with an ...Async call. Operations of one group run one at a time, in the
// order they were started (by a thread of the group), so the caller may compute meanwhile.
class CollectiveWork {
 public:
  // Waits until it finished (or `timeout` passed: TimedOut, and the work goes on); its result.
  Status Wait(Duration timeout = Duration::max());
  bool Done();

  void Finish(Status st);  // the group's thread (or its watchdog)

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  Status status_;
};

class CollectiveGroup {
 public:
  // Waits (up to the timeout) until every rank has joined.
  static Result<std::unique_ptr<CollectiveGroup>> Join(const CollectiveOptions& options);
  ~CollectiveGroup();

  // In place: every rank ends with the reduction of all ranks' `data` (kAvg divides the sum by
  // the world size; integer types round towards zero).
  Status AllReduce(void* data, size_t count, DType type, ReduceOp op);
  // Every rank ends with `root`'s `data`.
  Status Broadcast(void* data, size_t count, DType type, int root);
  // `out` (world_size x count elements) ends with each rank's `in`, in rank order.
  Status AllGather(const void* in, void* out, size_t count, DType type);
  // `in` holds world_size blocks of `count` elements; `out` (count elements) ends with the
  // reduction over all ranks of block `rank()`.
  Status ReduceScatter(const void* in, void* out, size_t count, DType type, ReduceOp op);
  Status Barrier();
  // Point to point, matched in order per (sender, receiver): the k-th Send from A to B fills the
  // k-th Recv on B from A. Send returns once the data is handed over (B has posted its Recv) and,
  // like every operation, runs after this member's earlier ones: two ranks that both Send to each
  // other first wait until the timeout, so order them (the lower rank sends first). They are not
  // part of the collective order that every rank must share.
  Status Send(const void* data, size_t count, DType type, int peer);
  Status Recv(void* data, size_t count, DType type, int peer);

  // The same, started now and finished in order by the group's thread; the buffers must stay
  // valid (and untouched) until the work is done.
  std::shared_ptr<CollectiveWork> AllReduceAsync(void* data, size_t count, DType type, ReduceOp op);
  std::shared_ptr<CollectiveWork> BroadcastAsync(void* data, size_t count, DType type, int root);
  std::shared_ptr<CollectiveWork> AllGatherAsync(const void* in, void* out, size_t count,
                                                 DType type);
  std::shared_ptr<CollectiveWork> ReduceScatterAsync(const void* in, void* out, size_t count,
                                                     DType type, ReduceOp op);
  std::shared_ptr<CollectiveWork> BarrierAsync();
  std::shared_ptr<CollectiveWork> SendAsync(const void* data, size_t count, DType type, int peer);
  std::shared_ptr<CollectiveWork> RecvAsync(void* data, size_t count, DType type, int peer);

  int rank() const;
  int world_size() const;
  const std::string& name() const;
  uint32_t generation() const;
  bool has_nccl() const;  // device buffers can be used
  // OK while usable; after a failed operation, that failure.
  Status health() const;

  class Impl;

 private:
  explicit CollectiveGroup(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace cumulus
