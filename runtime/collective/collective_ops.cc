// The operations of a collective group: each checked, then run on Gloo (host buffers) or NCCL
// (device buffers) under Run, which breaks the group on a failure and says which ranks disagreed.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "runtime/base/numeric.h"
#include "runtime/collective/collective_group_impl.h"

namespace cumulus {

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
  gloo_.reset();
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
    gloo_->AllReduce(data, count, type, op, tag);
    return Status();
  });
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
    gloo_->Broadcast(data, count * DTypeSize(type), root, tag);
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
    gloo_->AllGather(in, out, count * DTypeSize(type), tag);
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
    gloo_->ReduceScatter(in, out, count, type, op, tag, timeout_ms());
    return Status();
  });
}

Status CollectiveGroup::Impl::Barrier() {
  return Run(OpDesc{"Barrier"}, true, [&](uint32_t tag) {
    gloo_->Barrier(tag);
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
    uint32_t slot_tag =
        Hash32(std::to_string(src) + ">" + std::to_string(dst) + "#" + std::to_string(k));
    size_t bytes = count * DTypeSize(type);
    if (sending) {
      gloo_->Send(data, bytes, peer, slot_tag, timeout_ms());
    } else {
      gloo_->Recv(data, bytes, peer, slot_tag, timeout_ms());
    }
    return Status();
  });
}

}  // namespace cumulus
