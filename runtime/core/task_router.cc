#include "runtime/core/task_router.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "runtime/base/logging.h"
#include "runtime/base/serial_executor.h"
#include "runtime/core/messages.h"
#include "runtime/head/head_server.h"
#include "runtime/net/event_loop.h"
#include "runtime/node/group_coordinator.h"
#include "runtime/node/head_link.h"
#include "runtime/node/local_scheduler.h"
#include "runtime/node/memory_monitor.h"
#include "runtime/node/remote_nodes.h"
#include "runtime/node/task_table.h"
#include "runtime/node/worker_leases.h"
#include "scheduler/node_policy.h"

namespace cumulus {

namespace {

constexpr const char* kEndedWithJob = "ended with its job";
WorkerPoolOptions PoolOptions(const TaskRouterOptions& o) {
  WorkerPoolOptions p;
  p.environment = {{"CUMULUS_NODE_SOCKET", o.socket_path},
                   {"CUMULUS_STORE_SOCKET", o.store_socket},
                   {"CUMULUS_NODE_ID", o.node_id.Hex()},
                   {"CUMULUS_TRANSFER_ADDRESS", o.transfer_address},
                   {"CUMULUS_BIND_HOST", o.bind_host},
                   {"CUMULUS_HEAD", o.head.ToString()},
                   {"CUMULUS_TOKEN", o.token}};
  p.work_dir = o.work_dir;
  size_t cpus = static_cast<size_t>(o.total.GetUnits("CPU") / ResourceSet::kUnit);
  p.max_task_workers = o.max_task_workers ? o.max_task_workers : std::max<size_t>(4, 2 * cpus);
  return p;
}

}  // namespace

class TaskRouter::Impl : public NodeContext {
 public:
  explicit Impl(const TaskRouterOptions& o)
      : options_(o),
        node_id_(o.node_id),
        leases_(o.total, o.gpu_ids, PoolOptions(o), o.store, o.token),
        head_(o.head, o.token, "node-router"),
        groups_(*this),
        scheduler_(*this, tasks_, leases_, groups_, {o.labels, o.pipeline_depth}),
        memory_({o.memory_threshold, o.memory_check_every, o.node_id.Hex(), o.work_dir}),
        head_calls_(std::make_unique<SerialExecutor>()),
        program_fetches_(std::make_unique<SerialExecutor>()) {}

  Status Start() {
    EventLoop::Handlers h;
    h.on_accept = [this](uint64_t conn, bool tcp) { conns_[conn].tcp = tcp; };
    h.on_frame = [this](uint64_t conn, FrameWords words) { OnFrame(conn, std::move(words)); };
    h.on_close = [this](uint64_t conn, const std::string& why) { OnClose(conn, why); };
    CUMULUS_ASSIGN_OR_RETURN(loop_, EventLoop::Create(std::move(h)));
    // A job's program is fetched off the loop: its record from the head, its bytes from the
    // driver's node. Its tasks wait, and are scheduled again when the fetch ends.
    leases_.programs().SetFetchers(
        [this](const JobId& job, std::function<void(Result<std::string>)> done) {
          HeadGet(kJobsNamespace, job.Hex(), std::move(done));
        },
        [this](std::function<Result<JobProgram>()> work,
               std::function<void(Result<JobProgram>)> done) {
          program_fetches_->Post([this, work = std::move(work), done = std::move(done)] {
            Result<JobProgram> r =
                stop_ ? Result<JobProgram>(Status::Cancelled("the node is stopping")) : work();
            loop_->Post([done, r] { done(r); });
          });
        },
        [this] { schedule_dirty_ = true; });
    // A worker's process exiting wakes the loop (its pidfd): it is reaped and its tasks dealt
    // with at once, whether or not its connection closed first.
    leases_.workers().SetHooks(
        [this](const Worker& w) {
          WorkerId id = w.id;
          loop_->Watch(w.pidfd, [this, id] { WorkerExited(id); });
        },
        [this](const Worker& w) { loop_->Unwatch(w.pidfd); });
    CUMULUS_ASSIGN_OR_RETURN(int unix_fd, ListenUnix(options_.socket_path));
    loop_->Listen(unix_fd, /*tcp=*/false, kMaxCoreFrameBytes);
    CUMULUS_ASSIGN_OR_RETURN(int tcp_fd, ListenTcp(options_.bind_host, 0, &tcp_port_));
    loop_->Listen(tcp_fd, /*tcp=*/true, kMaxCoreFrameBytes);
    thread_ = std::thread([this] { Loop(); });
    return Status();
  }

