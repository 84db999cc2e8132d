// PlacementGroupClient: a driver's or worker's requests to make and remove placement groups. The
// node this process is on places the bundles (its GroupCoordinator) and answers; a request waits
// for that answer, up to its timeout, and a group not reserved in time is withdrawn.
//
// Thread safety: Create and Remove may be called from any thread (Create blocks its caller until
// the answer, the timeout, or the node's loss); OnReply and NodeLost from the connection's thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/options.h"
#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/proto/core.capnp.h"

namespace cumulus {

class PlacementGroupClient {
 public:
  // Sends a frame to this process's node (Unavailable when its connection is gone).
  using SendToNode = std::function<Status(std::string frame)>;

  PlacementGroupClient(JobId job, SendToNode send, Clock& clock = SystemClock::Get())
      : job_(job), send_(std::move(send)), clock_(clock) {}

  // Reserves `bundles` with `strategy`; waits up to `timeout_ms` (< 0: forever) for the node's
  // answer. InvalidArgument for a bad request (no bundles, a negative, infinite or NaN amount, a
  // fraction of more than one GPU), TimedOut when the cluster cannot hold it now, Infeasible when
  // it never can, Unavailable when the node is lost. `purpose` goes with the bundles' pending
  // demand (InvalidArgument past kMaxPurposeBytes). The group is `id` when given (the caller's
  // PlacementGroupId::FromRandom(), so that another thread can Cancel it), a new id otherwise.
  // Cancelled when Cancel(id) came before the node's answer (nothing stays reserved).
  Result<std::pair<PlacementGroupId, std::vector<NodeId>>> Create(
      const std::vector<std::map<std::string, double>>& bundles, PlacementGroupStrategy strategy,
      int64_t timeout_ms, const std::string& purpose = "", PlacementGroupId id = {});
  Status Remove(const PlacementGroupId& id);
  // Gives up on the Create under `id` that has not returned, whether it waits for the node's
  // answer or has not begun yet: it returns Cancelled at once and withdraws what the node
  // reserved. A Cancel that comes after its Create returned does nothing (the caller removes the
  // group it got); its id is remembered, at most kMaxCancelled of them, the oldest forgotten.
  void Cancel(const PlacementGroupId& id);
  static constexpr size_t kMaxCancelled = 1024;

  void OnReply(proto::GroupReply::Reader reply);
  // The node's connection is gone: every waiting Create fails.
  void NodeLost();

 private:
  struct Answer {
    bool done = false;
    bool cancelled = false;
    Status status;
    std::vector<NodeId> nodes;
  };

  const JobId job_;
  const SendToNode send_;
  Clock& clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool node_lost_ = false;
  std::unordered_map<PlacementGroupId, Answer> answers_;  // requests waiting for the node
  std::deque<PlacementGroupId> cancelled_;  // Cancel before its Create began (or after it ended)
};

}  // namespace cumulus
