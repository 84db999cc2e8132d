// Collective groups over actors (declared from the driver, or joined as world size and rank), and
// gradient bucketing: see cumulus/collective.h.
#include <algorithm>
#include <sstream>
#include <thread>

#include "cumulus/collective.h"
#include "runtime/base/numeric.h"
#include "runtime/collective/collective.h"
#include "runtime/core/messages.h"
#include "runtime/net/tcp.h"
#include "workers/core_worker.h"

namespace cumulus {

namespace {

// Declarations live in the head's store (kCollectiveGroupsNamespace): key = "<job hex>/<group
// name>", value = "<generation>\n<actor hex> <actor hex> ...".

Result<CoreWorker*> CurrentRuntimeOrError() {
  CoreWorker* rt = CurrentCoreWorker();
  if (!rt) return Status::InvalidArgument("cumulus::Init() has not been called");
  return rt;
}

std::string DeclarationKey(CoreWorker& rt, const std::string& name) {
  return rt.job_id().Hex() + "/" + name;
}

struct Declaration {
  uint32_t generation = 0;
  std::vector<std::string> members;
};

Result<Declaration> ParseDeclaration(const std::string& raw) {
  std::istringstream in(raw);
  Declaration d;
  std::string generation;
  in >> generation;
  // The next declaration takes generation + 1: the largest one must leave room for it.
  auto g =
      ParseInteger("a collective group declaration's generation", generation, {0, UINT32_MAX - 1});
  if (!g.ok()) return g.status();
  d.generation = static_cast<uint32_t>(*g);
  std::string m;
  while (in >> m) d.members.push_back(m);
  return d;
}

}  // namespace

Status CreateCollectiveGroup(const std::string& name, const std::vector<ActorId>& members) {
  if (name.empty()) return Status::InvalidArgument("a collective group needs a name");
  if (members.empty()) return Status::InvalidArgument("group '" + name + "' has no members");
  for (size_t i = 0; i < members.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (members[i] == members[j]) {
        return Status::InvalidArgument("actor " + members[i].Hex() + " is listed twice in group '" +
                                       name + "'");
      }
    }
  }
  CUMULUS_ASSIGN_OR_RETURN(CoreWorker * runtime, CurrentRuntimeOrError());
  CoreWorker& rt = *runtime;
  uint32_t generation = 0;
  auto old = rt.KvWait(kCollectiveGroupsNamespace, DeclarationKey(rt, name), 0);
  if (old.ok()) {
    auto d = ParseDeclaration(*old);
    if (d.ok()) generation = d->generation + 1;
  }
  std::string value = std::to_string(generation) + "\n";
  for (auto& m : members) value += m.Hex() + " ";
  return rt.KvPut(kCollectiveGroupsNamespace, DeclarationKey(rt, name), value);
}

