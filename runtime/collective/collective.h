// CollectiveGroup: a group of processes (actors, or any processes with the cluster's address and
// token) that run collective operations together on host buffers, over Gloo's TCP transport.
//
// Each member joins with (group name, generation, world size, rank). Rendezvous goes through the
// head's key-value store: a Gloo rendezvous Store backed by it, under namespace
// "collective/<name>/<generation>", so a group re-formed after a failure (a new generation) never
// reads the old one's addresses. Every operation is bounded by the group's timeout: a member that
// died or hangs makes the operation fail on the others with TimedOut or Unavailable naming the
// group, instead of hanging; the group is then unusable and must be formed again.
//
// float16 and bfloat16 are reduced in float32 and rounded back to nearest-even.
// Not yet: device buffers (NCCL), send/recv, reduce-scatter, and checks that every rank issues
// the same operations in the same order.
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
  std::string name;         // the group
  uint32_t generation = 0;  // a re-formed group takes a new one
  int world_size = 0;
  int rank = -1;
  HostPort head;  // rendezvous through the head's key-value store
  std::string token;
  std::string bind_host = "127.0.0.1";          // where this member listens for the others
  Duration timeout = std::chrono::seconds(60);  // joining, and every operation
};

// An operation started with an ...Async call. Operations of one group run one at a time, in the
// order they were started (by a thread of the group), so the caller may compute meanwhile.
class CollectiveWork {
 public:
  // Waits until it finished (or `timeout` passed: TimedOut, and the work goes on); its result.
  Status Wait(Duration timeout = Duration::max());
  bool Done();

  void Finish(Status st);  // the group's thread

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
  Status Barrier();
  // The same, started now and finished in order by the group's thread; `data` must stay valid
  // (and untouched) until the work is done.
  std::shared_ptr<CollectiveWork> AllReduceAsync(void* data, size_t count, DType type, ReduceOp op);
  std::shared_ptr<CollectiveWork> BroadcastAsync(void* data, size_t count, DType type, int root);

  int rank() const;
  int world_size() const;
  const std::string& name() const;

  class Impl;

 private:
  explicit CollectiveGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cumulus
