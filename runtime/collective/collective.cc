#include "runtime/collective/collective.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include <signal.h>

#include <map>

#include "runtime/collective/head_store.h"
#include "runtime/collective/nccl_comm.h"
#include "runtime/collective/peer_probe.h"
#include "runtime/collective/reduce.h"
#include "runtime/core/messages.h"
#include "runtime/head/control_client.h"

namespace cumulus {

Status CollectiveWork::Wait(Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (timeout == Duration::max()) {
    cv_.wait(lock, [&] { return done_; });
  } else if (!cv_.wait_for(lock, timeout, [&] { return done_; })) {
    return Status::TimedOut("the collective operation did not finish in time (it goes on)");
  }
  return status_;
}

bool CollectiveWork::Done() {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void CollectiveWork::Finish(Status st) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = std::move(st);
    done_ = true;
  }
  cv_.notify_all();
}

namespace {

constexpr uint8_t kReduceScatterPrefix = 0x51;
constexpr uint8_t kPointToPointPrefix = 0x52;

// A Gloo operation still running this long past the group's timeout is given up by the watchdog.
constexpr Duration kWatchdogGrace = std::chrono::seconds(2);
// A collective still running after kProbeAfter (or half the timeout) is compared with what the
// other ranks run, every kProbeEvery, through the head's store.
constexpr Duration kProbeAfter = std::chrono::seconds(1);
constexpr Duration kProbeEvery = std::chrono::milliseconds(500);

}  // namespace

class CollectiveGroup::Impl : public std::enable_shared_from_this<CollectiveGroup::Impl> {
 public:
  explicit Impl(const CollectiveOptions& o) : options_(o) {}

  // Fails what is queued, waits for the operation in flight (bounded: the watchdog gives up on
  // it at its deadline), then stops the threads. A thread stuck in an operation the watchdog gave
  // up on is left to finish on its own (it holds this Impl alive); nothing waits for it.
  void Close() {
    bool gave_up;
    {
      std::unique_lock<std::mutex> lock(mu_);
      closing_ = true;
      FailQueued(Status::Cancelled("the group was closed"));
      cv_.notify_all();
      cv_.wait(lock, [&] { return running_ == nullptr; });
      // An operation given up on may still be inside Gloo, writing into its buffer: wait for it
      // to end (Gloo's own timeout ends it), so that the caller may free the buffers once the
      // group is gone. Only one stuck past even that is left behind.
      cv_.wait_until(lock, busy_since_ + options_.timeout + 2 * kWatchdogGrace,
                     [&] { return !worker_busy_; });
      stop_ = true;
      gave_up = worker_busy_;
    }
    cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    if (worker_.joinable()) {
      if (gave_up) {
        worker_.detach();
      } else {
        worker_.join();
      }
    }
  }