  ~Impl() override {
    stop_ = true;
    if (loop_) loop_->Wake();
    if (thread_.joinable()) thread_.join();
    // Their threads end before the units their answers would call back into (what they still
    // hold is skipped, and answers posted to the stopped loop never run).
    head_calls_.reset();
    program_fetches_.reset();
    leases_.workers().KillAll();  // before their connections close under them
    unlink(options_.socket_path.c_str());
  }

  std::string core_address() const { return options_.bind_host + ":" + std::to_string(tcp_port_); }
  const std::string& socket_path() const { return options_.socket_path; }

  void UpdateView(const std::vector<NodeRecord>& nodes) {
    std::lock_guard<std::mutex> lock(shared_mu_);
    shared_view_ = nodes;
    view_dirty_ = true;
    loop_->Wake();
  }
  void SetNodeId(const NodeId& id) {
    std::lock_guard<std::mutex> lock(shared_mu_);
    new_node_id_ = id;
    view_dirty_ = true;
  }

 private:
  enum class Role { kUnknown, kDriver, kWorker, kPeer };

  // What this node knows of a connection (its socket is the event loop's).
  struct Conn {
    bool tcp = false;
    bool closed = false;
    Role role = Role::kUnknown;
    JobId job;        // drivers
    WorkerId worker;  // workers
    NodeId peer;      // peers
  };

  void Loop() {
    TimePoint last_housekeeping = SystemClock::Get().Now();
    while (!stop_) {
      loop_->Poll(std::chrono::milliseconds(50));
      if (stop_) break;
      ApplySharedUpdates();
      if (!newly_dead_.empty()) DropDeadPeers();
      TimePoint now = SystemClock::Get().Now();
      if (tasks_.RequeueDue(now)) schedule_dirty_ = true;
      if (now - last_housekeeping > std::chrono::milliseconds(50)) {
        last_housekeeping = now;
        Housekeeping(now);
      }
      if (schedule_dirty_) Schedule();
      loop_->Flush();
      for (uint64_t id : closed_) conns_.erase(id);
      closed_.clear();
    }
  }

  void Send(uint64_t conn, std::string frame) { loop_->Send(conn, std::move(frame)); }
  void Close(uint64_t conn, const std::string& why) { loop_->Close(conn, why); }

  // ---- messages ----------------------------------------------------------------------------

  void OnFrame(uint64_t id, FrameWords words) {
    try {
      capnp::ReaderOptions ro;
      ro.traversalLimitInWords = kMaxCoreFrameBytes / 8;
      capnp::FlatArrayMessageReader reader(words, ro);
      Handle(id, conns_[id], reader.getRoot<proto::CoreMessage>(), words);
    } catch (const kj::Exception& e) {
      Close(id, std::string("sent a malformed message: ") + e.getDescription().cStr());
    }
  }

