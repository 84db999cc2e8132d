// CollectiveGroup::Impl: one member of a collective group, private to runtime/collective.
// collective.cc joins the group; collective_worker.cc runs its operations on the group's thread,
// in order, under a watchdog; collective_ops.cc holds the operations (Gloo on host buffers, through
// the module of gloo_module.h; NCCL on device buffers).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "cumulus/collective_group.h"
#include "runtime/collective/collective.h"
#include "runtime/collective/gloo_module.h"
#include "runtime/collective/head_store.h"
#include "runtime/collective/nccl_comm.h"
#include "runtime/collective/peer_probe.h"
#include "runtime/collective/reduce.h"
#include "runtime/core/messages.h"

namespace cumulus {

// A Gloo operation still running this long past the group's timeout is given up by the watchdog.
constexpr Duration kWatchdogGrace = std::chrono::seconds(2);
// A collective still running after kProbeAfter (or half the timeout) is compared with what the
// other ranks run, every kProbeEvery, through the head's store.
constexpr Duration kProbeAfter = std::chrono::seconds(1);
constexpr Duration kProbeEvery = std::chrono::milliseconds(500);

class CollectiveGroup::Impl : public std::enable_shared_from_this<CollectiveGroup::Impl> {
 public:
  explicit Impl(const CollectiveOptions& o) : options_(o) {}

  // collective_worker.cc: the group's thread and its watchdog.
  void Close();
  std::shared_ptr<CollectiveWork> Start(std::function<Status()> op);
  void Work();
  void OpReturned();
  void Watch();
  void GiveUp(Status why);
  void FailQueued(const Status& why);
  static int64_t ToMillis(Duration d);

  // collective.cc: joining.
  Status Join();
  Result<bool> AgreeOnNccl(std::string* why);

  // collective_ops.cc: the operations.
  template <typename Fn>
  Status Run(const OpDesc& desc, bool collective, Fn fn);
  std::string Compare(uint64_t seq, const OpDesc& desc);
  // `type` and `op` are known, and `count` elements (times `blocks`: the world size for the
  // buffer of AllGather's output and ReduceScatter's input) are a number of bytes a size_t holds.
  static Status CheckTypes(const char* what, DType type, int op, size_t count, size_t blocks = 1);
  Result<bool> OnDevice(const void* a, const void* b = nullptr);
  Status AllReduce(void* data, size_t count, DType type, ReduceOp op);
  Status Broadcast(void* data, size_t count, DType type, int root);
  Status AllGather(const void* in, void* out, size_t count, DType type);
  Status ReduceScatter(const void* in, void* out, size_t count, DType type, ReduceOp op);
  Status Barrier();
  Status PointToPoint(bool sending, void* data, size_t count, DType type, int peer);

  Duration timeout() const { return options_.timeout; }
  std::chrono::milliseconds timeout_ms() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(options_.timeout);
  }

  Status health() {
    std::lock_guard<std::mutex> lock(mu_);
    return broken_;
  }

  // This group's entries in the head's store: namespace ns_, keys prefix_ + ...
  std::string Key(const std::string& k) const { return prefix_ + k; }

  CollectiveOptions options_;
  std::string ns_ = kCollectiveNamespace;
  std::string prefix_;
  std::unique_ptr<HeadStore> store_;
  std::unique_ptr<GlooMember> gloo_;  // from libcumulus_gloo.so; reset when an operation fails
  std::unique_ptr<NcclComm> nccl_;
  uint64_t next_seq_ = 1;
  std::map<int, uint64_t> sent_, received_;

  std::mutex mu_;  // guards what follows
  std::condition_variable cv_;
  std::deque<std::pair<std::shared_ptr<CollectiveWork>, std::function<Status()>>> queue_;
  std::shared_ptr<CollectiveWork> running_;
  TimePoint running_since_;
  bool closing_ = false;      // Close began: nothing new starts
  bool stop_ = false;         // the threads end
  bool gave_up_ = false;      // the watchdog failed the operation in flight
  bool op_returned_ = false;  // the operation in flight is only reporting its failure
  bool worker_busy_ = false;  // the worker thread is inside an operation (given up on or not)
  TimePoint busy_since_;
  uint64_t running_seq_ = 0;  // the collective in flight (0: none, or point to point)
  std::string running_desc_;
  TimePoint next_probe_;
  std::unique_ptr<PeerProbe> probe_;  // the watchdog's, made at Join
  Status broken_;
  std::thread worker_, watchdog_;
};

}  // namespace cumulus