  // Operations run on one thread of the group, in the order they were started.
  std::shared_ptr<CollectiveWork> Start(std::function<Status()> op) {
    auto work = std::make_shared<CollectiveWork>();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) {
        work->Finish(Status::Cancelled("the group was closed"));
        return work;
      }
      if (gave_up_) {  // the thread is stuck: nothing queued would ever run
        work->Finish(broken_);
        return work;
      }
      if (!worker_.joinable()) {
        auto self = shared_from_this();
        worker_ = std::thread([self] { self->Work(); });
        watchdog_ = std::thread([self] { self->Watch(); });
      }
      queue_.emplace_back(work, std::move(op));
    }
    cv_.notify_all();
    return work;
  }

  void Work() {
    while (true) {
      std::pair<std::shared_ptr<CollectiveWork>, std::function<Status()>> next;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_ || gave_up_) return;
        next = std::move(queue_.front());
        queue_.pop_front();
        running_ = next.first;
        running_since_ = busy_since_ = std::chrono::steady_clock::now();
        worker_busy_ = true;
        running_seq_ = 0;  // until Run says which collective it is
        op_returned_ = false;
      }
      cv_.notify_all();  // the watchdog starts timing it
      Status st = next.second();
      {
        std::lock_guard<std::mutex> lock(mu_);
        worker_busy_ = false;
        if (gave_up_) {      // the watchdog already failed it and everything queued
          cv_.notify_all();  // Close may be waiting for it
          return;
        }
        running_ = nullptr;
      }
      cv_.notify_all();  // Close may be waiting for it
      next.first->Finish(std::move(st));
    }
  }

  // Called by an operation once its transfer ended (it then only reports): the watchdog stops
  // timing it.
  void OpReturned() {
    std::lock_guard<std::mutex> lock(mu_);
    op_returned_ = true;
  }

  // The watchdog: an operation still running past the timeout (plus a grace for Gloo's own
  // timeout to fire first) fails, with everything queued behind it, and the group is broken. An
  // NCCL communicator is asked to abort (the polling thread aborts it; its kernels return); a
  // Gloo operation cannot be interrupted, so its thread is left behind, and its buffer may still
  // be written until it ends.
  void Watch() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (!running_ || op_returned_) {  // Work and Close notify when that changes
        cv_.wait(lock);
        continue;
      }
      auto now = std::chrono::steady_clock::now();
      auto deadline = running_since_ + options_.timeout + kWatchdogGrace;
      if (now >= deadline) {
        GiveUp(Status::TimedOut(
            "an operation of group '" + options_.name + "' (rank " + std::to_string(options_.rank) +
            " of " + std::to_string(options_.world_size) + ") was still running " +
            std::to_string(ToMillis(options_.timeout + kWatchdogGrace)) +
            " ms after it started; the watchdog gave up on it: form the group again (a new "
            "generation)"));
        continue;
      }
      if (running_seq_ > 0 && options_.world_size > 1 && now >= next_probe_) {
        // A collective running this long: do the others run the same one, and has any of them
        // failed or given up? (Ranks that issued different operations would otherwise wait for
        // each other until the timeout.)
        auto work = running_;
        uint64_t seq = running_seq_;
        std::string desc = running_desc_;
        lock.unlock();
        std::string differ = probe_->Probe(seq, desc);
        lock.lock();
        next_probe_ = std::chrono::steady_clock::now() + kProbeEvery;
        if (!differ.empty() && running_ == work && !op_returned_) {
          GiveUp(Status::Unavailable(desc + " (operation #" + std::to_string(seq) + ") in group '" +
                                     options_.name + "' (rank " + std::to_string(options_.rank) +
                                     " of " + std::to_string(options_.world_size) +
                                     ") cannot complete: " + differ +
                                     "; the group must be formed again (a new generation); its "
                                     "buffer may be written until the group is destroyed"));
          lock.unlock();
          probe_->Publish("gaveup/rank_" + std::to_string(options_.rank), differ);
          lock.lock();
        }
        continue;
      }
      cv_.wait_until(lock, running_seq_ > 0 ? std::min(deadline, next_probe_) : deadline);
    }
  }

  // Fails the operation in flight and everything queued; the group is broken (holds mu_). The
  // operation's thread, if it is still inside Gloo, is left to end on its own.
  void GiveUp(Status why) {
    gave_up_ = true;
    if (broken_.ok()) broken_ = std::move(why);
    if (nccl_) nccl_->RequestAbort();
    running_->Finish(broken_);
    running_ = nullptr;
    FailQueued(broken_);
    cv_.notify_all();
  }

  void FailQueued(const Status& why) {  // holds mu_
    for (auto& [work, fn] : queue_) work->Finish(why);
    queue_.clear();
  }

  static int64_t ToMillis(Duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  }

  Status Join() {
    const auto& o = options_;
    if (o.name.empty()) return Status::InvalidArgument("a collective group needs a name");
    if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size) {
      return Status::InvalidArgument("rank " + std::to_string(o.rank) + " of a group of " +
                                     std::to_string(o.world_size) + " does not exist");
    }
    ControlClientOptions co;
    co.role = "collective";
    co.request_timeout = o.timeout + std::chrono::seconds(5);
    CUMULUS_ASSIGN_OR_RETURN(auto head, ControlClient::Connect(o.head, o.token, co));
    prefix_ =
        (o.scope.empty() ? "" : o.scope + "/") + o.name + "/" + std::to_string(o.generation) + "/";
    probe_ = std::make_unique<PeerProbe>(o.head, o.token, ns_, prefix_, o.rank);
    auto fail = [&](const std::string& why) {
      return Status::Unavailable("rank " + std::to_string(o.rank) + " could not join group '" +
                                 o.name + "' (generation " + std::to_string(o.generation) + ", " +
                                 std::to_string(o.world_size) + " ranks): " + why);
    };
    try {
      store_ = std::make_unique<HeadStore>(std::move(head), ns_, prefix_, o.timeout);
      gloo::transport::tcp::attr attr;
      attr.hostname = o.bind_host;
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(o.rank, o.world_size);
      ctx->setTimeout(std::chrono::duration_cast<std::chrono::milliseconds>(o.timeout));
      ctx->connectFullMesh(*store_, device);
      context_ = std::move(ctx);
    } catch (const std::exception& e) {
      return fail(e.what());
    }
    if (o.nccl != CollectiveOptions::Nccl::kOff) {
      std::string why;
      auto agreed = AgreeOnNccl(&why);
      if (!agreed.ok()) return fail(agreed.status().message());
      bool nccl = *agreed;
      if (!nccl && o.nccl == CollectiveOptions::Nccl::kOn) {
        return fail("NCCL was asked for (Nccl::kOn), but " + why);
      }
      if (nccl) {
        // Rank 0 makes the NCCL unique id; the others read it from the head.
        std::string id;
        if (o.rank == 0) {
          auto made = NcclComm::NewUniqueId();
          if (!made.ok()) return fail(made.status().message());
          id = *made;
          auto put = store_->client().KvPut(ns_, Key("nccl_id"), id);
          if (!put.ok()) return fail("publishing the NCCL id: " + put.status().message());
        } else {
          auto got = store_->client().KvWait(ns_, Key("nccl_id"), o.timeout);
          if (!got.ok()) return fail("reading the NCCL id: " + got.status().message());
          id = *got;
        }
        auto comm = NcclComm::Create(id, o.world_size, o.rank, o.cuda_device, o.timeout);
        if (!comm.ok()) return fail(comm.status().message());
        nccl_ = std::move(*comm);
      }
    }
    return Status();
  }

  // Every member says whether it can use NCCL (and on which GPU); NCCL is used only if all can,
  // each on a different GPU (NCCL refuses two ranks on one device). `why` says why not.
  Result<bool> AgreeOnNccl(std::string* why) {
    const auto& o = options_;
    std::string reason;
    std::string mine =
        NcclComm::Available(&reason) ? "1 " + NcclComm::DeviceUuid(o.cuda_device) : "0 " + reason;
    auto& head = store_->client();
    auto put = head.KvPut(ns_, Key("nccl/rank_" + std::to_string(o.rank)), mine);
    if (!put.ok())
      return Status::Unavailable("publishing NCCL capability: " + put.status().message());
    std::map<std::string, int> devices;
    bool all = true;
    for (int r = 0; r < o.world_size; ++r) {
      auto theirs = head.KvWait(ns_, Key("nccl/rank_" + std::to_string(r)), o.timeout);
      if (!theirs.ok()) {
        return Status::Unavailable("reading rank " + std::to_string(r) +
                                   "'s NCCL capability: " + theirs.status().message());
      }
      if (theirs->rfind("1 ", 0) != 0) {
        if (all) *why = "rank " + std::to_string(r) + " cannot use NCCL: " + theirs->substr(2);
        all = false;
        continue;
      }
      std::string uuid = theirs->substr(2);
      if (devices.count(uuid) && all) {
        *why = "ranks " + std::to_string(devices[uuid]) + " and " + std::to_string(r) +
               " see the same GPU (NCCL needs one GPU per rank)";
        all = false;
      }
      devices[uuid] = r;
    }
    return all;
  }

  // Runs one operation; a failure (a Gloo exception: a peer gone, a timeout; an NCCL error)
  // breaks the group. `collective` operations carry the group's next number in their
  // fingerprint (which, on Gloo, is their tag); point-to-point ones do not.
  template <typename Fn>
  Status Run(const OpDesc& desc, bool collective, Fn fn) {
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
  std::string Compare(uint64_t seq, const OpDesc& desc) {
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

  Duration timeout() const { return options_.timeout; }
  std::chrono::milliseconds timeout_ms() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(options_.timeout);
  }

  // Enums from callers are checked: a cast integer must not index tables or pick no function.
  static Status CheckTypes(const char* what, DType type, int op) {
    if (DTypeSize(type) == 0) {
      return Status::InvalidArgument(std::string(what) + " of an unknown dtype (" +
                                     std::to_string(static_cast<int>(type)) + ")");
    }
    if (op < -1 || op > static_cast<int>(ReduceOp::kMin)) {
      return Status::InvalidArgument(std::string(what) + " with an unknown reduce op (" +
                                     std::to_string(op) + ")");
    }
    return Status();
  }

  // Where the buffer lives picks the backend.
  Result<bool> OnDevice(const void* a, const void* b = nullptr) {
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

  Status AllReduce(void* data, size_t count, DType type, ReduceOp op) {
    CUMULUS_RETURN_IF_ERROR(CheckTypes("AllReduce", type, static_cast<int>(op)));
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
  static void SetBuffer(gloo::AllreduceOptions& opts, void* data, size_t count) {
    opts.setInput(static_cast<T*>(data), count);
    opts.setOutput(static_cast<T*>(data), count);
  }

  Status Broadcast(void* data, size_t count, DType type, int root) {
    if (root < 0 || root >= options_.world_size) {
      return Status::InvalidArgument("Broadcast from rank " + std::to_string(root) +
                                     ", which is not in a group of " +
                                     std::to_string(options_.world_size));
    }
    CUMULUS_RETURN_IF_ERROR(CheckTypes("Broadcast", type, -1));
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

  Status AllGather(const void* in, void* out, size_t count, DType type) {
    CUMULUS_RETURN_IF_ERROR(CheckTypes("AllGather", type, -1));
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

  Status ReduceScatter(const void* in, void* out, size_t count, DType type, ReduceOp op) {
    CUMULUS_RETURN_IF_ERROR(CheckTypes("ReduceScatter", type, static_cast<int>(op)));
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
  void RingReduceScatter(const void* in, void* out, size_t count, DType type, ReduceOp op,
                         uint32_t tag) {
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

  Status Barrier() {
    return Run(OpDesc{"Barrier"}, true, [&](uint32_t tag) {
      gloo::BarrierOptions opts(context_);
      opts.setTag(tag);
      gloo::barrier(opts);
      return Status();
    });
  }

  Status PointToPoint(bool sending, void* data, size_t count, DType type, int peer) {
    const char* what = sending ? "Send" : "Recv";
    if (peer < 0 || peer >= options_.world_size || peer == options_.rank) {
      return Status::InvalidArgument(std::string(what) + " with rank " + std::to_string(peer) +
                                     ": not another member of a group of " +
                                     std::to_string(options_.world_size));
    }
    CUMULUS_RETURN_IF_ERROR(CheckTypes(what, type, -1));
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
  std::shared_ptr<gloo::Context> context_;
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

Result<std::unique_ptr<CollectiveGroup>> CollectiveGroup::Join(const CollectiveOptions& options) {
  // Gloo writes to its sockets with writev, which raises SIGPIPE when a peer has died: a member
  // must get an error, not be killed by the signal. Ignored only if nobody handles it already.
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }
  auto impl = std::make_shared<Impl>(options);
  CUMULUS_RETURN_IF_ERROR(impl->Join());
  return std::unique_ptr<CollectiveGroup>(new CollectiveGroup(std::move(impl)));
}

CollectiveGroup::CollectiveGroup(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
CollectiveGroup::~CollectiveGroup() { impl_->Close(); }

// Every operation runs on the group's thread, in order; the synchronous ones wait for theirs.
std::shared_ptr<CollectiveWork> CollectiveGroup::AllReduceAsync(void* data, size_t count,
                                                                DType type, ReduceOp op) {
  Impl* g = impl_.get();
  return g->Start([=] { return g->AllReduce(data, count, type, op); });
}
std::shared_ptr<CollectiveWork> CollectiveGroup::BroadcastAsync(void* data, size_t count,
                                                                DType type, int root) {
  Impl* g = impl_.get();
  return g->Start([=] { return g->Broadcast(data, count, type, root); });
}
std::shared_ptr<CollectiveWork> CollectiveGroup::SendAsync(const void* data, size_t count,
                                                           DType type, int peer) {
  Impl* g = impl_.get();
  return g->Start(
      [=] { return g->PointToPoint(true, const_cast<void*>(data), count, type, peer); });
}
std::shared_ptr<CollectiveWork> CollectiveGroup::RecvAsync(void* data, size_t count, DType type,
                                                           int peer) {
  Impl* g = impl_.get();
  return g->Start([=] { return g->PointToPoint(false, data, count, type, peer); });
}
Status CollectiveGroup::AllReduce(void* data, size_t count, DType type, ReduceOp op) {
  return AllReduceAsync(data, count, type, op)->Wait();
}
Status CollectiveGroup::Broadcast(void* data, size_t count, DType type, int root) {
  return BroadcastAsync(data, count, type, root)->Wait();
}
std::shared_ptr<CollectiveWork> CollectiveGroup::AllGatherAsync(const void* in, void* out,
                                                                size_t count, DType type) {
  Impl* g = impl_.get();
  return g->Start([=] { return g->AllGather(in, out, count, type); });
}
std::shared_ptr<CollectiveWork> CollectiveGroup::ReduceScatterAsync(const void* in, void* out,
                                                                    size_t count, DType type,
                                                                    ReduceOp op) {
  Impl* g = impl_.get();
  return g->Start([=] { return g->ReduceScatter(in, out, count, type, op); });
}
std::shared_ptr<CollectiveWork> CollectiveGroup::BarrierAsync() {
  Impl* g = impl_.get();
  return g->Start([=] { return g->Barrier(); });
}
Status CollectiveGroup::AllGather(const void* in, void* out, size_t count, DType type) {
  return AllGatherAsync(in, out, count, type)->Wait();
}
Status CollectiveGroup::ReduceScatter(const void* in, void* out, size_t count, DType type,
                                      ReduceOp op) {
  return ReduceScatterAsync(in, out, count, type, op)->Wait();
}
Status CollectiveGroup::Barrier() { return BarrierAsync()->Wait(); }
Status CollectiveGroup::Send(const void* data, size_t count, DType type, int peer) {
  return SendAsync(data, count, type, peer)->Wait();
}
Status CollectiveGroup::Recv(void* data, size_t count, DType type, int peer) {
  return RecvAsync(data, count, type, peer)->Wait();
}
int CollectiveGroup::rank() const { return impl_->options_.rank; }
int CollectiveGroup::world_size() const { return impl_->options_.world_size; }
const std::string& CollectiveGroup::name() const { return impl_->options_.name; }
uint32_t CollectiveGroup::generation() const { return impl_->options_.generation; }
bool CollectiveGroup::has_nccl() const { return impl_->nccl_ != nullptr; }
Status CollectiveGroup::health() const { return impl_->health(); }

}  // namespace cumulus