  void Handle(uint64_t id, Conn& c, proto::CoreMessage::Reader msg, const FrameWords& words) {
    if (c.role == Role::kUnknown) {
      if (!msg.isHello()) return Close(id, "did not start with hello");
      return HandleHello(id, c, msg.getHello());
    }
    switch (msg.which()) {
      case proto::CoreMessage::SUBMIT_TASK:
        return HandleSubmit(id, c, msg.getSubmitTask(), words);
      case proto::CoreMessage::TASK_RESULT:
        return HandleResult(c, msg.getTaskResult(), words);
      case proto::CoreMessage::FREE_OBJECTS:
        return HandleFree(c, msg.getFreeObjects());
      case proto::CoreMessage::CANCEL_TASK:
        return HandleCancel(IdFrom<TaskId>(msg.getCancelTask()));
      case proto::CoreMessage::JOB_FINISHED:
        return EndJob(IdFrom<JobId>(msg.getJobFinished()), /*tell_peers=*/false);
      case proto::CoreMessage::JOB_INFO: {
        if (c.role != Role::kPeer && c.role != Role::kDriver) return;
        JobId job = IdFrom<JobId>(msg.getJobInfo().getJobId());
        if (c.role == Role::kDriver && job != c.job) {
          return Close(id, "a driver spoke for another job");
        }
        auto r = msg.getJobInfo().getRecord();
        if (!leases_.programs().Remember(
                job, std::string(reinterpret_cast<const char*>(r.begin()), r.size()))) {
          CUMULUS_LOG(WARN) << "node: ignoring a malformed job record for job " << job.Hex();
        }
        return;
      }
      case proto::CoreMessage::WORKER_BLOCKED:
        return HandleBlocked(c, msg.getWorkerBlocked());
      case proto::CoreMessage::CREATE_GROUP:
        if (c.role == Role::kPeer) return Close(id, "a node may not create a group on another");
        groups_.Create(id, JobOf(c), msg.getCreateGroup());
        schedule_dirty_ = true;
        return;
      case proto::CoreMessage::RESERVE_BUNDLES: {
        if (c.role != Role::kPeer) return Close(id, "only a node may reserve bundles");
        Reservation r = DecodeReservation(msg.getReserveBundles());
        Status st =
            r.error.ok() ? ReserveHere(r.id, r.job, r.round, r.indices, r.bundles) : r.error;
        return Send(id, GroupReplyFrame(r.id, st, {}, r.round));
      }
      case proto::CoreMessage::GROUP_REPLY:
        if (c.role != Role::kPeer) return Close(id, "only a node may answer a reservation");
        return groups_.OnReply(id, c.peer, msg.getGroupReply());
      case proto::CoreMessage::REMOVE_GROUP: {
        auto g = IdFrom<PlacementGroupId>(msg.getRemoveGroup().getGroupId());
        if (g.IsNil()) return;
        if (c.role == Role::kPeer) {
          uint32_t round = msg.getRemoveGroup().getRound();
          ReleaseHere(g, round);
          return groups_.OnPeerRelease(g, round);
        }
        return groups_.Remove(id, JobOf(c), g);  // only its own job's groups, for good
      }
      default:
        CUMULUS_LOG(WARN) << "node: ignoring an unexpected message on a core connection";
    }
  }

  void HandleHello(uint64_t id, Conn& c, proto::CoreHello::Reader h) {
    if (c.tcp) {
      // Over TCP only other nodes, and only with the cluster token.
      if (!h.isPeer() || !TokensEqual(h.getPeer().getToken(), options_.token)) {
        return Close(id, "refused: a TCP core connection must be a node with the cluster token");
      }
      c.role = Role::kPeer;
      c.peer = IdFrom<NodeId>(h.getPeer().getNodeId());
      if (!c.peer.IsNil() && !peers_.count(c.peer)) peers_[c.peer] = id;
      return;
    }
    switch (h.which()) {
      case proto::CoreHello::WORKER: {
        WorkerId wid = IdFrom<WorkerId>(h.getWorker().getWorkerId());
        Worker* w = leases_.workers().Find(wid);
        if (!w || w->closing()) return Close(id, "unknown worker id");
        c.role = Role::kWorker;
        c.worker = wid;
        w->conn = id;
        auto startup = std::chrono::duration_cast<std::chrono::microseconds>(
                           SystemClock::Get().Now() - w->started)
                           .count();
        {
          std::lock_guard<std::mutex> lock(shared_mu_);
          if (startup_micros_.size() < 4096) startup_micros_.push_back(startup);
        }
        CUMULUS_LOG(DEBUG) << "node: worker " << w->pid << " ready after " << startup << " us";
        SendHelloAck(id);
        for (const TaskId& t : w->assigned) {
          if (RoutedTask* task = tasks_.Find(t)) Send(id, task->frame);
        }
        return;
      }
      case proto::CoreHello::DRIVER:
        if (IdFrom<JobId>(h.getDriver().getJobId()).IsNil()) {
          return Close(id,
                       "refused: a driver's hello names no job (a program built against "
                       "another version of Cumulus?)");
        }
        c.role = Role::kDriver;
        c.job = IdFrom<JobId>(h.getDriver().getJobId());
        return SendHelloAck(id);
      default:
        return Close(id, "refused: only drivers and workers use the node's Unix socket");
    }
  }

  void SendHelloAck(uint64_t id) {
    capnp::MallocMessageBuilder message;
    auto ack = message.initRoot<proto::CoreMessage>().initHelloAck();
    ack.setNodeId(DataOf(node_id_));
    ack.setTransferAddress(options_.transfer_address);
    ack.setStoreSocket(options_.store_socket);
    Send(id, EncodeFrame(message));
  }

