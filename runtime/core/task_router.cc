// TaskRouter's composition root: the units, the loop's pass, the cluster view from the daemon,
// scheduling, and what becomes of the work of workers, peers and jobs that end. The core
// protocol is in task_router_protocol.cc; NodeContext in task_router_node_context.cc.
#include "runtime/core/task_router.h"

#include <unistd.h>

#include "runtime/base/logging.h"
#include "runtime/core/task_router_impl.h"
#include "runtime/net/first_segment.h"
#include "runtime/net/tcp.h"
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
  if (o.timeline_events == 0) p.environment.emplace_back("CUMULUS_TIMELINE", "0");
  p.work_dir = o.work_dir;
  size_t cpus = static_cast<size_t>(o.total.GetUnits("CPU") / ResourceSet::kUnit);
  p.max_task_workers = o.max_task_workers ? o.max_task_workers : std::max<size_t>(4, 2 * cpus);
  return p;
}

}  // namespace

TaskRouter::Impl::Impl(const TaskRouterOptions& o)
    : options_(o),
      clock_(*o.clock),
      node_id_(o.node_id),
      leases_(o.total, o.gpu_ids, PoolOptions(o), o.store, o.token, clock_, o.program_cache_bytes),
      head_(o.head, o.token, "node-router", clock_),
      groups_(*this, clock_),
      scheduler_(*this, tasks_, leases_, groups_, clock_,
                 {o.labels, o.pipeline_depth, std::chrono::seconds(120), o.wait_for_nodes,
                  [this](const RoutedTask& t, const Status& st) { TaskAnswered(t, st); }}),
      memory_({o.memory_threshold, o.memory_worker_limit, o.memory_check_every, o.node_id.Hex(),
               o.work_dir}),
      machine_(o.gpu_ids),
      timeline_(o.timeline_events),
      finished_(o.finished_tasks),
      actor_ends_(kDefaultActorEnds),
      head_calls_(std::make_unique<SerialExecutor>()),
      program_fetches_(std::make_unique<SerialExecutor>()) {}

Status TaskRouter::Impl::Start() {
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
  // Until its hello is accepted a peer may send only a small frame, within a deadline; then its
  // frames may be up to kMaxCoreFrameBytes (HandleHello).
  CUMULUS_ASSIGN_OR_RETURN(int unix_fd, ListenUnix(options_.socket_path));
  loop_->Listen(unix_fd, /*tcp=*/false, EventLoop::PreAuthentication());
  CUMULUS_ASSIGN_OR_RETURN(int tcp_fd, ListenTcp(options_.bind_host, 0, &tcp_port_));
  loop_->Listen(tcp_fd, /*tcp=*/true, EventLoop::PreAuthentication());
  thread_ = std::thread([this] { Loop(); });
  return Status();
}

