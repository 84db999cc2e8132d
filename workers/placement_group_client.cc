#include "workers/placement_group_client.h"

#include <algorithm>
#include <cmath>

#include "runtime/base/numeric.h"
#include "runtime/core/messages.h"
#include "runtime/head/node_codec.h"
#include "runtime/net/frame.h"
#include "scheduler/resources.h"

namespace cumulus {

namespace {

constexpr uint32_t kFinalRelease = 0xFFFFFFFFu;  // GroupRelease.round: for good

std::string RemoveFrame(const PlacementGroupId& id) {
  capnp::MallocMessageBuilder message;
  auto r = message.initRoot<proto::CoreMessage>().initRemoveGroup();
  r.setGroupId(DataOf(id));
  r.setRound(kFinalRelease);
  return EncodeFrame(message);
}

}  // namespace

Result<std::pair<PlacementGroupId, std::vector<NodeId>>> PlacementGroupClient::Create(
    const std::vector<std::map<std::string, double>>& bundles,
    PlacementGroupStrategy group_strategy, int64_t timeout_ms, const std::string& purpose,
    PlacementGroupId id) {
  static const char* kNames[] = {"PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"};
  int strategy = static_cast<int>(group_strategy);
  if (strategy < 0 || strategy > 3) {
    return Status::InvalidArgument("unknown placement group strategy " + std::to_string(strategy));
  }
  if (bundles.empty())
    return Status::InvalidArgument("a placement group needs at least one bundle");
  CUMULUS_RETURN_IF_ERROR(CheckPurpose(purpose));
  std::vector<ResourceSet> sets;
  std::string shapes;
  for (size_t i = 0; i < bundles.size(); ++i) {
    ResourceSet r;
    for (auto& [name, amount] : bundles[i]) {
      Status valid = ResourceSet::CheckAmount(name, amount);
      if (!valid.ok()) {
        return Status::InvalidArgument("bundle " + std::to_string(i) + ": " + valid.message());
      }
      if (amount > 0) r.Set(name, amount);
    }
    if (r.empty()) {
      return Status::InvalidArgument("bundle " + std::to_string(i) + " asks for nothing");
    }
    if (r.GetUnits("GPU") > ResourceSet::kUnit && r.GetUnits("GPU") % ResourceSet::kUnit != 0) {
      return Status::InvalidArgument("bundle " + std::to_string(i) +
                                     ": more than one GPU must be a whole number");
    }
    shapes += (i ? ", " : "") + r.ToString();
    sets.push_back(std::move(r));
  }
  if (id.IsNil()) id = PlacementGroupId::FromRandom();
  capnp::MallocMessageBuilder message;
  auto req = message.initRoot<proto::CoreMessage>().initCreateGroup();
  req.setGroupId(DataOf(id));
  req.setJobId(DataOf(job_));
  req.setStrategy(static_cast<uint8_t>(strategy));
  req.setPurpose(purpose);
  auto list = req.initBundles(static_cast<unsigned>(sets.size()));
  for (unsigned i = 0; i < sets.size(); ++i) {
    list[i].setIndex(i);
    EncodeResources(sets[i], list[i].initResources(static_cast<unsigned>(sets[i].units().size())));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto early = std::find(cancelled_.begin(), cancelled_.end(), id);
    if (early != cancelled_.end()) {  // cancelled before it began: nothing was asked
      cancelled_.erase(early);
      return Status::Cancelled("placement group [" + shapes + "]: its reservation was cancelled");
    }
    answers_[id];  // before the request: the answer may come at once
  }
  Status sent = send_(EncodeFrame(message));  // not under mu_: OnReply's caller holds its lock
  std::unique_lock<std::mutex> lock(mu_);
  auto& answer = answers_[id];
  if (!sent.ok()) {
    answers_.erase(id);
    return sent;
  }
  auto done = [&] { return answer.done || answer.cancelled || node_lost_; };
  bool answered = true;
  // < 0: no limit; one too far to represent is none either (wait_for would wrap).
  TimePoint deadline = timeout_ms < 0
                           ? TimePoint::max()
                           : SaturatingAdd(clock_.Now(), std::chrono::milliseconds(timeout_ms));
  if (deadline == TimePoint::max()) {
    cv_.wait(lock, done);
  } else {
    // The clock is only read for the deadline: the wait itself is for the node's answer.
    while (!done()) {
      if (cv_.wait_for(lock, deadline - clock_.Now()) == std::cv_status::timeout &&
          clock_.Now() >= deadline) {
        answered = done();
        break;
      }
    }
  }
  Answer got = std::move(answer);
  answers_.erase(id);
  lock.unlock();
  std::string what = "placement group [" + shapes + "] " + kNames[strategy];
  if (got.cancelled && !got.done) {
    // Sent after the request, on the same connection: the node withdraws what it reserved.
    (void)send_(RemoveFrame(id));
    return Status::Cancelled(what + ": its reservation was cancelled");
  }
  if (!answered) {
    // Withdraw it: nothing may stay reserved for a group the caller gave up on.
    (void)send_(RemoveFrame(id));
    return Status::TimedOut(what + " was not reserved within " + std::to_string(timeout_ms) +
                            " ms: the cluster could hold it but not now (its bundles show as "
                            "pending demand in `cumulus status`)");
  }
  if (!got.done) return Status::Unavailable(what + ": the connection to the node was lost");
  if (!got.status.ok()) return got.status;
  if (got.nodes.size() != sets.size()) {
    return Status::Internal(what + ": the node answered with " + std::to_string(got.nodes.size()) +
                            " bundle locations");
  }
  return std::make_pair(id, got.nodes);
}

Status PlacementGroupClient::Remove(const PlacementGroupId& id) {
  if (id.IsNil()) {
    return Status::InvalidArgument("not a placement group id (made by CreatePlacementGroup?)");
  }
  return send_(RemoveFrame(id));
}

void PlacementGroupClient::Cancel(const PlacementGroupId& id) {
  if (id.IsNil()) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = answers_.find(id);
  if (it != answers_.end()) {
    it->second.cancelled = true;  // its Create withdraws the group (after its own request)
    cv_.notify_all();
    return;
  }
  cancelled_.push_back(id);
  if (cancelled_.size() > kMaxCancelled) cancelled_.pop_front();
}

void PlacementGroupClient::OnReply(proto::GroupReply::Reader r) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = answers_.find(IdFrom<PlacementGroupId>(r.getGroupId()));
  if (it == answers_.end()) return;  // the caller gave up
  Answer& a = it->second;
  a.done = true;
  if (r.getCode() != 0) a.status = Status(static_cast<StatusCode>(r.getCode()), r.getMessage());
  for (auto n : r.getNodes()) a.nodes.push_back(IdFrom<NodeId>(n));
  cv_.notify_all();
}

void PlacementGroupClient::NodeLost() {
  std::lock_guard<std::mutex> lock(mu_);
  node_lost_ = true;
  cv_.notify_all();
}

}  // namespace cumulus