  void HandleSubmit(uint64_t id, Conn& c, proto::TaskSpec::Reader spec, const FrameWords& words) {
    RoutedTask t = TaskFromSpec(spec, words, id);
    if (t.id.IsNil()) return Close(id, "submitted a task without a valid id");
    if (tasks_.Contains(t.id)) return;  // a duplicate: the first copy's result answers it
    if (c.role == Role::kWorker && !c.job.IsNil()) t.job = c.job;
    tasks_.Add(std::move(t));
    schedule_dirty_ = true;
  }

  void HandleResult(Conn& c, proto::TaskResult::Reader result, const FrameWords& words) {
    TaskId id = IdFrom<TaskId>(result.getTaskId());
    if (c.role == Role::kWorker) {
      // The worker is done with it whatever became of the task meanwhile.
      Worker* w = leases_.workers().Find(c.worker);
      if (!w) return;
      auto& a = w->assigned;
      if (!a.empty() && a.front() == id) {
        a.pop_front();
      } else {
        a.erase(std::remove(a.begin(), a.end(), id), a.end());
      }
      // (A failed constructor's worker exits by itself.)
      leases_.ReleaseIfIdle(*w, SystemClock::Get().Now());
      schedule_dirty_ = true;
    }
    RoutedTask* t = tasks_.Find(id);
    if (!t) return;  // cancelled or already answered
    if (c.role == Role::kWorker) {
      if (t->state != RoutedTask::kOnWorker || t->worker != c.worker) return;  // not this run
    } else if (c.role == Role::kPeer) {
      // Only from the node it was forwarded to, while it is there: a node declared dead that
      // wakes up must not answer for a task that was placed again.
      if (t->state != RoutedTask::kForwarded || t->forwarded_to != c.peer) return;
      // A result for a task this node forwarded: credit the peer's view optimistically.
      if (!t->actor_creation && t->req.placement_group.empty()) {
        remote_.Book(t->forwarded_to, t->req.placement.demand, /*take=*/false);
      }
    } else {
      return;
    }
    Send(t->origin, FrameOfWords(words));
    tasks_.Erase(id);
    schedule_dirty_ = true;
  }

  void HandleFree(Conn& c, capnp::List<capnp::Data>::Reader entries) {
    // Each entry: 28-byte object id + 16-byte node id of the store holding it.
    std::map<NodeId, std::vector<std::string>> remote;
    for (auto e : entries) {
      if (e.size() != ObjectId::kSize + NodeId::kSize) continue;
      const char* p = reinterpret_cast<const char*>(e.begin());
      ObjectId obj = ObjectId::FromBinary(std::string_view(p, ObjectId::kSize));
      NodeId node = NodeId::FromBinary(std::string_view(p + ObjectId::kSize, NodeId::kSize));
      if (node == node_id_ || c.role == Role::kPeer) {
        (void)options_.store->Delete(obj);
      } else {
        remote[node].emplace_back(p, e.size());
      }
    }
    for (auto& [node, list] : remote) {
      capnp::MallocMessageBuilder message;
      auto out = message.initRoot<proto::CoreMessage>().initFreeObjects(
          static_cast<unsigned>(list.size()));
      for (unsigned i = 0; i < list.size(); ++i) {
        out.set(i, capnp::Data::Reader(reinterpret_cast<const uint8_t*>(list[i].data()),
                                       list[i].size()));
      }
      if (uint64_t peer = PeerConn(node)) Send(peer, EncodeFrame(message));
    }
  }

  void HandleCancel(const TaskId& id) {
    RoutedTask* t = tasks_.Find(id);
    if (!t) return;
    switch (t->state) {
      case RoutedTask::kQueued:  // its queue entry is dropped when the queue reaches it
        return scheduler_.FailTask(
            id, Status::Cancelled("task " + t->function + " was cancelled before it ran"));
      case RoutedTask::kForwarded: {
        t->cancelled = true;  // if that node is lost, the task is not placed again
        if (uint64_t peer = PeerConn(t->forwarded_to)) {
          capnp::MallocMessageBuilder message;
          message.initRoot<proto::CoreMessage>().setCancelTask(DataOf(id));
          Send(peer, EncodeFrame(message));
        }
        return;
      }
      case RoutedTask::kOnWorker:
        t->cancelled = true;
        // The worker may be deep in user code: only killing it stops it for sure.
        if (Worker* w = leases_.workers().Find(t->worker)) leases_.workers().Kill(*w);
        return;
    }
  }

