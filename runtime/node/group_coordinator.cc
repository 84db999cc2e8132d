#include "runtime/node/group_coordinator.h"

#include <algorithm>
#include <map>

#include "runtime/base/logging.h"
#include "runtime/base/numeric.h"
#include "runtime/core/messages.h"
#include "runtime/head/node_codec.h"
#include "runtime/net/frame.h"
#include "scheduler/bundle_table.h"
#include "scheduler/node_policy.h"

namespace cumulus {

namespace {

std::string DescribeBundles(const std::vector<ResourceSet>& bundles) {
  std::string out = "[";
  for (size_t i = 0; i < bundles.size(); ++i) out += (i ? ", " : "") + bundles[i].ToString();
  return out + "]";
}

}  // namespace

std::string GroupReplyFrame(const PlacementGroupId& id, const Status& st,
                            const std::vector<NodeId>& nodes, uint32_t round) {
  capnp::MallocMessageBuilder message;
  auto r = message.initRoot<proto::CoreMessage>().initGroupReply();
  r.setGroupId(DataOf(id));
  r.setRound(round);
  r.setCode(static_cast<uint16_t>(st.code()));
  r.setMessage(st.message());
  auto list = r.initNodes(static_cast<unsigned>(nodes.size()));
  for (unsigned i = 0; i < nodes.size(); ++i) list.set(i, DataOf(nodes[i]));
  return EncodeFrame(message);
}

Reservation DecodeReservation(proto::GroupRequest::Reader req) {
  Reservation r;
  r.id = IdFrom<PlacementGroupId>(req.getGroupId());
  r.job = IdFrom<JobId>(req.getJobId());
  r.round = req.getRound();
  for (auto b : req.getBundles()) {
    uint32_t i = b.getIndex();
    if (Status st = CheckInteger("bundle index", i, {0, 1 << 20}); !st.ok()) {
      r.error = st;
      break;
    }
    if (std::find(r.indices.begin(), r.indices.end(), i) != r.indices.end()) {
      r.error = Status::InvalidArgument("bundle " + std::to_string(i) + " is named twice");
      break;
    }
    auto amounts = DecodeRequestedResources(b.getResources());
    if (!amounts.ok()) {
      r.error = amounts.status().WithContext("bundle " + std::to_string(i));
      break;
    }
    if (r.bundles.size() <= i) r.bundles.resize(i + 1);
    r.bundles[i] = std::move(*amounts);
    r.indices.push_back(i);
  }
  if (r.id.IsNil()) r.error = Status::InvalidArgument("a placement group needs a 16-byte id");
  if (r.round == 0 || r.round == kAllRounds) {
    r.error = Status::InvalidArgument("a reservation needs a try number");
  }
  return r;
}

std::string GroupCoordinator::ReleaseFrame(const PlacementGroupId& id, uint32_t round) {
  capnp::MallocMessageBuilder message;
  auto r = message.initRoot<proto::CoreMessage>().initRemoveGroup();
  r.setGroupId(DataOf(id));
  r.setRound(round);
  return EncodeFrame(message);
}

void GroupCoordinator::Reply(uint64_t conn, const PlacementGroupId& id, const Status& st,
                             const std::vector<NodeId>& nodes, uint32_t round) {
  host_.SendToConn(conn, GroupReplyFrame(id, st, nodes, round));
}

void GroupCoordinator::Create(uint64_t origin, const JobId& job, proto::GroupRequest::Reader req) {
  PlacementGroupId id = IdFrom<PlacementGroupId>(req.getGroupId());
  auto refuse = [&](const Status& st) { Reply(origin, id, st, {}); };
  if (id.IsNil()) return refuse(Status::InvalidArgument("a placement group needs a 16-byte id"));
  if (groups_.count(id)) {
    return refuse(Status::AlreadyExists("placement group " + id.Hex() + " already exists"));
  }
  if (req.getStrategy() > 3) {
    return refuse(Status::InvalidArgument("unknown placement group strategy " +
                                          std::to_string(req.getStrategy())));
  }
  GroupOp op;
  op.id = id;
  op.job = job;
  op.strategy = static_cast<GroupStrategy>(req.getStrategy());
  op.origin = origin;
  op.purpose = req.getPurpose().cStr();
  if (Status st = CheckPurpose(op.purpose); !st.ok()) return refuse(st);
  for (auto b : req.getBundles()) {
    auto amounts = DecodeRequestedResources(b.getResources());
    if (!amounts.ok()) {
      return refuse(amounts.status().WithContext("bundle " + std::to_string(op.bundles.size())));
    }
    op.bundles.push_back(std::move(*amounts));
  }
  if (op.bundles.empty()) return refuse(Status::InvalidArgument("a placement group needs bundles"));
  for (size_t i = 0; i < op.bundles.size(); ++i) {
    if (op.bundles[i].empty()) {
      return refuse(Status::InvalidArgument("bundle " + std::to_string(i) +
                                            " of the placement group asks for nothing"));
    }
  }
  groups_.emplace(id, std::move(op));
}

bool GroupCoordinator::Due(TimePoint now) const {
  for (auto& [id, op] : groups_) {
    if (op.state == GroupOp::kWaiting && op.retry_at <= now) return true;
  }
  return false;
}

void GroupCoordinator::Schedule(TimePoint now, DemandList& pending) {
  std::vector<PlacementGroupId> asked;
  for (auto it = groups_.begin(); it != groups_.end();) {
    GroupOp& op = it->second;
    if (op.state != GroupOp::kWaiting) {
      ++it;
      continue;
    }
    PlacementDecision d;
    d.kind = PlacementDecision::kWait;
    if (op.retry_at <= now) {
      d = PlaceGroup(host_.Snapshot(now, false), op.bundles, op.strategy);
      // The view may predate a node that joined: ask the head before saying "never" (the
      // group waits for its answer, which schedules again).
      if (d.kind == PlacementDecision::kInfeasible && host_.RefreshView(now, false)) {
        d.kind = PlacementDecision::kWait;
      }
      if (d.kind == PlacementDecision::kInfeasible) {  // unless a node out of reach would fit
        d = PlaceGroupOrWait(host_.Snapshot(now, false), host_.Snapshot(now, true), op.bundles,
                             op.strategy);
      }
    }
    if (d.kind == PlacementDecision::kInfeasible) {
      Reply(
          op.origin, op.id,
          Status::Infeasible("placement group " + DescribeBundles(op.bundles) + " " +
                             GroupStrategyName(op.strategy) + " can never be placed: " + d.reason),
          {});
      it = groups_.erase(it);
      continue;
    }
    if (d.kind == PlacementDecision::kWait) {
      if (!d.reason.empty()) op.wait_reason = d.reason;
      for (auto& b : op.bundles) pending.emplace_back(b, 1, "", op.purpose, op.wait_reason);
      ++it;
      continue;
    }
    op.state = GroupOp::kReserving;
    op.nodes = d.bundle_nodes;
    op.refused.clear();
    op.round++;
    std::map<NodeId, std::vector<uint32_t>> by_node;
    for (uint32_t i = 0; i < op.nodes.size(); ++i) by_node[op.nodes[i]].push_back(i);
    for (auto& [node, indices] : by_node) {
      if (node == host_.node_id()) {
        Status st = host_.ReserveHere(op.id, op.job, op.round, indices, op.bundles);
        if (!st.ok()) op.refused = st.message();
        continue;
      }
      capnp::MallocMessageBuilder message;
      auto r = message.initRoot<proto::CoreMessage>().initReserveBundles();
      r.setGroupId(DataOf(op.id));
      r.setJobId(DataOf(op.job));
      r.setRound(op.round);
      auto list = r.initBundles(static_cast<unsigned>(indices.size()));
      ResourceSet sum;
      for (unsigned i = 0; i < indices.size(); ++i) {
        const ResourceSet& b = op.bundles[indices[i]];
        list[i].setIndex(indices[i]);
        EncodeResources(b, list[i].initResources(static_cast<unsigned>(b.units().size())));
        sum.Add(b);
      }
      if (!host_.SendToNode(node, EncodeFrame(message), now, /*avoid_if_unreachable=*/true)) {
        op.refused = "node " + node.Hex() + " cannot be reached";
        continue;
      }
      op.awaiting.insert(node);
      // Booked in the view now so that what this pass places next does not count on it.
      host_.BookView(node, sum, /*take=*/true);
    }
    asked.push_back(op.id);
    ++it;
  }
  for (auto& id : asked) Conclude(id, now);
}

// Once every node asked has answered: ready, or released everywhere and waiting again.
void GroupCoordinator::Conclude(const PlacementGroupId& id, TimePoint now) {
  auto it = groups_.find(id);
  if (it == groups_.end()) return;
  GroupOp& op = it->second;
  if (op.state != GroupOp::kReserving || !op.awaiting.empty()) return;
  if (op.removed) {
    ReleaseEverywhere(op, kAllRounds, now);
    Reply(op.origin, id,
          Status::Cancelled("the placement group was removed before it was reserved"), {});
    groups_.erase(it);
    return;
  }
  if (!op.refused.empty()) {
    CUMULUS_LOG(DEBUG) << "node: placement group " << id << " not reserved (" << op.refused
                       << "); trying again";
    ReleaseEverywhere(op, op.round, now);
    op.state = GroupOp::kWaiting;
    op.retry_at = now + std::chrono::milliseconds(100);
    (void)host_.RefreshView(now, /*force=*/true);  // the view was wrong: ask before the next try
    return;
  }
  // Other nodes route the group's tasks by this record; the driver is answered once it is
  // written (Recorded).
  op.state = GroupOp::kRecording;
  GroupRecord record;
  record.job = op.job.Hex();
  for (auto& n : op.nodes) record.nodes.push_back(n.Hex());
  uint32_t round = op.round;
  host_.HeadPut(kGroupsNamespace, id.Hex(), EncodeRecord(record),
                [this, id, round](Status st) { Recorded(id, round, st); });
}

// The head answered the write of a group's record (try `round`).
void GroupCoordinator::Recorded(const PlacementGroupId& id, uint32_t round, const Status& st) {
  auto it = groups_.find(id);
  if (it == groups_.end() || it->second.state != GroupOp::kRecording || it->second.round != round) {
    return;  // forgotten meanwhile (its job ended)
  }
  GroupOp& op = it->second;
  if (op.removed) {
    ReleaseEverywhere(op, kAllRounds, clock_.Now());
    Forget(id);  // its record too
    Reply(op.origin, id,
          Status::Cancelled("the placement group was removed before it was reserved"), {});
    groups_.erase(it);
    return;
  }
  if (!st.ok()) {
    CUMULUS_LOG(WARN) << "node: cannot record placement group " << id
                      << " with the head (only this node can route its tasks): " << st;
  }
  op.state = GroupOp::kReady;
  Reply(op.origin, id, Status(), op.nodes);
  host_.ScheduleAgain();  // its tasks may have waited for it
}

// Releases the bundles of `op` reserved by try `round` or earlier (kAllRounds: for good) on every
// node it placed them on.
void GroupCoordinator::ReleaseEverywhere(const GroupOp& op, uint32_t round, TimePoint now) {
  std::set<NodeId> nodes(op.nodes.begin(), op.nodes.end());
  std::string frame = ReleaseFrame(op.id, round);
  for (const NodeId& n : nodes) {
    if (n == host_.node_id()) {
      host_.ReleaseHere(op.id, round);
    } else {
      (void)host_.SendToNode(n, frame, now, /*avoid_if_unreachable=*/false);
    }
  }
  // Credit the view as it was booked, one sum per node (a credit ends the booking of the same
  // resources): the release reaches each node before anything this node sends it later (one
  // connection, in order), so the next group may count on it.
  std::map<NodeId, ResourceSet> per_node;
  for (size_t i = 0; i < op.nodes.size() && i < op.bundles.size(); ++i) {
    per_node[op.nodes[i]].Add(op.bundles[i]);
  }
  for (const auto& [node, sum] : per_node) host_.BookView(node, sum, /*take=*/false);
}

void GroupCoordinator::OnReply(uint64_t conn, const NodeId& peer, proto::GroupReply::Reader reply) {
  PlacementGroupId id = IdFrom<PlacementGroupId>(reply.getGroupId());
  auto it = groups_.find(id);
  if (it == groups_.end() || it->second.state != GroupOp::kReserving ||
      it->second.round != reply.getRound() || !it->second.awaiting.count(peer)) {
    // Held for a try nobody waits for any more: let that try's bundles go.
    if (reply.getCode() == 0 && reply.getRound() != kAllRounds) {
      host_.SendToConn(conn, ReleaseFrame(id, reply.getRound()));
    }
    return;
  }
  it->second.awaiting.erase(peer);
  if (reply.getCode() != 0) it->second.refused = reply.getMessage();
  Conclude(id, clock_.Now());
}

void GroupCoordinator::OnPeerClosed(const NodeId& peer) {
  std::vector<PlacementGroupId> asked;
  for (auto& [id, op] : groups_) {
    if (op.state == GroupOp::kReserving && op.awaiting.count(peer)) asked.push_back(id);
  }
  TimePoint now = clock_.Now();
  for (auto& id : asked) {
    GroupOp& op = groups_.at(id);
    op.awaiting.erase(peer);
    op.refused = "node " + peer.Hex() + " closed its connection";
    Conclude(id, now);
  }
}

void GroupCoordinator::OnPeerRelease(const PlacementGroupId& id, uint32_t round) {
  if (round != kAllRounds) return;
  ForgetLocation(id);
  // Removed for good by way of another node: if this node made it, forget it here too.
  auto made = groups_.find(id);
  if (made == groups_.end()) return;
  if (made->second.state == GroupOp::kReady) {
    groups_.erase(made);
  } else if (made->second.state == GroupOp::kRecording) {
    made->second.removed = true;  // concluded when the head has answered
  }
}

void GroupCoordinator::Remove(uint64_t conn, const JobId& job, const PlacementGroupId& id) {
  TimePoint now = clock_.Now();
  auto it = groups_.find(id);
  if (it != groups_.end()) {
    GroupOp& op = it->second;
    if (op.job != job) {
      CUMULUS_LOG(WARN) << "node: job " << job << " may not remove placement group " << id
                        << " of job " << op.job;
      return;
    }
    if (op.state == GroupOp::kReserving || op.state == GroupOp::kRecording) {
      op.removed = true;  // released once every node (or the head) has answered
      return;
    }
    if (op.state == GroupOp::kReady) {
      ReleaseEverywhere(op, kAllRounds, now);
      Forget(id);
    } else if (op.origin != conn) {
      Reply(op.origin, id,
            Status::Cancelled("the placement group was removed before it was reserved"), {});
    }
    groups_.erase(it);
    return;
  }
  // Reserved by way of another node (a worker's group): its record says where.
  auto located = Locate(id);
  if (located.ok()) return RemoveLocated(job, id, *located);
  auto lookup = lookups_.find(id);
  if (lookup != lookups_.end()) lookup->second.removals.push_back(job);  // done when it answers
  // else removed already, or never was
}

void GroupCoordinator::RemoveLocated(const JobId& job, const PlacementGroupId& id,
                                     const Location& where) {
  if (where.first != job) {
    CUMULUS_LOG(WARN) << "node: job " << job << " may not remove placement group " << id;
    return;
  }
  GroupOp op;
  op.id = id;
  op.nodes = where.second;
  ReleaseEverywhere(op, kAllRounds, clock_.Now());
  Forget(id);
}

void GroupCoordinator::EndJob(const JobId& job) {
  for (auto it = groups_.begin(); it != groups_.end();) {
    if (it->second.job != job) {
      ++it;
      continue;
    }
    // (A record being written is deleted after it: the head's calls are made in order.)
    GroupOp::State state = it->second.state;
    if (state == GroupOp::kReady || state == GroupOp::kRecording) Forget(it->first);
    it = groups_.erase(it);
  }
}

void GroupCoordinator::Forget(const PlacementGroupId& id) {
  ForgetLocation(id);
  host_.HeadDelete(kGroupsNamespace, id.Hex(), [id](Status st) {
    if (!st.ok() && st.code() != StatusCode::kNotFound) {
      CUMULUS_LOG(WARN) << "node: cannot remove the record of placement group " << id << ": " << st;
    }
  });
}

void GroupCoordinator::ForgetLocation(const PlacementGroupId& id) {
  locations_.erase(id);
  lookup_errors_.erase(id);
  auto lookup = lookups_.find(id);
  if (lookup != lookups_.end()) lookup->second.stale = true;
}

Result<std::pair<JobId, std::vector<NodeId>>> GroupCoordinator::Locate(const PlacementGroupId& id) {
  auto op = groups_.find(id);
  if (op != groups_.end()) {
    if (op->second.state != GroupOp::kReady) {
      return Status::Unavailable("placement group " + id.Hex() + " is not reserved yet");
    }
    return std::make_pair(op->second.job, op->second.nodes);
  }
  auto cached = locations_.find(id);
  if (cached != locations_.end()) return cached->second;
  auto failed = lookup_errors_.find(id);
  if (failed != lookup_errors_.end()) {
    Status st = failed->second;
    lookup_errors_.erase(failed);
    return st;
  }
  if (!lookups_.count(id)) {
    lookups_[id];
    host_.HeadGet(kGroupsNamespace, id.Hex(),
                  [this, id](Result<std::string> raw) { Located(id, std::move(raw)); });
  }
  return Status::Unavailable("placement group " + id.Hex() + " is being looked up");
}

namespace {

Result<std::pair<JobId, std::vector<NodeId>>> DecodeLocation(const PlacementGroupId& id,
                                                             const Result<std::string>& raw) {
  if (!raw.ok()) {
    if (raw.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("placement group " + id.Hex() +
                              " does not exist: it was removed, or its job ended");
    }
    return Status::Unavailable("cannot look up placement group " + id.Hex() + ": " +
                               raw.status().message());
  }
  CUMULUS_ASSIGN_OR_RETURN(GroupRecord record, DecodeRecord<GroupRecord>(*raw));
  std::pair<JobId, std::vector<NodeId>> where;
  CUMULUS_ASSIGN_OR_RETURN(where.first, JobId::FromHex(record.job));
  for (auto& hex : record.nodes) {
    CUMULUS_ASSIGN_OR_RETURN(NodeId n, NodeId::FromHex(hex));
    where.second.push_back(n);
  }
  return where;
}

}  // namespace

// The head answered the lookup of a group's record.
void GroupCoordinator::Located(const PlacementGroupId& id, Result<std::string> raw) {
  auto it = lookups_.find(id);
  if (it == lookups_.end()) return;
  Lookup lookup = std::move(it->second);
  lookups_.erase(it);
  auto where = DecodeLocation(id, raw);
  bool unavailable = !where.ok() && where.status().code() == StatusCode::kUnavailable;
  if (!lookup.stale && where.ok()) locations_[id] = *where;
  if (!lookup.stale && !where.ok() && !unavailable) lookup_errors_[id] = where.status();
  if (where.ok()) {
    for (const JobId& job : lookup.removals) RemoveLocated(job, id, *where);
  }
  // Tasks waiting for it are placed again; not after a head that could not be asked (they wait
  // for the next pass, as the head's link waits before it connects again).
  if (!unavailable) host_.ScheduleAgain();
}

}  // namespace cumulus
