// The operations of a collective group: each checked, then run on Gloo (host buffers) or NCCL
// (device buffers) under Run, which breaks the group on a failure and says which ranks disagreed.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/types.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/base/numeric.h"
#include "runtime/collective/collective_group_impl.h"

namespace cumulus {

namespace {

constexpr uint8_t kReduceScatterPrefix = 0x51;
constexpr uint8_t kPointToPointPrefix = 0x52;

}  // namespace

// Runs one operation; a failure (a Gloo exception: a peer gone, a timeout; an NCCL error)
// breaks the group. `collective` operations carry the group's next number in their
// fingerprint (which, on Gloo, is their tag); point-to-point ones do not.
template <typename Fn>
Status CollectiveGroup::Impl::Run(const OpDesc& desc, bool collective, Fn fn) {
  const std::string described = Describe(desc);
  uint64_t seq = collective ? next_seq_ : 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!broken_.ok()) return broken_;
    running_seq_ = seq;  // for the watchdog's probe of the others
    running_desc_ = described;
    next_probe_ =
        std::chrono::steady_clock::now() + std::min<Duration>(kProbeAfter, options_.timeout / 2);
  }
  cv_.notify_all();
  if (collective) ++next_seq_;
  uint32_t tag = Fingerprint(seq, described);
  std::string why;
  bool timed_out = false;
  // Fault injection for the watchdog's test: the operation stalls past every deadline.
  static const bool stall = std::getenv("CUMULUS_COLLECTIVE_FAILPOINT") &&
                            std::string(std::getenv("CUMULUS_COLLECTIVE_FAILPOINT")) == "stall";
  if (stall) std::this_thread::sleep_for(options_.timeout + std::chrono::seconds(10));
  try {
    Status st = fn(tag);
    OpReturned();
    if (st.ok()) return st;
    why = st.message();
    timed_out = st.code() == StatusCode::kTimedOut;
  } catch (const std::exception& e) {
    OpReturned();
    why = e.what();
    timed_out =
        why.find("imeout") != std::string::npos || why.find("imed out") != std::string::npos;
  }
  // Close this member's connections now: the others, who may be waiting for it inside the
  // same operation, fail at once instead of at their timeout.
  context_.reset();
  if (nccl_) nccl_->Abort();  // this thread polls it: safe here
  std::string msg = Describe(desc) +
                    (collective ? " (operation #" + std::to_string(seq) + ")" : "") +
                    " in group '" + options_.name + "' (rank " + std::to_string(options_.rank) +
                    " of " + std::to_string(options_.world_size) + ") failed: " + why;
  if (collective) msg += Compare(seq, desc);
  msg += "; the group must be formed again (a new generation)";
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_.ok()) broken_ = timed_out ? Status::TimedOut(msg) : Status::Unavailable(msg);
  return broken_;
}

// After a failed operation: publishes what this rank was doing and reads what the others
// published (briefly: a dead rank publishes nothing), so that ranks that issued different
// operations say so.
std::string CollectiveGroup::Impl::Compare(uint64_t seq, const OpDesc& desc) {
  std::string mine = std::to_string(seq) + " " + Describe(desc);
  auto& head = store_->client();
  if (!head.KvPut(ns_, Key("failed/rank_" + std::to_string(options_.rank)), mine).ok()) return "";
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  std::string differ;
  for (int r = 0; r < options_.world_size; ++r) {
    if (r == options_.rank) continue;
    // What it runs now, if the watchdog published it for this operation (a rank whose
    // watchdog found the disagreement first publishes no failure: it is still inside Gloo);
    // else what it failed in.
    auto theirs = head.KvGet(ns_, Key("inflight/rank_" + std::to_string(r)));
    if (!theirs.ok() || theirs->rfind(std::to_string(seq) + " ", 0) != 0) {
      auto left = std::max<Duration>(until - std::chrono::steady_clock::now(),
                                     std::chrono::milliseconds(1));
      theirs = head.KvWait(ns_, Key("failed/rank_" + std::to_string(r)), left);
    }
    if (!theirs.ok() || *theirs == mine) continue;
    auto space = theirs->find(' ');
    differ += "; rank " + std::to_string(r) + " issued " + theirs->substr(space + 1) +
              " as operation #" + theirs->substr(0, space);
  }
  if (differ.empty()) return "";
  return "; ranks issued different operations (every rank must issue the same collective "
         "operations in the same order): this rank issued " +
         Describe(desc) + " as operation #" + std::to_string(seq) + differ;
}