Result<std::unique_ptr<CollectiveGroup>> JoinCollectiveGroup(const std::string& name,
                                                             Duration timeout) {
  CUMULUS_RETURN_IF_ERROR(CheckCollectiveTimeout(timeout));
  CUMULUS_ASSIGN_OR_RETURN(CoreWorker * runtime, CurrentRuntimeOrError());
  CoreWorker& rt = *runtime;
  ActorId me = rt.current_actor();
  if (me == ActorId()) {
    return Status::InvalidArgument(
        "JoinCollectiveGroup(name) is for actors of a declared group; elsewhere give the world "
        "size and rank");
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string seen;
  while (true) {
    // Short waits: a long one would hold this process's connection to the head.
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto raw = rt.KvWait(kCollectiveGroupsNamespace, DeclarationKey(rt, name),
                         std::clamp<int64_t>(left.count(), 0, 500));
    if (raw.ok()) {
      seen = *raw;
      auto d = ParseDeclaration(*raw);
      if (!d.ok()) return d.status();
      auto it = std::find(d->members.begin(), d->members.end(), me.Hex());
      if (it != d->members.end()) {
        int rank = static_cast<int>(it - d->members.begin());
        return JoinCollectiveGroup(name, static_cast<int>(d->members.size()), rank, d->generation,
                                   timeout);
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::TimedOut("no declaration of collective group '" + name +
                              "' lists this actor (" + me.Hex() +
                              (seen.empty() ? "): none was made" : "): it lists others") +
                              "; declare it from the driver with CreateCollectiveGroup");
    }
    // An earlier declaration (a generation without this actor) is there: wait for the new one.
    if (raw.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Result<std::unique_ptr<CollectiveGroup>> JoinCollectiveGroup(const std::string& name,
                                                             int world_size, int rank,
                                                             uint32_t generation,
                                                             Duration timeout) {
  CUMULUS_ASSIGN_OR_RETURN(CoreWorker * runtime, CurrentRuntimeOrError());
  CoreWorker& rt = *runtime;
  auto [head, token] = rt.cluster_credentials();
  CUMULUS_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(head));
  CollectiveOptions o;
  o.scope = rt.job_id().Hex();  // another run's group of the same name never meets this one
  o.name = name;
  o.generation = generation;
  o.world_size = world_size;
  o.rank = rank;
  o.head = hp;
  o.token = token;
  o.bind_host = rt.bind_host();
  o.timeout = timeout;
  return CollectiveGroup::Join(o);
}

GradientBuckets::GradientBuckets(CollectiveGroup* group, float* grads, std::vector<size_t> sizes,
                                 size_t first_bucket_bytes, size_t bucket_bytes)
    : group_(group), grads_(grads), sizes_(std::move(sizes)) {
  size_t offset = 0, bucket_bytes_so_far = 0;
  for (size_t i = 0; i < sizes_.size(); ++i) {
    offsets_.push_back(offset);
    offset += sizes_[i];
    size_t cap = bucket_end_.empty() ? first_bucket_bytes : bucket_bytes;
    size_t bytes = sizes_[i] * sizeof(float);
    // A bucket takes tensors until the next would pass its cap (a tensor larger than the cap
    // gets a bucket of its own).
    if (i > 0 && bucket_bytes_so_far + bytes > cap) {
      bucket_end_.push_back(i);
      bucket_bytes_so_far = 0;
    }
    bucket_of_.push_back(bucket_end_.size());
    bucket_bytes_so_far += bytes;
  }
  if (!sizes_.empty()) bucket_end_.push_back(sizes_.size());
  pending_.resize(bucket_end_.size());
  work_.resize(bucket_end_.size());
  ready_.assign(sizes_.size(), false);
  for (size_t b = 0; b < bucket_end_.size(); ++b) {
    auto [first, last] = bucket_tensors(b);
    pending_[b] = last - first;
  }
}

std::pair<size_t, size_t> GradientBuckets::bucket_tensors(size_t b) const {
  return {b == 0 ? 0 : bucket_end_[b - 1], bucket_end_[b]};
}

void GradientBuckets::Launch(size_t b) {
  auto [first, last] = bucket_tensors(b);
  size_t count = offsets_[last - 1] + sizes_[last - 1] - offsets_[first];
  work_[b] =
      group_->AllReduceAsync(grads_ + offsets_[first], count, DType::kFloat32, ReduceOp::kAvg);
}

void GradientBuckets::Ready(size_t i) {
  if (i >= sizes_.size() || ready_[i]) return;  // unknown or repeated: nothing changes
  ready_[i] = true;
  --pending_[bucket_of_[i]];
  // Buckets start in bucket order on every rank (the group's operations must match), as soon as
  // they and all before them are complete.
  while (next_launch_ < work_.size() && pending_[next_launch_] == 0) Launch(next_launch_++);
}

Status GradientBuckets::Wait() {
  Status first_error;
  while (next_launch_ < work_.size()) Launch(next_launch_++);  // reduce unmarked ones anyway
  for (size_t b = 0; b < work_.size(); ++b) {
    Status st = work_[b]->Wait();
    if (!st.ok() && first_error.ok()) first_error = st;
    work_[b] = nullptr;
    auto [first, last] = bucket_tensors(b);
    pending_[b] = last - first;
  }
  ready_.assign(sizes_.size(), false);
  next_launch_ = 0;
  return first_error;
}

}  // namespace cumulus