TaskRouter::Impl::~Impl() {
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

void TaskRouter::Impl::UpdateView(const std::vector<NodeRecord>& nodes) {
  std::lock_guard<std::mutex> lock(shared_mu_);
  shared_view_ = nodes;
  view_dirty_ = true;
  loop_->Wake();
}
void TaskRouter::Impl::SetNodeId(const NodeId& id) {
  std::lock_guard<std::mutex> lock(shared_mu_);
  new_node_id_ = id;
  view_dirty_ = true;
}

void TaskRouter::Impl::Loop() {
  TimePoint last_housekeeping = clock_.Now();
  while (!stop_) {
    loop_->Poll(std::chrono::milliseconds(50));
    if (stop_) break;
    ApplySharedUpdates();
    if (!newly_dead_.empty()) DropDeadPeers();
    TimePoint now = clock_.Now();
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

// Takes the view and id the daemon's threads left; the dead nodes wait in `newly_dead_` for
// DropDeadPeers (on the loop's pass, never in the middle of a scheduling pass).
void TaskRouter::Impl::ApplySharedUpdates() {
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
void TaskRouter::Impl::DropDeadPeers() {
  std::vector<NodeId> dead;
  dead.swap(newly_dead_);
  for (const NodeId& id : dead) {
    if (remote_.FirstNewsOfDeath(id)) {
      capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
      message.initRoot<proto::CoreMessage>().setNodeDied(DataOf(id));
      std::string frame = EncodeFrame(message);
      for (auto& [cid, c] : conns_) {
        if (!c.closed && (c.role == Role::kDriver || c.role == Role::kWorker)) Send(cid, frame);
      }
      actor_ends_.NodeDead(id.Hex(), clock_.WallMicros());  // what owners here saw end there
    }
    auto p = peers_.find(id);
    if (p != peers_.end()) Close(p->second, "the head declared node " + id.Hex() + " dead");
  }
}

void TaskRouter::Impl::TellLocalProcesses(const std::string& frame) {
  for (auto& [cid, c] : conns_) {
    if (!c.closed && (c.role == Role::kDriver || c.role == Role::kWorker)) Send(cid, frame);
  }
}

void TaskRouter::Impl::AnnounceMoves(const NodeId& to, const std::string& transfer,
                                     const std::vector<ObjectId>& ids) {
  capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
  auto m = message.initRoot<proto::CoreMessage>().initObjectsMoved();
  m.setFrom(DataOf(node_id_));
  m.setTo(DataOf(to));
  m.setTransferAddress(transfer);
  auto list = m.initObjects(static_cast<unsigned>(ids.size()));
  for (unsigned i = 0; i < ids.size(); ++i) list.set(i, DataOf(ids[i]));
  std::string frame = EncodeFrame(message);
  TellLocalProcesses(frame);
  for (const NodeId& node : remote_.AliveNodes()) {
    if (uint64_t peer = PeerConn(node)) Send(peer, frame);
  }
}

void TaskRouter::Impl::Schedule() {
  schedule_dirty_ = false;
  auto pending = scheduler_.Schedule(clock_.Now());
  std::lock_guard<std::mutex> lock(shared_mu_);
  shared_available_ = leases_.available();
  shared_pending_ = std::move(pending);
}

// A worker ended (`why`): its tasks are retried, failed or given back to their queue.
void TaskRouter::Impl::WorkerGone(const WorkerId& wid, std::string why) {
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
  // (An actor's worker that exited with status 0 was killed by its handle or its owner ended;
  // with kKilledByCallerExitStatus, by `cumulus kill`.)
  bool by_user = false;
  if (w.is_actor) {
    counters_.actors_dead++;
    if (!w.actor.empty()) {
      ActorEnd e;
      e.actor = w.actor;
      e.class_name = w.actor_class;
      e.job = w.job;
      e.node = node_id_.Hex();
      e.pid = w.spawned_pid;
      e.life = w.actor_life;
      e.max_restarts = w.actor_max_restarts;
      e.restart_cause = w.actor_restart_cause;
      e.with_job = why == kEndedWithJob;
      e.detached = w.detached;
      e.cause = e.with_job ? "its owner left (its job ended)" : ActorEndCause(why, &by_user);
      e.by_user = by_user;
      e.ended_micros = clock_.WallMicros();
      actor_ends_.Add(std::move(e));
    }
  }
  bool failed = why != kEndedWithJob && (w.is_actor || !w.assigned.empty()) && !by_user &&
                !(w.is_actor && why == "exited with status 0");
  if (failed) counters_.worker_failures++;
  if (options_.on_failure && failed) {
    RoutedTask* t = w.assigned.empty() ? nullptr : tasks_.Find(w.assigned.front());
    std::string running = t ? t->function : (w.is_actor ? "an actor" : "nothing");
    options_.on_failure("worker pid " + std::to_string(w.spawned_pid) + " of job " + w.job.Hex() +
                        " running " + running + " " + why);
  }
  scheduler_.WorkerDied(w, why, clock_.Now());
  w.assigned.clear();
  leases_.Release(w);
  leases_.workers().Remove(wid);
  schedule_dirty_ = true;
}

// Tasks forwarded to `peer` come back here to be placed again (an attempt each: the node may
// have died running them); its reservations in progress are refused.
void TaskRouter::Impl::PeerLost(const NodeId& peer, const std::string& why) {
  TimePoint now = clock_.Now();
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

void TaskRouter::Impl::EndJob(const JobId& job, bool tell_peers) {
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
  actor_ends_.EndJob(job);  // nobody restarts its actors now
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
  capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
  message.initRoot<proto::CoreMessage>().setJobFinished(DataOf(job));
  std::string frame = EncodeFrame(message);
  for (const NodeId& id : remote_.AliveNodes()) {
    if (uint64_t peer = PeerConn(id)) Send(peer, frame);
  }
}

void TaskRouter::Impl::WorkerExited(const WorkerId& id) {
  Worker* w = leases_.workers().Find(id);
  if (!w) return;
  if (auto how = leases_.workers().ReapIfExited(*w)) {
    WorkerGone(id, *how);
  } else if (w->pid <= 0) {
    loop_->Unwatch(w->pidfd);  // nothing left to reap: do not wake again
  }
}

void TaskRouter::Impl::Housekeeping(TimePoint now) {
  for (auto& [id, why] : leases_.workers().Reap(now)) WorkerGone(id, why);
  if (now >= next_task_snapshot_) {
    next_task_snapshot_ = now + std::chrono::seconds(1);
    SnapshotTasks();
  }
  if (now >= next_machine_sample_) {
    next_machine_sample_ = now + std::chrono::seconds(1);
    machine_.Sample();
  }
  memory_.Tick(now, leases_.workers(), tasks_);
  if (groups_.Due(now)) schedule_dirty_ = true;
  if (remote_.EndBookings(now)) schedule_dirty_ = true;
  SnapshotWork();
}

// For a drain (read by the node daemon's thread): what still runs or is served here.
void TaskRouter::Impl::SnapshotWork() {
  NodeWork w;
  w.draining = remote_.self_draining();
  w.tasks = tasks_.size();
  for (auto& [id, worker] : leases_.workers().workers()) {
    w.actors += worker.is_actor;
    w.busy_workers += !worker.assigned.empty();
  }
  w.bundles = leases_.bundles().size();
  for (auto& [id, c] : conns_) w.drivers += !c.closed && c.role == Role::kDriver;
  std::lock_guard<std::mutex> lock(shared_mu_);
  shared_work_ = w;
}

// For `cumulus list tasks` (read by the node's reporter thread).
void TaskRouter::Impl::SnapshotTasks() {
  auto rows = tasks_.Rows(kMaxReportedRows, [this](const WorkerId& id) -> const Worker* {
    return leases_.workers().Find(id);
  });
  // The metrics' counts (runtime/metrics/node_metrics.h): one pass over the tasks and workers.
  RouterMetrics m = counters_;
  uint64_t constructors_running = 0;
  for (auto& [id, t] : tasks_.all()) {
    const char* state = "QUEUED";
    if (t.state == RoutedTask::kForwarded) {
      state = "FORWARDED";
    } else if (t.state == RoutedTask::kQueued && t.waiting_retry) {
      state = "RETRY_WAIT";
    } else if (t.state == RoutedTask::kOnWorker) {
      const Worker* w = leases_.workers().Find(t.worker);
      state = "RUNNING";  // (as TaskTable::Rows: QUEUED behind its worker's first task)
      if (w && !w->assigned.empty() && w->assigned.front() != id) state = "QUEUED";
      if (t.actor_creation) constructors_running++;
    }
    m.tasks[state]++;
    if (t.actor_creation) m.actors_pending++;
  }
  for (auto& [id, w] : leases_.workers().workers()) {
    m.workers++;
    if (w.is_actor && !w.closing()) m.actors_alive++;
  }
  m.actors_alive -= std::min(m.actors_alive, constructors_running);
  m.tasks_failed += scheduler_.failed();
  m.tasks_returned = scheduler_.returned();
  m.oom_kills = memory_.kills();
  std::lock_guard<std::mutex> lock(shared_mu_);
  shared_tasks_ = std::move(rows);
  shared_tasks_total_ = tasks_.size();
  shared_metrics_ = std::move(m);
}

TaskRouter::TaskRouter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TaskRouter::~TaskRouter() = default;

Result<std::unique_ptr<TaskRouter>> TaskRouter::Start(const TaskRouterOptions& options) {
  if (!options.store) return Status::InvalidArgument("the task router needs the node's store");
  if (!options.clock) return Status::InvalidArgument("the task router needs a clock");
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

DemandList TaskRouter::PendingDemand() const {
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

RouterMetrics TaskRouter::Metrics() const {
  std::lock_guard<std::mutex> lock(impl_->shared_mu_);
  return impl_->shared_metrics_;
}

NodeWork TaskRouter::Work() const {
  std::lock_guard<std::mutex> lock(impl_->shared_mu_);
  return impl_->shared_work_;
}

void TaskRouter::AnnounceMoves(const NodeId& to, const std::string& transfer,
                               const std::vector<ObjectId>& ids) {
  impl_->loop_->Post(
      [impl = impl_.get(), to, transfer, ids] { impl->AnnounceMoves(to, transfer, ids); });
}

void TaskRouter::FreeOn(const NodeId& node, const std::vector<ObjectId>& ids) {
  std::vector<std::string> entries;
  entries.reserve(ids.size());
  for (const ObjectId& id : ids) entries.push_back(id.Binary() + node.Binary());
  impl_->loop_->Post([impl = impl_.get(), entries = std::move(entries)] {
    impl->FreeEntries(entries, /*here_only=*/false);
  });
}

std::string NodeWork::ToString() const {
  std::string out;
  auto add = [&](size_t n, const char* one, const char* many) {
    if (n) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + (n == 1 ? one : many);
  };
  add(tasks, "task", "tasks");
  add(actors, "actor", "actors");
  add(busy_workers, "busy worker", "busy workers");
  add(bundles, "bundle", "bundles");
  add(drivers, "driver", "drivers");
  return out;
}

std::vector<int64_t> TaskRouter::WorkerStartupMicros() const {
  std::lock_guard<std::mutex> lock(impl_->shared_mu_);
  return impl_->startup_micros_;
}

}  // namespace cumulus