// Enums from callers are checked: a cast integer must not index tables or pick no function; and
// a count whose bytes wrap would make Gloo or the ring touch less (or more) than the caller's
// buffer.
Status CollectiveGroup::Impl::CheckTypes(const char* what, DType type, int op, size_t count,
                                         size_t blocks) {
  if (DTypeSize(type) == 0) {
    return Status::InvalidArgument(std::string(what) + " of an unknown dtype (" +
                                   std::to_string(static_cast<int>(type)) + ")");
  }
  if (op < -1 || op > static_cast<int>(ReduceOp::kMin)) {
    return Status::InvalidArgument(std::string(what) + " with an unknown reduce op (" +
                                   std::to_string(op) + ")");
  }
  size_t most = std::numeric_limits<size_t>::max() / DTypeSize(type) / std::max<size_t>(blocks, 1);
  return CheckInteger(std::string(what) + "'s count", count,
                      {0, static_cast<int64_t>(std::min<size_t>(most, INT64_MAX))});
}

// Where the buffer lives picks the backend.
Result<bool> CollectiveGroup::Impl::OnDevice(const void* a, const void* b) {
  bool da = NcclComm::IsDevicePointer(a), db = b && NcclComm::IsDevicePointer(b);
  if ((da || db) && !nccl_) {
    std::string why;
    NcclComm::Available(&why);
    return Status::InvalidArgument("a device buffer was given to group '" + options_.name +
                                   "', which has no NCCL communicator (" +
                                   (why.empty() ? "joined with nccl = kOff" : why) + ")");
  }
  if (b && da != db) {
    return Status::InvalidArgument("one buffer is on the device and the other on the host");
  }
  return da;
}

Status CollectiveGroup::Impl::AllReduce(void* data, size_t count, DType type, ReduceOp op) {
  CUMULUS_RETURN_IF_ERROR(CheckTypes("AllReduce", type, static_cast<int>(op), count));
  if (count == 0) return Status();
  if (!data) return Status::InvalidArgument("AllReduce of a null buffer");
  CUMULUS_ASSIGN_OR_RETURN(bool device, OnDevice(data));
  if (options_.world_size == 1 && !device) return Status();  // its own data is the reduction
  OpDesc d{"AllReduce", type, count, static_cast<int>(op)};
  return Run(d, true, [&](uint32_t tag) {
    if (device) return nccl_->AllReduce(data, count, type, op, timeout());
    gloo::AllreduceOptions opts(context_);
    switch (type) {  // Gloo splits the buffer by element: give it the element type
      case DType::kFloat16:
      case DType::kBFloat16:
        SetBuffer<uint16_t>(opts, data, count);
        break;
      case DType::kFloat32:
        SetBuffer<float>(opts, data, count);
        break;
      case DType::kFloat64:
        SetBuffer<double>(opts, data, count);
        break;
      case DType::kInt32:
        SetBuffer<int32_t>(opts, data, count);
        break;
      case DType::kInt64:
        SetBuffer<int64_t>(opts, data, count);
        break;
    }
    opts.setReduceFunction(ReduceFor(type, op));
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setTag(tag);
    gloo::allreduce(opts);
    if (op == ReduceOp::kAvg) Divide(data, count, type, options_.world_size);
    return Status();
  });
}

template <typename T>
void CollectiveGroup::Impl::SetBuffer(gloo::AllreduceOptions& opts, void* data, size_t count) {
  opts.setInput(static_cast<T*>(data), count);
  opts.setOutput(static_cast<T*>(data), count);
}

Status CollectiveGroup::Impl::Broadcast(void* data, size_t count, DType type, int root) {
  if (root < 0 || root >= options_.world_size) {
    return Status::InvalidArgument("Broadcast from rank " + std::to_string(root) +
                                   ", which is not in a group of " +
                                   std::to_string(options_.world_size));
  }
  CUMULUS_RETURN_IF_ERROR(CheckTypes("Broadcast", type, -1, count));
  if (count == 0) return Status();
  if (!data) return Status::InvalidArgument("Broadcast of a null buffer");
  CUMULUS_ASSIGN_OR_RETURN(bool device, OnDevice(data));
  OpDesc d{"Broadcast", type, count, -1, root};
  return Run(d, true, [&](uint32_t tag) {
    if (device) return nccl_->Broadcast(data, count, type, root, timeout());
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(static_cast<uint8_t*>(data), count * DTypeSize(type));
    opts.setRoot(root);
    opts.setTag(tag);
    gloo::broadcast(opts);
    return Status();
  });
}

Status CollectiveGroup::Impl::AllGather(const void* in, void* out, size_t count, DType type) {
  CUMULUS_RETURN_IF_ERROR(CheckTypes("AllGather", type, -1, count, options_.world_size));
  if (count == 0) return Status();
  if (!in || !out) return Status::InvalidArgument("AllGather with a null buffer");
  CUMULUS_ASSIGN_OR_RETURN(bool device, OnDevice(in, out));
  OpDesc d{"AllGather", type, count};
  return Run(d, true, [&](uint32_t tag) {
    if (device) return nccl_->AllGather(in, out, count, type, timeout());
    size_t bytes = count * DTypeSize(type);
    gloo::AllgatherOptions opts(context_);
    opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), bytes);
    opts.setOutput(static_cast<uint8_t*>(out), bytes * options_.world_size);
    opts.setTag(tag);
    gloo::allgather(opts);
    return Status();
  });
}

