// TaskRouter as NodeContext: the node as its units (GroupCoordinator, LocalScheduler) see it,
// its connections to other nodes (PeerConn), and the head's requests, made off the loop
// (AskHead).
#include <unistd.h>

#include <map>

#include "runtime/base/logging.h"
#include "runtime/core/messages.h"
#include "runtime/core/task_router_impl.h"
#include "runtime/net/first_segment.h"
#include "runtime/net/tcp.h"

namespace cumulus {

namespace {

// A job with more frees than this in one batch is looked up by listing its moves (one page per
// kv list call) rather than by one get per object.
constexpr size_t kMoveGetsPerJob = 16;

using Moves = std::vector<std::pair<ObjectId, NodeId>>;

// Where the head says each of `ids` was handed on (those it has no move for are left out), in
// a few requests: per job, one get per object, or for many objects a listing of the job's moves.
// A request that fails loses only the objects it was for: the moves found by the others are
// returned (and freed by the caller), and the failure is logged with how many were not looked up.
Result<Moves> LookUpMoves(ControlClient& head, const std::vector<ObjectId>& ids) {
  std::map<std::string, std::map<std::string, ObjectId>> by_job;  // job prefix -> key -> id
  for (const ObjectId& id : ids) {
    by_job[id.Task().Job().Hex() + "/"].emplace(ObjectMoveKey(id), id);
  }
  Moves out;
  auto add = [&](const ObjectId& id, const std::string& value) {
    auto move = ParseObjectMove(value);
    if (move.ok()) out.emplace_back(id, move->node);
  };
  size_t not_looked_up = 0;
  Status first_error;
  auto failed = [&](size_t n, const Status& why) {
    if (not_looked_up == 0) first_error = why;
    not_looked_up += n;
  };
  for (auto& [prefix, wanted] : by_job) {
    if (wanted.size() <= kMoveGetsPerJob) {
      for (auto& [key, id] : wanted) {
        auto r = head.KvGet(kObjectMovesNamespace, key);
        if (r.ok()) {
          add(id, *r);
        } else if (r.status().code() != StatusCode::kNotFound) {
          failed(1, r.status());
        }
      }
      continue;
    }
    // From just before the smallest key wanted to the largest, stopping once all are seen:
    // the job's moves grow with every object it ever moved.
    const std::string& first = wanted.begin()->first;
    std::string after = first.substr(0, first.size() - 1);
    size_t seen = 0;
    for (;;) {
      auto page = head.KvList(kObjectMovesNamespace, prefix, after);
      if (!page.ok()) {
        failed(wanted.size() - seen, page.status());
        break;
      }
      for (auto& [key, value] : page->entries) {
        auto w = wanted.find(key);
        if (w != wanted.end()) {
          add(w->second, value);
          ++seen;
        }
      }
      if (!page->more || page->entries.empty() || seen == wanted.size() ||
          page->entries.back().first >= wanted.rbegin()->first) {
        break;
      }
      after = page->entries.back().first;
    }
  }
  if (not_looked_up > 0) {
    if (out.empty()) return first_error;
    CUMULUS_LOG(WARN) << "node: could not ask the head where " << not_looked_up << " of "
                      << ids.size() << " freed objects were handed on (" << first_error
                      << "); freeing the " << out.size() << " found, their copies elsewhere stay";
  }
  return out;
}

}  // namespace

// Runs `call(client)` on the head's thread, then `done` with its answer on the loop thread.
// Once the node stops, what is still queued is not asked (Cancelled) and its answer never
// runs.
template <typename Call, typename Done>
void TaskRouter::Impl::AskHead(Call call, Done done_fn) {
  using R = decltype(call(std::declval<ControlClient&>()));
  std::function<void(R)> done = std::move(done_fn);
  head_calls_->Post([this, call = std::move(call), done = std::move(done)]() mutable {
    R r = stop_ ? R(Status::Cancelled("the node is stopping")) : head_.Call(call);
    loop_->Post([done, r] { done(r); });
  });
}

const NodeId& TaskRouter::Impl::node_id() const { return node_id_; }

ClusterSnapshot TaskRouter::Impl::Snapshot(TimePoint now, bool include_unreachable) {
  NodeView self;
  self.id = node_id_;
  self.total = options_.total;
  self.available = leases_.available();
  self.labels = options_.labels;
  self.draining = remote_.self_draining();  // its new work goes elsewhere
  return remote_.Snapshot(self, now, include_unreachable);
}

// Asks the head for the cluster view (at most every 100 ms unless `force`, one request at a
// time); its answer replaces the view and schedules again. True while a request is under way.
bool TaskRouter::Impl::RefreshView(TimePoint now, bool force) {
  if (refreshing_) return true;
  if (!force && now - last_refresh_ < std::chrono::milliseconds(100)) return false;
  last_refresh_ = now;
  refreshing_ = true;
  AskHead([](ControlClient& h) { return h.GetClusterStatus(); },
          [this](Result<ClusterView> view) {
            refreshing_ = false;
            // Counted from the answer too: a caller that waited for it decides on it.
            last_refresh_ = clock_.Now();
            schedule_dirty_ = true;
            if (!view.ok()) return;
            {
              std::lock_guard<std::mutex> lock(shared_mu_);
              shared_view_ = view->nodes;
              view_dirty_ = true;
            }
            ApplySharedUpdates();
          });
  return true;
}

Status TaskRouter::Impl::ReserveHere(const PlacementGroupId& id, const JobId& job, uint32_t round,
                                     const std::vector<uint32_t>& indices,
                                     const std::vector<ResourceSet>& bundles) {
  Status st = leases_.Reserve(id, job, round, indices, bundles, node_id_.Hex());
  if (st.ok()) schedule_dirty_ = true;
  return st;
}

// Gives a group's bundles held here (those reserved by try `round` or earlier) back to the
// node; the workers using them are ended.
void TaskRouter::Impl::ReleaseHere(const PlacementGroupId& id, uint32_t round) {
  if (round == kAllRounds) groups_.ForgetLocation(id);
  for (auto& wid : leases_.WorkersInBundles(id, round)) {
    if (Worker* w = leases_.workers().Find(wid)) leases_.workers().Kill(*w);
    WorkerGone(wid, "was stopped: its placement group was removed");
  }
  leases_.ReleaseBundles(id, round);
  schedule_dirty_ = true;
}

bool TaskRouter::Impl::SendToNode(const NodeId& node, std::string frame, TimePoint now,
                                  bool avoid_if_unreachable) {
  uint64_t peer = PeerConn(node);
  if (!peer) {
    if (!avoid_if_unreachable) return false;
    remote_.Unreachable(node, now);
    schedule_dirty_ = true;
    return false;
  }
  Send(peer, std::move(frame));
  return true;
}
void TaskRouter::Impl::SendToConn(uint64_t conn, std::string frame) {
  Send(conn, std::move(frame));
}
void TaskRouter::Impl::BookView(const NodeId& node, const ResourceSet& r, bool take) {
  remote_.Book(node, r, take, clock_.Now());
}
void TaskRouter::Impl::ScheduleAgain() { schedule_dirty_ = true; }

void TaskRouter::Impl::HeadPut(const std::string& ns, const std::string& key,
                               const std::string& value, std::function<void(Status)> done) {
  AskHead([ns, key, value](ControlClient& h) { return h.KvPut(ns, key, value); },
          [done = std::move(done)](Result<bool> r) { done(r.status()); });
}
void TaskRouter::Impl::HeadGet(const std::string& ns, const std::string& key,
                               std::function<void(Result<std::string>)> done) {
  AskHead([ns, key](ControlClient& h) { return h.KvGet(ns, key); }, std::move(done));
}
void TaskRouter::Impl::HeadDelete(const std::string& ns, const std::string& key,
                                  std::function<void(Status)> done) {
  AskHead([ns, key](ControlClient& h) { return h.KvDelete(ns, key); },
          [done = std::move(done)](Result<bool> r) { done(r.status()); });
}

void TaskRouter::Impl::HeadMoves(std::vector<ObjectId> ids,
                                 std::function<void(Result<Moves>)> done) {
  AskHead([ids = std::move(ids)](ControlClient& h) { return LookUpMoves(h, ids); },
          std::move(done));
}

// The connection this node sends to `node` on, started now if needed (never waited for: what
// is sent goes out once it connects, and if it cannot within a second, PeerLost places again
// what was forwarded on it); 0 if the node has no known address.
uint64_t TaskRouter::Impl::PeerConn(const NodeId& node) {
  auto it = peers_.find(node);
  if (it != peers_.end() && loop_->IsOpen(it->second)) return it->second;
  std::string address = remote_.CoreAddress(node);
  if (address.empty()) return 0;
  auto hp = ParseHostPort(address);
  if (!hp.ok()) return 0;
  auto fd = StartConnectTcp(*hp);
  if (!fd.ok()) {
    CUMULUS_LOG(WARN) << "node: cannot reach node " << node << " at " << address << ": "
                      << fd.status();
    return 0;
  }
  // (A deadline of the event loop's, which keeps the system clock.)
  uint64_t id = loop_->AdoptConnecting(*fd, kMaxCoreFrameBytes,
                                       SystemClock::Get().Now() + std::chrono::seconds(1));
  Conn& c = conns_[id];
  c.tcp = true;
  c.role = Role::kPeer;
  c.peer = node;
  peers_[node] = id;
  capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
  auto h = message.initRoot<proto::CoreMessage>().initHello();
  h.setPid(getpid());
  auto peer = h.initPeer();
  peer.setToken(options_.token);
  peer.setNodeId(DataOf(node_id_));
  Send(id, EncodeFrame(message));
  return id;
}

}  // namespace cumulus