  void HandleBlocked(Conn& c, proto::WorkerBlocked::Reader b) {
    if (c.role != Role::kWorker) return;
    Worker* w = leases_.workers().Find(c.worker);
    if (!w) return;
    leases_.SetBlocked(*w, b.getBlocked());
    // Tasks queued behind a task that waits on other tasks could deadlock it: run them elsewhere.
    for (auto raw : b.getReturned()) {
      TaskId id = IdFrom<TaskId>(raw);
      auto& a = w->assigned;
      a.erase(std::remove(a.begin(), a.end(), id), a.end());
      if (RoutedTask* t = tasks_.Find(id)) tasks_.Requeue(*t, /*front=*/true);
    }
    schedule_dirty_ = true;
  }

  JobId JobOf(const Conn& c) {
    if (c.role != Role::kWorker) return c.job;
    Worker* w = leases_.workers().Find(c.worker);
    return w ? w->job : JobId();
  }

  // ---- the cluster view ----------------------------------------------------------------------

  // Takes the view and id the daemon's threads left; the dead nodes wait in `newly_dead_` for
  // DropDeadPeers (on the loop's pass, never in the middle of a scheduling pass).
  void ApplySharedUpdates() {
    std::lock_guard<std::mutex> lock(shared_mu_);
    if (!new_node_id_.IsNil()) {
      remote_.Renamed(node_id_);  // its old id may be declared dead: not news
      node_id_ = new_node_id_;
      memory_.set_node_name(node_id_.Hex());
      leases_.workers().SetEnvironment("CUMULUS_NODE_ID", node_id_.Hex());
      new_node_id_ = NodeId();
    }
    if (!view_dirty_) return;
    view_dirty_ = false;
    for (const NodeId& id : remote_.Update(shared_view_, node_id_)) newly_dead_.push_back(id);
    schedule_dirty_ = true;
  }

  // A hung node (SIGSTOP, a frozen VM) keeps its TCP connections open: close ours, so that what
  // was forwarded there is placed again, and tell the owners here to drop their actors on it.
  void DropDeadPeers() {
    std::vector<NodeId> dead;
    dead.swap(newly_dead_);
    for (const NodeId& id : dead) {
      if (remote_.FirstNewsOfDeath(id)) {
        capnp::MallocMessageBuilder message;
        message.initRoot<proto::CoreMessage>().setNodeDied(DataOf(id));
        std::string frame = EncodeFrame(message);
        for (auto& [cid, c] : conns_) {
          if (!c.closed && (c.role == Role::kDriver || c.role == Role::kWorker)) Send(cid, frame);
        }
      }
      auto p = peers_.find(id);
      if (p != peers_.end()) Close(p->second, "the head declared node " + id.Hex() + " dead");
    }
  }

  // ---- NodeContext: what the units need of this node ------------------------------------------

  const NodeId& node_id() const override { return node_id_; }

  ClusterSnapshot Snapshot(TimePoint now, bool include_unreachable) override {
    NodeView self;
    self.id = node_id_;
    self.total = options_.total;
    self.available = leases_.available();
    self.labels = options_.labels;
    return remote_.Snapshot(self, now, include_unreachable);
  }

