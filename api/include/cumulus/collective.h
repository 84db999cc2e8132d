// Collective groups for programs on the cluster (link cumulus_collective): groups over actors,
// declared from the driver or joined by each member, and gradient bucketing for data-parallel
// training. The operations themselves are CollectiveGroup's (cumulus/collective_group.h):
// Gloo on host buffers, NCCL on device buffers.
//
//   // Driver: actors[i] is rank i.
//   cumulus::CreateCollectiveGroup("trainers", cumulus::ActorIds(actors));
//   // In each actor (a method, not the constructor: every member must be running):
//   auto group = cumulus::JoinCollectiveGroup("trainers");
//   (*group)->AllReduce(grads.data(), grads.size(), cumulus::DType::kFloat32,
//                       cumulus::ReduceOp::kAvg);
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cumulus/collective_group.h"
#include "cumulus/cumulus.h"

namespace cumulus {

// Declares group `name` over `members` (members[i] is rank i) in the head's key-value store,
// for this job (another program's group of the same name is another group). Declaring the name
// again (the group re-formed with restarted actors) makes a new generation: members joining it
// never meet the old one's.
Status CreateCollectiveGroup(const std::string& name, const std::vector<ActorId>& members);

template <typename C>
std::vector<ActorId> ActorIds(const std::vector<ActorHandle<C>>& actors) {
  std::vector<ActorId> ids;
  for (auto& a : actors) ids.push_back(a.id());
  return ids;
}

// In a member actor: waits for a declaration of `name` that lists this actor and joins it (rank
// = its place in the list). Fails if none appears within `timeout`. The timeout (1 ms to a week;
// InvalidArgument otherwise) also bounds every operation of the group.
Result<std::unique_ptr<CollectiveGroup>> JoinCollectiveGroup(
    const std::string& name, std::chrono::nanoseconds timeout = std::chrono::seconds(60));

// In any process of the program (driver, task or actor): joins `name` as `rank` of
// `world_size`, with the cluster's address and credentials filled in; groups are per job. The
// timeout is as above.
Result<std::unique_ptr<CollectiveGroup>> JoinCollectiveGroup(
    const std::string& name, int world_size, int rank, uint32_t generation = 0,
    std::chrono::nanoseconds timeout = std::chrono::seconds(60));

// Gradient bucketing, as PyTorch's DDP: the gradients live in one flat buffer, laid out in the
// order backpropagation finishes them (the last layer's first). They are cut into buckets, a small
// first one (so that communication starts early) and then up to `bucket_bytes` each; a bucket is
// averaged over the group (AllReduceAsync, kAvg) as soon as all its tensors, and all earlier
// buckets, are Ready (buckets start in the same order on every rank), while backpropagation
// computes the earlier layers. A tensor marked twice in a step counts once.
class GradientBuckets {
 public:
  // `sizes`: the element count of each tensor, in ready order; the buffer holds their sum.
  GradientBuckets(CollectiveGroup* group, float* grads, std::vector<size_t> sizes,
                  size_t first_bucket_bytes = size_t{1} << 20,
                  size_t bucket_bytes = size_t{25} << 20);

  // Tensor `i`'s gradient is final for this step.
  void Ready(size_t i);
  // Waits until every bucket is averaged (starting any not yet started); ready for the next step.
  Status Wait();

  size_t buckets() const { return bucket_end_.size(); }
  // The tensors [first, last) of bucket b.
  std::pair<size_t, size_t> bucket_tensors(size_t b) const;

 private:
  void Launch(size_t bucket);

  CollectiveGroup* group_;
  float* grads_;
  std::vector<size_t> sizes_, offsets_;
  std::vector<size_t> bucket_of_, bucket_end_;  // bucket_end_[b]: one past its last tensor
  std::vector<size_t> pending_;                 // tensors of each bucket not yet ready
  std::vector<bool> ready_;                     // tensors marked this step
  size_t next_launch_ = 0;                      // buckets start in order
  std::vector<std::shared_ptr<CollectiveWork>> work_;
};

}  // namespace cumulus