Status CollectiveGroup::Impl::ReduceScatter(const void* in, void* out, size_t count, DType type,
                                            ReduceOp op) {
  CUMULUS_RETURN_IF_ERROR(
      CheckTypes("ReduceScatter", type, static_cast<int>(op), count, options_.world_size));
  if (count == 0) return Status();
  if (!in || !out) return Status::InvalidArgument("ReduceScatter with a null buffer");
  CUMULUS_ASSIGN_OR_RETURN(bool device, OnDevice(in, out));
  OpDesc d{"ReduceScatter", type, count, static_cast<int>(op)};
  return Run(d, true, [&](uint32_t tag) {
    if (device) return nccl_->ReduceScatter(in, out, count, type, op, timeout());
    RingReduceScatter(in, out, count, type, op, tag);
    return Status();
  });
}

// Ring reduce-scatter: in step s, rank r sends its partial sum of block (r - s - 1) to the
// right and adds the left's partial sum of block (r - s - 2) into its own; after n - 1 steps
// block r holds every rank's contribution.
void CollectiveGroup::Impl::RingReduceScatter(const void* in, void* out, size_t count, DType type,
                                              ReduceOp op, uint32_t tag) {
  const int n = options_.world_size, r = options_.rank;
  const size_t block = count * DTypeSize(type);
  if (n > 1) {
    std::vector<uint8_t> acc(static_cast<const uint8_t*>(in),
                             static_cast<const uint8_t*>(in) + block * n);
    std::vector<uint8_t> scratch(block);
    auto send = context_->createUnboundBuffer(acc.data(), acc.size());
    auto recv = context_->createUnboundBuffer(scratch.data(), scratch.size());
    auto reduce = ReduceFor(type, op);
    const int right = (r + 1) % n, left = (r + n - 1) % n;
    // One deadline for the whole ring, not a timeout per step.
    const auto deadline = std::chrono::steady_clock::now() + timeout_ms();
    auto left_ms = [&] {
      return std::max(std::chrono::milliseconds(1),
                      std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now()));
    };
    for (int s = 0; s < n - 1; ++s) {
      uint64_t slot = gloo::Slot::build(kReduceScatterPrefix, tag + static_cast<uint32_t>(s));
      size_t out_block = static_cast<size_t>((r - s - 1 + 2 * n) % n);
      size_t in_block = static_cast<size_t>((r - s - 2 + 2 * n) % n);
      send->send(right, slot, out_block * block, block);
      recv->recv(left, slot, 0, block);
      recv->waitRecv(left_ms());
      reduce(acc.data() + in_block * block, acc.data() + in_block * block, scratch.data(), count);
      send->waitSend(left_ms());
    }
    std::memcpy(out, acc.data() + static_cast<size_t>(r) * block, block);
  } else {
    std::memcpy(out, in, block);
  }
  if (op == ReduceOp::kAvg) Divide(out, count, type, n);
}

Status CollectiveGroup::Impl::Barrier() {
  return Run(OpDesc{"Barrier"}, true, [&](uint32_t tag) {
    gloo::BarrierOptions opts(context_);
    opts.setTag(tag);
    gloo::barrier(opts);
    return Status();
  });
}

Status CollectiveGroup::Impl::PointToPoint(bool sending, void* data, size_t count, DType type,
                                           int peer) {
  const char* what = sending ? "Send" : "Recv";
  if (peer < 0 || peer >= options_.world_size || peer == options_.rank) {
    return Status::InvalidArgument(std::string(what) + " with rank " + std::to_string(peer) +
                                   ": not another member of a group of " +
                                   std::to_string(options_.world_size));
  }
  CUMULUS_RETURN_IF_ERROR(CheckTypes(what, type, -1, count));
  if (count == 0) return Status();
  if (!data) return Status::InvalidArgument(std::string(what) + " of a null buffer");
  CUMULUS_ASSIGN_OR_RETURN(bool device, OnDevice(data));
  OpDesc d{what, type, count, -1, peer};
  return Run(d, false, [&](uint32_t) {
    if (device) {
      return sending ? nccl_->Send(data, count, type, peer, timeout())
                     : nccl_->Recv(data, count, type, peer, timeout());
    }
    // The k-th message from A to B: both ends count it.
    int src = sending ? options_.rank : peer, dst = sending ? peer : options_.rank;
    uint64_t k = (sending ? sent_ : received_)[peer]++;
    uint64_t slot = gloo::Slot::build(
        kPointToPointPrefix,
        Hash32(std::to_string(src) + ">" + std::to_string(dst) + "#" + std::to_string(k)));
    size_t bytes = count * DTypeSize(type);
    auto buf = context_->createUnboundBuffer(data, bytes);
    if (sending) {
      buf->send(peer, slot, 0, bytes);
      buf->waitSend(timeout_ms());
    } else {
      buf->recv(peer, slot, 0, bytes);
      buf->waitRecv(timeout_ms());
    }
    return Status();
  });
}

}  // namespace cumulus
