// Joining a collective group (rendezvous through the head; NCCL if every member can), and
// CollectiveGroup's operations, each queued on the group's thread (collective_worker.cc).
#include "runtime/collective/collective.h"

#include <signal.h>

#include <exception>
#include <map>
#include <mutex>

#include "runtime/base/numeric.h"
#include "runtime/collective/collective_group_impl.h"
#include "runtime/head/control_client.h"

namespace cumulus {

Status CheckCollectiveTimeout(Duration timeout) {
  constexpr int64_t kWeekMs = 7LL * 24 * 3600 * 1000;
  return CheckInteger("the collective group's timeout",
                      SaturatingDurationCast<std::chrono::milliseconds>(timeout).count(),
                      {1, kWeekMs, "milliseconds"});
}

Status CollectiveWork::Wait(Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  // A deadline past what the clock holds is none (wait_for would wrap it into the past).
  auto deadline = SaturatingAdd(std::chrono::steady_clock::now(), timeout);
  if (deadline == decltype(deadline)::max()) {
    cv_.wait(lock, [&] { return done_; });
  } else if (!cv_.wait_until(lock, deadline, [&] { return done_; })) {
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

Status CollectiveGroup::Impl::Join() {
  const auto& o = options_;
  if (o.name.empty()) return Status::InvalidArgument("a collective group needs a name");
  if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size) {
    return Status::InvalidArgument("rank " + std::to_string(o.rank) + " of a group of " +
                                   std::to_string(o.world_size) + " does not exist");
  }
  CUMULUS_RETURN_IF_ERROR(CheckCollectiveTimeout(o.timeout));
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
    auto module = LoadGlooModule();
    if (!module.ok()) return fail(module.status().message());
    gloo_ = (*module)->connect(o.rank, o.world_size, o.bind_host, timeout_ms(), *store_);
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
Result<bool> CollectiveGroup::Impl::AgreeOnNccl(std::string* why) {
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