  // Asks the head for the cluster view (at most every 100 ms unless `force`, one request at a
  // time); its answer replaces the view and schedules again. True while a request is under way.
  bool RefreshView(TimePoint now, bool force) override {
    if (refreshing_) return true;
    if (!force && now - last_refresh_ < std::chrono::milliseconds(100)) return false;
    last_refresh_ = now;
    refreshing_ = true;
    AskHead([](ControlClient& h) { return h.GetClusterStatus(); },
            [this](Result<ClusterView> view) {
              refreshing_ = false;
              // Counted from the answer too: a caller that waited for it decides on it.
              last_refresh_ = SystemClock::Get().Now();
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

  Status ReserveHere(const PlacementGroupId& id, const JobId& job, uint32_t round,
                     const std::vector<uint32_t>& indices,
                     const std::vector<ResourceSet>& bundles) override {
    Status st = leases_.Reserve(id, job, round, indices, bundles, node_id_.Hex());
    if (st.ok()) schedule_dirty_ = true;
    return st;
  }

  // Gives a group's bundles held here (those reserved by try `round` or earlier) back to the
  // node; the workers using them are ended.
  void ReleaseHere(const PlacementGroupId& id, uint32_t round) override {
    if (round == kAllRounds) groups_.ForgetLocation(id);
    for (auto& wid : leases_.WorkersInBundles(id, round)) {
      if (Worker* w = leases_.workers().Find(wid)) leases_.workers().Kill(*w);
      WorkerGone(wid, "was stopped: its placement group was removed");
    }
    leases_.ReleaseBundles(id, round);
    schedule_dirty_ = true;
  }

  bool SendToNode(const NodeId& node, std::string frame, TimePoint now,
                  bool avoid_if_unreachable) override {
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
  void SendToConn(uint64_t conn, std::string frame) override { Send(conn, std::move(frame)); }
  void BookView(const NodeId& node, const ResourceSet& r, bool take) override {
    remote_.Book(node, r, take);
  }
  void ScheduleAgain() override { schedule_dirty_ = true; }

  void HeadPut(const std::string& ns, const std::string& key, const std::string& value,
               std::function<void(Status)> done) override {
    AskHead([ns, key, value](ControlClient& h) { return h.KvPut(ns, key, value); },
            [done = std::move(done)](Result<bool> r) { done(r.status()); });
  }
  void HeadGet(const std::string& ns, const std::string& key,
               std::function<void(Result<std::string>)> done) override {
    AskHead([ns, key](ControlClient& h) { return h.KvGet(ns, key); }, std::move(done));
  }
  void HeadDelete(const std::string& ns, const std::string& key,
                  std::function<void(Status)> done) override {
    AskHead([ns, key](ControlClient& h) { return h.KvDelete(ns, key); },
            [done = std::move(done)](Result<bool> r) { done(r.status()); });
  }

  // Runs `call(client)` on the head's thread, then `done` with its answer on the loop thread.
  // Once the node stops, what is still queued is not asked (Cancelled) and its answer never
  // runs.
  template <typename Call, typename Done>
  void AskHead(Call call, Done done_fn) {
    using R = decltype(call(std::declval<ControlClient&>()));
    std::function<void(R)> done = std::move(done_fn);
    head_calls_->Post([this, call = std::move(call), done = std::move(done)]() mutable {
      R r = stop_ ? R(Status::Cancelled("the node is stopping")) : head_.Call(call);
      loop_->Post([done, r] { done(r); });
    });
  }

  // ---- scheduling --------------------------------------------------------------------------

  void Schedule() {
    schedule_dirty_ = false;
    auto pending = scheduler_.Schedule(SystemClock::Get().Now());
    std::lock_guard<std::mutex> lock(shared_mu_);
    shared_available_ = leases_.available();
    shared_pending_ = std::move(pending);
  }

  // The connection this node sends to `node` on, started now if needed (never waited for: what
  // is sent goes out once it connects, and if it cannot within a second, PeerLost places again
  // what was forwarded on it); 0 if the node has no known address.
  uint64_t PeerConn(const NodeId& node) {
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
    uint64_t id = loop_->AdoptConnecting(*fd, kMaxCoreFrameBytes,
                                         SystemClock::Get().Now() + std::chrono::seconds(1));
    Conn& c = conns_[id];
    c.tcp = true;
    c.role = Role::kPeer;
    c.peer = node;
    peers_[node] = id;
    capnp::MallocMessageBuilder message;
    auto h = message.initRoot<proto::CoreMessage>().initHello();
    h.setPid(getpid());
    auto peer = h.initPeer();
    peer.setToken(options_.token);
    peer.setNodeId(DataOf(node_id_));
    Send(id, EncodeFrame(message));
    return id;
  }

  // ---- workers, jobs, housekeeping -----------------------------------------------------------

  // A worker ended (`why`): its tasks are retried, failed or given back to their queue.
  void WorkerGone(const WorkerId& wid, std::string why) {
    Worker* found = leases_.workers().Find(wid);
    if (!found) return;
    Worker& w = *found;
    if (!w.killed_because.empty()) why = w.killed_because;
    if (w.conn) {
      uint64_t conn = w.conn;
      w.conn = 0;
      conns_[conn].worker = WorkerId();  // detach so OnClose does not come back here
      Close(conn, "worker gone");
    }
    if (options_.on_failure && why != kEndedWithJob && (w.is_actor || !w.assigned.empty())) {
      RoutedTask* t = w.assigned.empty() ? nullptr : tasks_.Find(w.assigned.front());
      std::string running = t ? t->function : (w.is_actor ? "an actor" : "nothing");
      options_.on_failure("worker pid " + std::to_string(w.spawned_pid) + " of job " + w.job.Hex() +
                          " running " + running + " " + why);
    }
    scheduler_.WorkerDied(w, why, SystemClock::Get().Now());
    w.assigned.clear();
    leases_.Release(w);
    leases_.workers().Remove(wid);
    schedule_dirty_ = true;
  }

  // Tasks forwarded to `peer` come back here to be placed again (an attempt each: the node may
  // have died running them); its reservations in progress are refused.
  void PeerLost(const NodeId& peer, const std::string& why) {
    TimePoint now = SystemClock::Get().Now();
    // A connection that never connected delivered nothing: what went on it is placed again
    // without counting an attempt.
    bool delivered = why.rfind("cannot connect", 0) != 0;
    if (!delivered) {
      CUMULUS_LOG(WARN) << "node: cannot reach node " << peer << " at " << remote_.CoreAddress(peer)
                        << " (" << why << ")";
    }
    scheduler_.NodeLost(peer, why, now, delivered);
    schedule_dirty_ = true;
    remote_.Unreachable(peer, now);
    groups_.OnPeerClosed(peer);
  }

  void EndJob(const JobId& job, bool tell_peers) {
    if (job.IsNil()) return;
    std::vector<WorkerId> doomed;
    for (auto& [id, w] : leases_.workers().workers()) {
      if (w.job == job && !w.detached) doomed.push_back(id);
    }
    for (auto& id : doomed) {
      Worker* w = leases_.workers().Find(id);
      leases_.workers().Kill(*w);
      for (auto& t : w->assigned) tasks_.Erase(t);  // their owner is gone
      w->assigned.clear();
      WorkerGone(id, kEndedWithJob);
    }
    tasks_.EraseJob(job);
    leases_.programs().Forget(job);
    scheduler_.ForgetJob(job);
    // Its objects: their owner is gone, so nobody could free or read them.
    size_t freed =
        options_.store->DeleteIf([&](const ObjectId& id) { return id.Task().Job() == job; });
    if (freed > 0) {
      CUMULUS_LOG(INFO) << "node: deleted " << freed << " objects of ended job " << job.Hex();
    }
    groups_.EndJob(job);  // every node releases the job's bundles itself (below, and peers)
    for (auto& g : leases_.bundles().GroupsOf(job)) ReleaseHere(g, kAllRounds);
    if (!tell_peers) return;
    capnp::MallocMessageBuilder message;
    message.initRoot<proto::CoreMessage>().setJobFinished(DataOf(job));
    std::string frame = EncodeFrame(message);
    for (const NodeId& id : remote_.AliveNodes()) {
      if (uint64_t peer = PeerConn(id)) Send(peer, frame);
    }
  }

  void WorkerExited(const WorkerId& id) {
    Worker* w = leases_.workers().Find(id);
    if (!w) return;
    if (auto how = leases_.workers().ReapIfExited(*w)) {
      WorkerGone(id, *how);
    } else if (w->pid <= 0) {
      loop_->Unwatch(w->pidfd);  // nothing left to reap: do not wake again
    }
  }

  void Housekeeping(TimePoint now) {
    for (auto& [id, why] : leases_.workers().Reap(now)) WorkerGone(id, why);
    if (now >= next_task_snapshot_) {
      next_task_snapshot_ = now + std::chrono::seconds(1);
      SnapshotTasks();
    }
    memory_.Tick(now, leases_.workers(), tasks_);
    if (groups_.Due(now)) schedule_dirty_ = true;
  }

  // For `cumulus list tasks` (read by the node's reporter thread).
  void SnapshotTasks() {
    auto rows = tasks_.Rows(kMaxReportedRows, [this](const WorkerId& id) -> const Worker* {
      return leases_.workers().Find(id);
    });
    std::lock_guard<std::mutex> lock(shared_mu_);
    shared_tasks_ = std::move(rows);
    shared_tasks_total_ = tasks_.size();
  }

  void OnClose(uint64_t id, const std::string& why) {
    Conn& c = conns_[id];
    c.closed = true;
    closed_.push_back(id);
    if (c.role == Role::kWorker && !c.worker.IsNil()) {
      // It is usually exiting already: Housekeeping reaps it (and retries its tasks), killing it
      // if it does not exit within a moment.
      if (Worker* w = leases_.workers().Find(c.worker)) {
        leases_.workers().ConnectionClosed(*w, SystemClock::Get().Now());
      }
    } else if (c.role == Role::kDriver) {
      // Its queued tasks have nobody to answer to; its job's workers go away.
      EndJob(c.job, /*tell_peers=*/true);
      if (options_.on_job_end && !c.job.IsNil()) options_.on_job_end(c.job);
    } else if (c.role == Role::kPeer) {
      // Only the connection this node sends on carries its forwarded tasks and reservations
      // (the peer's own connection into this node may close independently).
      auto p = peers_.find(c.peer);
      if (p == peers_.end() || p->second != id) {
        CUMULUS_LOG(DEBUG) << "node: closed a second connection of node " << c.peer << ": " << why;
        return;
      }
      peers_.erase(p);
      PeerLost(c.peer, why);
    } else if (c.role == Role::kUnknown && c.tcp) {
      CUMULUS_LOG(DEBUG) << "node: closed a core connection: " << why;
    }
    if (c.role != Role::kUnknown && why != "closed" && why != "worker gone" &&
        why.rfind("cannot connect", 0) != 0) {  // (PeerLost says which node)
      CUMULUS_LOG(WARN) << "node: closed a core connection: " << why;
    }
  }

  TaskRouterOptions options_;
  NodeId node_id_;
  WorkerLeases leases_;
  RemoteNodes remote_;
  TaskTable tasks_;
  HeadLink head_;  // used only on head_calls_'s thread
  GroupCoordinator groups_;
  LocalScheduler scheduler_;
  MemoryMonitor memory_;
  std::unique_ptr<EventLoop> loop_;
  // The head's requests, in order, off the loop (they block up to HeadLink's timeout); and
  // job programs' fetches, so that a long pull does not hold the head's requests back.
  std::unique_ptr<SerialExecutor> head_calls_;
  std::unique_ptr<SerialExecutor> program_fetches_;
  uint16_t tcp_port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  // Loop-thread state.
  std::unordered_map<uint64_t, Conn> conns_;
  std::vector<uint64_t> closed_;    // erased from conns_ after the loop's pass
  std::vector<NodeId> newly_dead_;  // declared dead by the head, not yet dropped
  bool schedule_dirty_ = false;
  std::map<NodeId, uint64_t> peers_;  // the connection this node sends to each node on
  TimePoint next_task_snapshot_{};
  TimePoint last_refresh_{};  // when the view was last asked for, or answered
  bool refreshing_ = false;   // a view request is under way

  // Shared with the daemon's heartbeat and reporter threads.
  mutable std::mutex shared_mu_;
  std::vector<NodeRecord> shared_view_;
  bool view_dirty_ = false;
  NodeId new_node_id_;
  ResourceSet shared_available_;
  std::vector<std::pair<ResourceSet, uint32_t>> shared_pending_;
  std::vector<int64_t> startup_micros_;
  std::vector<TaskStateRow> shared_tasks_;
  size_t shared_tasks_total_ = 0;

  friend class TaskRouter;
};

TaskRouter::TaskRouter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TaskRouter::~TaskRouter() = default;

Result<std::unique_ptr<TaskRouter>> TaskRouter::Start(const TaskRouterOptions& options) {
  if (!options.store) return Status::InvalidArgument("the task router needs the node's store");
  auto impl = std::make_unique<Impl>(options);
  impl->shared_available_ = options.total;
  CUMULUS_RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<TaskRouter>(new TaskRouter(std::move(impl)));
}

std::string TaskRouter::core_address() const { return impl_->core_address(); }
const std::string& TaskRouter::socket_path() const { return impl_->socket_path(); }
void TaskRouter::UpdateView(const std::vector<NodeRecord>& nodes) { impl_->UpdateView(nodes); }
void TaskRouter::SetNodeId(const NodeId& id) { impl_->SetNodeId(id); }

ResourceSet TaskRouter::Available() const {
  std::lock_guard<std::mutex> lock(impl_->shared_mu_);
  return impl_->shared_available_;
}

std::vector<std::pair<ResourceSet, uint32_t>> TaskRouter::PendingDemand() const {
  std::lock_guard<std::mutex> lock(impl_->shared_mu_);
  return impl_->shared_pending_;
}

std::vector<TaskStateRow> TaskRouter::Tasks(size_t limit, size_t* total) const {
  std::lock_guard<std::mutex> lock(impl_->shared_mu_);
  *total = impl_->shared_tasks_total_;
  return std::vector<TaskStateRow>(
      impl_->shared_tasks_.begin(),
      impl_->shared_tasks_.begin() + std::min(limit, impl_->shared_tasks_.size()));
}

std::vector<int64_t> TaskRouter::WorkerStartupMicros() const {
  std::lock_guard<std::mutex> lock(impl_->shared_mu_);
  return impl_->startup_micros_;
}

}  // namespace cumulus
