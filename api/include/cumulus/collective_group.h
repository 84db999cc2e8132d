// CollectiveGroup: a group of processes (actors, or any processes of a program on the cluster)
// that run collective operations together: on host buffers over Gloo's TCP transport, on device
// buffers over NCCL (when Cumulus was built with NCCL and the member sees a GPU). One API: the
// backend is chosen by where the buffer lives. Groups are formed with cumulus/collective.h
// (CreateCollectiveGroup, JoinCollectiveGroup).
//
// Every rank must issue the same collective operations in the same order. Each operation carries
// a fingerprint of (its number in the group, kind, dtype, count, reduce op, root): ranks whose
// operations differ never exchange data, and the error says which rank issued what. A member that
// died or hangs makes the operation fail on the others within the group's timeout; the group is
// then unusable and must be formed again with a new generation.
//
// float16 and bfloat16 are reduced in float32 (on Gloo) and rounded back to nearest-even.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "cumulus/status.h"

namespace cumulus {

struct CollectiveOptions;  // how the runtime joins a group (internal)

enum class ReduceOp { kSum, kAvg, kMax, kMin };
enum class DType { kFloat32, kFloat64, kInt32, kInt64, kFloat16, kBFloat16 };
size_t DTypeSize(DType t);
const char* DTypeName(DType t);
// IEEE binary16 and bfloat16 from and to float (round to nearest even).
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float BFloatToFloat(uint16_t b);
uint16_t FloatToBFloat(float f);

// An operation started with an ...Async call. Operations of one group run one at a time, in the
// order they were started (by a thread of the group), so the caller may compute meanwhile.
class CollectiveWork {
 public:
  // Waits until it finished (or `timeout` passed: TimedOut, and the work goes on); its result.
  Status Wait(std::chrono::nanoseconds timeout = std::chrono::nanoseconds::max());
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
