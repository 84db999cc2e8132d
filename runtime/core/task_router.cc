#include "runtime/core/task_router.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <list>
#include <map>
#include <set>
#include <unordered_map>

#include "runtime/base/logging.h"
#include "runtime/core/messages.h"
#include "runtime/head/control_client.h"
#include "runtime/head/head_server.h"
#include "runtime/head/node_codec.h"
#include "runtime/node/detect_resources.h"
#include "runtime/node/job_supervisor.h"
#include "runtime/transfer/object_transfer.h"
#include "scheduler/gpu_assignment.h"
#include "scheduler/placement.h"

extern char** environ;

namespace cumulus {

namespace {

constexpr auto kWorkerStartTimeout = std::chrono::seconds(30);
constexpr auto kIdleWorkerLifetime = std::chrono::seconds(60);
constexpr auto kUnreachablePenalty = std::chrono::seconds(5);
constexpr uint32_t kAllRounds = 0xFFFFFFFFu;  // a group release that is final
constexpr const char* kEndedWithJob = "ended with its job";
constexpr auto kProgramWait = std::chrono::seconds(120);  // for a job's program, then fail

using Words = kj::Array<capnp::word>;

std::string DescribeBundles(const std::vector<ResourceSet>& bundles) {
  std::string out = "[";
  for (size_t i = 0; i < bundles.size(); ++i) out += (i ? ", " : "") + bundles[i].ToString();
  return out + "]";
}

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

std::string ErrorResultFrame(const TaskId& task, const NodeId& node, const Status& st) {
  capnp::MallocMessageBuilder message;
  auto r = message.initRoot<proto::CoreMessage>().initTaskResult();
  r.setTaskId(DataOf(task));
  r.setCode(static_cast<uint16_t>(st.code()));
  r.setMessage(st.message());
  r.setNodeId(DataOf(node));
  return EncodeFrame(message);
}

}  // namespace

class TaskRouter::Impl {
 public:
  explicit Impl(const TaskRouterOptions& o) : options_(o), gpus_(o.gpu_ids) {
    if (const char* t = std::getenv("CUMULUS_MEMORY_USAGE_THRESHOLD")) {
      char* end = nullptr;
      double v = std::strtod(t, &end);
      if (*t && *end == 0 && v > 0 && v <= 1) {
        memory_threshold_ = v;
      } else {
        CUMULUS_LOG(WARN) << "node: ignoring CUMULUS_MEMORY_USAGE_THRESHOLD=" << t
                          << " (want a fraction in (0, 1]; 1 turns the memory monitor off)";
      }
    }
    if (const char* ms = std::getenv("CUMULUS_MEMORY_MONITOR_MS")) {
      long v = std::strtol(ms, nullptr, 10);
      if (v >= 10 && v <= 60000) memory_check_every_ = std::chrono::milliseconds(v);
    }
    node_id_ = o.node_id;
    available_ = o.total;
    size_t cpus = static_cast<size_t>(o.total.GetUnits("CPU") / ResourceSet::kUnit);
    max_task_workers_ = o.max_task_workers ? o.max_task_workers : std::max<size_t>(4, 2 * cpus);
  }

  Status Start() {
    CUMULUS_ASSIGN_OR_RETURN(unix_fd_, ListenUnix(options_.socket_path));
    CUMULUS_ASSIGN_OR_RETURN(tcp_fd_, ListenTcp(options_.bind_host, 0, &tcp_port_));
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) return Status::Internal("pipe failed");
    Watch(unix_fd_, kListenUnixTag);
    Watch(tcp_fd_, kListenTcpTag);
    Watch(wake_[0], kWakeTag);
    thread_ = std::thread([this] { Loop(); });
    return Status();
  }

  ~Impl() {
    stop_ = true;
    char c = 1;
    (void)!write(wake_[1], &c, 1);
    if (thread_.joinable()) thread_.join();
    for (auto& [id, w] : workers_) {
      if (w.pid > 0) {
        kill(w.pid, SIGKILL);
        waitpid(w.pid, nullptr, 0);
      }
    }
    for (auto& [id, c] : conns_) close(c.fd);
    for (int fd : {unix_fd_, tcp_fd_, epoll_, wake_[0], wake_[1]}) {
      if (fd >= 0) close(fd);
    }
    unlink(options_.socket_path.c_str());
  }

  std::string core_address() const { return options_.bind_host + ":" + std::to_string(tcp_port_); }
  const std::string& socket_path() const { return options_.socket_path; }

  void UpdateView(const std::vector<NodeRecord>& nodes) {
    std::lock_guard<std::mutex> lock(shared_mu_);
    shared_view_ = nodes;
    view_dirty_ = true;
    char c = 1;
    (void)!write(wake_[1], &c, 1);
  }
  void SetNodeId(const NodeId& id) {
    std::lock_guard<std::mutex> lock(shared_mu_);
    new_node_id_ = id;
    view_dirty_ = true;
  }
  ResourceSet Available() const {
    std::lock_guard<std::mutex> lock(shared_mu_);
    return shared_available_;
  }
  std::vector<std::pair<ResourceSet, uint32_t>> PendingDemand() const {
    std::lock_guard<std::mutex> lock(shared_mu_);
    return shared_pending_;
  }

 private:
  static constexpr uint64_t kListenUnixTag = 1, kListenTcpTag = 2, kWakeTag = 3;
  static constexpr uint64_t kFirstConnId = 16;

  enum class Role { kUnknown, kDriver, kWorker, kPeer };

  struct Conn {
    uint64_t id = 0;
    int fd = -1;
    bool tcp = false;
    Role role = Role::kUnknown;
    FrameDecoder decoder{kMaxCoreFrameBytes};
    std::string out;
    size_t out_pos = 0;
    bool want_write = false;
    JobId job;        // drivers
    WorkerId worker;  // workers
    NodeId peer;      // peers
    bool closed = false;
  };

  struct Task {
    TaskId id;
    JobId job;
    std::string frame;  // the submitTask frame as it arrived: forwarded or sent to a worker as is
    TaskRequirements req;
    std::string function;
    bool actor_creation = false;
    bool detached = false;  // a detached actor's constructor: its worker outlives the job
    int max_retries = 3;
    uint32_t attempt = 0;
    uint32_t hops = 0;
    uint64_t origin = 0;  // the connection its result goes back to
    enum State { kQueued, kForwarded, kOnWorker } state = kQueued;
    NodeId forwarded_to;
    WorkerId worker;
    bool cancelled = false;
    std::string class_key;
    bool waiting_retry = false;        // in delayed_, not in a queue
    bool waiting_for_program = false;  // its job's program could not be fetched yet
    TimePoint waiting_since{};
    TimePoint assigned_at{};  // when it was handed to its worker
  };

  struct Worker {
    WorkerId id;
    pid_t pid = -1;
    JobId job;
    std::string key;  // job + visible devices: which leases it can take
    uint64_t conn = 0;
    TimePoint started;
    TimePoint idle_since;
    bool is_actor = false;
    bool leased = false;
    ResourceSet lease;
    std::vector<uint32_t> gpu_ids;
    std::string lease_class;
    bool in_bundle = false;  // the lease came from a placement group's bundle
    std::pair<PlacementGroupId, uint32_t> bundle;
    std::deque<TaskId> assigned;  // in the order sent; the front one runs
    bool blocked = false;
    int64_t lent_cpu = 0;    // CPU units of its lease given back to the node while it is blocked
    pid_t spawned_pid = -1;  // pid stays -1 once reaped; this one is for messages
    bool detached = false;   // hosts a detached actor: the end of its job leaves it running
    std::string killed_because;  // the node killed it on purpose (memory): says why
  };

  // A bundle of a placement group held on this node. Its resources left the node's free pool
  // when it was reserved; the group's tasks and actors lease from it; all of it goes back when
  // the group is removed or its job ends.
  struct HeldBundle {
    PlacementGroupId group;
    uint32_t index = 0;
    JobId job;
    ResourceSet total;
    ResourceSet available;
    std::vector<uint32_t> gpu_ids;        // devices reserved from the node
    std::unique_ptr<GpuAssignment> gpus;  // hands them to the bundle's tasks
    uint32_t round = 0;                   // the try of the group that reserved it
  };

  // A group being reserved (or reserved) by way of this node, for the driver or worker that
  // asked. kWaiting: it fits the cluster but not now; kReserving: nodes were asked to hold their
  // bundles; kReady: all of them do.
  struct GroupOp {
    PlacementGroupId id;
    JobId job;
    std::vector<ResourceSet> bundles;
    GroupStrategy strategy = GroupStrategy::kPack;
    uint64_t origin = 0;  // the connection waiting for the answer
    enum State { kWaiting, kReserving, kReady } state = kWaiting;
    std::vector<NodeId> nodes;  // per bundle, once placed
    std::set<NodeId> awaiting;  // nodes that have not answered yet
    std::string refused;        // why a node said no, this round
    uint32_t round = 0;         // tries so far; replies of older ones are stale
    TimePoint retry_at{};
    bool removed = false;  // removed while nodes were still answering
  };

  // ---- event loop --------------------------------------------------------------------------

  void Watch(int fd, uint64_t tag, uint32_t events = EPOLLIN) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
  }

  void Loop() {
    epoll_event events[256];
    TimePoint last_housekeeping = SystemClock::Get().Now();
    while (!stop_) {
      int n = epoll_wait(epoll_, events, 256, 50);
      for (int i = 0; i < n; ++i) {
        uint64_t tag = events[i].data.u64;
        if (tag == kWakeTag) {
          char buf[64];
          while (read(wake_[0], buf, sizeof(buf)) > 0) {
          }
        } else if (tag == kListenUnixTag) {
          Accept(unix_fd_, false);
        } else if (tag == kListenTcpTag) {
          Accept(tcp_fd_, true);
        } else {
          auto it = conns_.find(tag);
          if (it == conns_.end()) continue;
          if (events[i].events & EPOLLOUT) Flush(it->second);
          if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) ReadFrom(tag);
        }
      }
      if (stop_) break;
      ApplySharedUpdates();
      if (!newly_dead_.empty()) DropDeadPeers();
      TimePoint now = SystemClock::Get().Now();
      if (!delayed_.empty()) RequeueDue(now);
      if (now - last_housekeeping > std::chrono::milliseconds(50)) {
        last_housekeeping = now;
        Housekeeping(now);
      }
      if (schedule_dirty_) Schedule();
      FlushAll();
      ReapClosed();
    }
  }

  void Accept(int listen_fd, bool tcp) {
    while (true) {
      int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      if (tcp) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      }
      AddConn(fd, tcp);
    }
  }

  Conn& AddConn(int fd, bool tcp) {
    uint64_t id = next_conn_++;
    Conn& c = conns_[id];
    c.id = id;
    c.fd = fd;
    c.tcp = tcp;
    Watch(fd, id);
    return c;
  }

  void ReadFrom(uint64_t conn_id) {
    Conn& c = conns_.at(conn_id);
    char buf[65536];
    for (int rounds = 0; rounds < 16; ++rounds) {
      ssize_t got = read(c.fd, buf, sizeof(buf));
      if (got > 0) {
        c.decoder.Append(buf, static_cast<size_t>(got));
        if (static_cast<size_t>(got) < sizeof(buf)) break;
        continue;
      }
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) break;
      Close(c, got == 0 ? "closed" : std::strerror(errno));
      return;
    }
    while (!c.closed) {
      auto frame = c.decoder.Next();
      if (!frame.ok()) {
        Close(c, "sent a malformed frame: " + frame.status().message());
        return;
      }
      if (!*frame) break;
      Words words = std::move(**frame);
      try {
        capnp::ReaderOptions ro;
        ro.traversalLimitInWords = kMaxCoreFrameBytes / 8;
        capnp::FlatArrayMessageReader reader(words, ro);
        Handle(c, reader.getRoot<proto::CoreMessage>(), words);
      } catch (const kj::Exception& e) {
        Close(c, std::string("sent a malformed message: ") + e.getDescription().cStr());
      }
    }
  }

  void Send(Conn& c, std::string frame) {
    if (c.closed) return;
    if (c.out_pos == c.out.size()) {
      c.out.clear();
      c.out_pos = 0;
    }
    c.out.append(frame);
    dirty_out_.insert(c.id);
  }
  void SendTo(uint64_t conn_id, std::string frame) {
    auto it = conns_.find(conn_id);
    if (it != conns_.end()) Send(it->second, std::move(frame));
  }

  void Flush(Conn& c) {
    while (c.out_pos < c.out.size()) {
      ssize_t n = send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_pos += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      Close(c, "write failed");
      return;
    }
    bool pending = c.out_pos < c.out.size();
    if (!pending) {
      c.out.clear();
      c.out_pos = 0;
    }
    if (pending != c.want_write) {
      c.want_write = pending;
      epoll_event ev{};
      ev.events = EPOLLIN | (pending ? static_cast<uint32_t>(EPOLLOUT) : 0u);
      ev.data.u64 = c.id;
      epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &ev);
    }
  }

  void FlushAll() {
    auto ids = std::move(dirty_out_);
    dirty_out_.clear();
    for (uint64_t id : ids) {
      auto it = conns_.find(id);
      if (it != conns_.end() && !it->second.closed) Flush(it->second);
    }
  }

  // ---- messages ----------------------------------------------------------------------------

  void Handle(Conn& c, proto::CoreMessage::Reader msg, const Words& words) {
    if (c.role == Role::kUnknown) {
      if (!msg.isHello()) return Close(c, "did not start with hello");
      return HandleHello(c, msg.getHello());
    }
    switch (msg.which()) {
      case proto::CoreMessage::SUBMIT_TASK:
        return HandleSubmit(c, msg.getSubmitTask(), words);
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
        if (c.role == Role::kDriver && job != c.job)
          return Close(c, "a driver spoke for another job");
        auto r = msg.getJobInfo().getRecord();
        std::string bytes(reinterpret_cast<const char*>(r.begin()), r.size());
        auto rec = Deserialize<JobRecord>(bytes);
        auto binary =
            rec.ok() ? ObjectId::FromHex(rec->binary_object) : Result<ObjectId>(rec.status());
        bool hash_ok = rec.ok() && rec->binary_hash.size() == 16 &&
                       rec->binary_hash.find_first_not_of("0123456789abcdef") == std::string::npos;
        if (job.IsNil() || !binary.ok() || binary->Task().Job() != job || !hash_ok) {
          CUMULUS_LOG(WARN) << "node: ignoring a malformed job record for job " << job.Hex();
          return;
        }
        job_records_.emplace(job, std::move(bytes));
        return;
      }
      case proto::CoreMessage::WORKER_BLOCKED:
        return HandleBlocked(c, msg.getWorkerBlocked());
      case proto::CoreMessage::CREATE_GROUP:
        if (c.role == Role::kPeer) return Close(c, "a node may not create a group on another");
        return HandleCreateGroup(c, msg.getCreateGroup());
      case proto::CoreMessage::RESERVE_BUNDLES:
        if (c.role != Role::kPeer) return Close(c, "only a node may reserve bundles");
        return HandleReserveBundles(c, msg.getReserveBundles());
      case proto::CoreMessage::GROUP_REPLY:
        if (c.role != Role::kPeer) return Close(c, "only a node may answer a reservation");
        return HandleGroupReply(c, msg.getGroupReply());
      case proto::CoreMessage::REMOVE_GROUP:
        return HandleRemoveGroup(c, IdFrom<PlacementGroupId>(msg.getRemoveGroup().getGroupId()),
                                 msg.getRemoveGroup().getRound());
      default:
        CUMULUS_LOG(WARN) << "node: ignoring an unexpected message on a core connection";
    }
  }

  void HandleHello(Conn& c, proto::CoreHello::Reader h) {
    std::string role = h.getRole();
    if (c.tcp) {
      // Over TCP only other nodes, and only with the cluster token.
      std::string token = h.getToken();
      if (role != "peer" || !TokensEqual(token, options_.token)) {
        return Close(c, "refused: a TCP core connection must be a node with the cluster token");
      }
      c.role = Role::kPeer;
      c.peer = IdFrom<NodeId>(h.getNodeId());
      if (!c.peer.IsNil() && !peers_.count(c.peer)) peers_[c.peer] = c.id;
      return;
    }
    if (role == "worker") {
      WorkerId wid = IdFrom<WorkerId>(h.getWorkerId());
      auto it = workers_.find(wid);
      if (it == workers_.end()) return Close(c, "unknown worker id");
      c.role = Role::kWorker;
      c.worker = wid;
      Worker& w = it->second;
      w.conn = c.id;
      auto startup = SystemClock::Get().Now() - w.started;
      {
        std::lock_guard<std::mutex> lock(shared_mu_);
        if (startup_micros_.size() < 4096) {
          startup_micros_.push_back(
              std::chrono::duration_cast<std::chrono::microseconds>(startup).count());
        }
      }
      CUMULUS_LOG(DEBUG) << "node: worker " << w.pid << " ready after "
                         << std::chrono::duration_cast<std::chrono::microseconds>(startup).count()
                         << " us";
      SendHelloAck(c);
      for (const TaskId& t : w.assigned) {
        auto task = tasks_.find(t);
        if (task != tasks_.end()) Send(c, task->second.frame);
      }
      return;
    } else if (role == "driver") {
      c.role = Role::kDriver;
      c.job = IdFrom<JobId>(h.getJobId());
    } else {
      return Close(c, "unknown role '" + role + "'");
    }
    SendHelloAck(c);
  }

  void SendHelloAck(Conn& c) {
    capnp::MallocMessageBuilder message;
    auto ack = message.initRoot<proto::CoreMessage>().initHelloAck();
    ack.setNodeId(DataOf(node_id_));
    ack.setTransferAddress(options_.transfer_address);
    ack.setStoreSocket(options_.store_socket);
    Send(c, EncodeFrame(message));
  }

  void HandleSubmit(Conn& c, proto::TaskSpec::Reader spec, const Words& words) {
    Task t;
    t.id = IdFrom<TaskId>(spec.getTaskId());
    if (t.id.IsNil() || tasks_.count(t.id)) {
      if (!t.id.IsNil()) return;  // a duplicate: the first copy's result answers it
      return Close(c, "submitted a task without a valid id");
    }
    t.job = IdFrom<JobId>(spec.getJobId());
    t.frame = FrameOfWords(words);
    t.req = RequirementsOf(spec);
    t.function = spec.getFunctionName();
    t.actor_creation = spec.getActorCreation();
    t.detached = t.actor_creation && spec.getDetached();
    t.max_retries = spec.getMaxRetries();
    t.hops = spec.getHops();
    t.origin = c.id;
    t.class_key = t.req.placement.demand.ToString() + "|" + t.req.placement.labels.ToString() +
                  "|" + std::to_string(static_cast<int>(t.req.placement.strategy)) + "|" +
                  t.req.placement.affinity_node.Hex() + (t.actor_creation ? "|actor" : "");
    if (!t.req.placement_group.empty()) {
      t.class_key += "|pg:" + t.req.placement_group + ":" + std::to_string(t.req.bundle_index);
    }
    if (c.role == Role::kWorker && !c.job.IsNil()) t.job = c.job;
    TaskId id = t.id;
    auto& task = tasks_.emplace(id, std::move(t)).first->second;
    Requeue(task, /*front=*/false);
  }

  void HandleResult(Conn& c, proto::TaskResult::Reader result, const Words& words) {
    TaskId id = IdFrom<TaskId>(result.getTaskId());
    if (c.role == Role::kWorker) {
      // The worker is done with it whatever became of the task meanwhile.
      auto w = workers_.find(c.worker);
      if (w == workers_.end()) return;
      if (!w->second.assigned.empty() && w->second.assigned.front() == id) {
        w->second.assigned.pop_front();
      } else {
        auto& a = w->second.assigned;
        a.erase(std::remove(a.begin(), a.end(), id), a.end());
      }
      MaybeReleaseLease(w->second);  // (a failed constructor's worker exits by itself)
    }
    auto it = tasks_.find(id);
    if (it == tasks_.end()) return;  // cancelled or already answered
    Task& t = it->second;
    if (c.role == Role::kWorker) {
      if (t.state != Task::kOnWorker || t.worker != c.worker) return;  // not its run of the task
    } else if (c.role == Role::kPeer) {
      // Only from the node it was forwarded to, while it is there: a node declared dead that
      // wakes up must not answer for a task that was placed again.
      if (t.state != Task::kForwarded || t.forwarded_to != c.peer) return;
      // A result for a task this node forwarded: credit the peer's view optimistically.
      auto v = view_.find(t.forwarded_to);
      if (v != view_.end() && !t.actor_creation && t.req.placement_group.empty()) {
        v->second.available.Add(t.req.placement.demand);
        if (!v->second.total.Contains(v->second.available)) v->second.available = v->second.total;
      }
    } else {
      return;
    }
    SendTo(t.origin, FrameOfWords(words));
    tasks_.erase(it);
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
      uint64_t peer = PeerConn(node);
      if (!peer) continue;
      capnp::MallocMessageBuilder message;
      auto out = message.initRoot<proto::CoreMessage>().initFreeObjects(
          static_cast<unsigned>(list.size()));
      for (unsigned i = 0; i < list.size(); ++i) {
        out.set(i, capnp::Data::Reader(reinterpret_cast<const uint8_t*>(list[i].data()),
                                       list[i].size()));
      }
      SendTo(peer, EncodeFrame(message));
    }
  }

  void HandleCancel(const TaskId& id) {
    auto it = tasks_.find(id);
    if (it == tasks_.end()) return;
    Task& t = it->second;
    switch (t.state) {
      case Task::kQueued:  // its queue entry is dropped when the queue reaches it
        FailTask(id, Status::Cancelled("task " + t.function + " was cancelled before it ran"));
        break;
      case Task::kForwarded: {
        t.cancelled = true;  // if that node is lost, the task is not placed again
        uint64_t peer = PeerConn(t.forwarded_to);
        if (peer) {
          capnp::MallocMessageBuilder message;
          message.initRoot<proto::CoreMessage>().setCancelTask(DataOf(id));
          SendTo(peer, EncodeFrame(message));
        }
        break;
      }
      case Task::kOnWorker: {
        auto w = workers_.find(t.worker);
        t.cancelled = true;
        if (w != workers_.end() && w->second.pid > 0) {
          // The worker may be deep in user code: only killing it stops it for sure.
          kill(w->second.pid, SIGKILL);
        }
        break;
      }
    }
  }

  void HandleBlocked(Conn& c, proto::WorkerBlocked::Reader b) {
    if (c.role != Role::kWorker) return;
    auto w = workers_.find(c.worker);
    if (w == workers_.end()) return;
    Worker& worker = w->second;
    worker.blocked = b.getBlocked();
    // Like Ray: a task waiting in Get for other tasks lends its CPU to them meanwhile (nested
    // tasks would otherwise deadlock a full node). Bundle leases keep theirs.
    if (worker.blocked && worker.leased && !worker.is_actor && !worker.in_bundle &&
        worker.lent_cpu == 0) {
      worker.lent_cpu = worker.lease.GetUnits("CPU");
      if (worker.lent_cpu > 0) CreditCpu(worker.lent_cpu);
    } else if (!worker.blocked && worker.lent_cpu > 0) {
      // Taken back, even if that oversubscribes the node for a while: the debt is paid from
      // the next CPU that comes free.
      int64_t take = std::min(worker.lent_cpu, available_.GetUnits("CPU"));
      if (take > 0) {
        ResourceSet r;
        r.SetUnits("CPU", take);
        available_.Subtract(r);
      }
      cpu_debt_ += worker.lent_cpu - take;
      worker.lent_cpu = 0;
    }
    // Tasks queued behind a task that waits on other tasks could deadlock it: run them elsewhere.
    for (auto raw : b.getReturned()) {
      TaskId id = IdFrom<TaskId>(raw);
      auto& a = w->second.assigned;
      a.erase(std::remove(a.begin(), a.end(), id), a.end());
      auto t = tasks_.find(id);
      if (t != tasks_.end()) Requeue(t->second, /*front=*/true);
    }
    schedule_dirty_ = true;
  }

  // ---- scheduling --------------------------------------------------------------------------

  void ApplySharedUpdates() {
    std::lock_guard<std::mutex> lock(shared_mu_);
    if (!new_node_id_.IsNil()) {
      if (!node_id_.IsNil()) past_ids_.insert(node_id_);  // it may be declared dead: not news
      node_id_ = new_node_id_;
      new_node_id_ = NodeId();
    }
    if (view_dirty_) {
      view_dirty_ = false;
      view_.clear();
      for (auto& n : shared_view_) {
        if (n.id == node_id_) continue;
        NodeView v;
        v.id = n.id;
        v.total = n.total;
        v.available = n.available;
        v.labels = n.labels;
        v.alive = n.state == NodeState::kAlive;
        view_[n.id] = v;
        core_addresses_[n.id] = n.core_address;
        if (n.state == NodeState::kDead) newly_dead_.push_back(n.id);
      }
      schedule_dirty_ = true;
    }
  }

  // The head declared these nodes dead: a hung node (SIGSTOP, a frozen VM) keeps its TCP
  // connections open, so close ours; what was forwarded there is placed again.
  void DropDeadPeers() {
    for (const NodeId& id : newly_dead_) {
      if (!past_ids_.count(id) && known_dead_.insert(id).second) {
        // Owners here drop their actors on it (a hung node keeps their connections open).
        capnp::MallocMessageBuilder message;
        message.initRoot<proto::CoreMessage>().setNodeDied(DataOf(id));
        std::string frame = EncodeFrame(message);
        for (auto& [cid, c] : conns_) {
          if (!c.closed && (c.role == Role::kDriver || c.role == Role::kWorker)) SendTo(cid, frame);
        }
      }
      auto p = peers_.find(id);
      if (p == peers_.end()) continue;
      auto c = conns_.find(p->second);
      if (c != conns_.end() && !c->second.closed) {
        Close(c->second, "the head declared node " + id.Hex() + " dead");
      }
    }
    newly_dead_.clear();
  }

  // Fetches the cluster view from the head now (at most every 100 ms). True if it did.
  bool RefreshViewNow(TimePoint now) {
    if (now - last_refresh_ < std::chrono::milliseconds(100)) return false;
    last_refresh_ = now;
    if (!EnsureHead().ok()) return false;
    auto view = head_->GetClusterStatus();
    if (!view.ok()) {
      head_.reset();
      return false;
    }
    {
      std::lock_guard<std::mutex> lock(shared_mu_);
      shared_view_ = view->nodes;
      view_dirty_ = true;
    }
    ApplySharedUpdates();
    return true;
  }

  // The head client of the loop thread. After a failed connect it waits a second before trying
  // again: every call here blocks the loop.
  Status EnsureHead() {
    if (head_) return Status();
    TimePoint now = SystemClock::Get().Now();
    if (now < head_retry_at_) return Status::Unavailable("the head cannot be reached (retrying)");
    ControlClientOptions o;
    o.role = "node-router";
    o.request_timeout = std::chrono::seconds(10);
    auto connected = ControlClient::Connect(options_.head, options_.token, o);
    if (!connected.ok()) {
      head_retry_at_ = now + std::chrono::seconds(1);
      return connected.status();
    }
    head_ = std::move(*connected);
    return Status();
  }

  // This node's exact state and the view of the others, less those that could not be reached
  // lately (unless `include_unreachable`: to tell "never" from "not now").
  ClusterSnapshot Snapshot(TimePoint now, bool include_unreachable = false) {
    ClusterSnapshot s;
    s.local_node = node_id_;
    NodeView self;
    self.id = node_id_;
    self.total = options_.total;
    self.available = available_;
    self.labels = options_.labels;
    s.nodes.push_back(self);
    for (auto& [id, v] : view_) {
      auto bad = unreachable_until_.find(id);
      if (!include_unreachable && bad != unreachable_until_.end() && bad->second > now) continue;
      s.nodes.push_back(v);
    }
    return s;
  }

  void Schedule() {
    schedule_dirty_ = false;
    TimePoint now = SystemClock::Get().Now();
    ClusterSnapshot snap = Snapshot(now);
    std::vector<std::pair<ResourceSet, uint32_t>> pending;
    ScheduleGroups(now, pending);
    snap = Snapshot(now);
    // One FIFO per scheduling class (shape, labels, strategy): a class stops at its first task
    // that cannot be placed, so a long queue costs nothing per pass.
    for (auto q = queues_.begin(); q != queues_.end();) {
      std::deque<TaskId>& queue = q->second;
      while (!queue.empty()) {
        auto found = tasks_.find(queue.front());
        if (found == tasks_.end() || found->second.state != Task::kQueued) {
          queue.pop_front();
          continue;
        }
        Task& t = found->second;
        if (!t.req.placement_group.empty()) {
          // Its resources were reserved with the group: no pending demand for it.
          if (!PlaceInGroup(t, now)) break;
          queue.pop_front();
          continue;
        }
        PlacementRequest req = t.req.placement;
        if (t.hops > 0) {  // forwarded here: run here or wait here, never bounce again
          req.strategy = PlacementStrategy::kNodeAffinity;
          req.affinity_node = node_id_;
          req.affinity_soft = false;
        }
        snap.nodes[0].available = available_;
        PlacementDecision d = PlaceTask(snap, req);
        if (d.kind == PlacementDecision::kInfeasible && RefreshViewNow(now)) {
          // The view may predate a node that joined: ask the head before saying "never".
          snap = Snapshot(now);
          snap.nodes[0].available = available_;
          d = PlaceTask(snap, req);
        }
        if (d.kind == PlacementDecision::kInfeasible &&
            PlaceTask(Snapshot(now, /*include_unreachable=*/true), req).kind !=
                PlacementDecision::kInfeasible) {
          d.kind = PlacementDecision::kWait;  // a node it fits could not be reached lately
        }
        if (d.kind == PlacementDecision::kInfeasible) {
          TaskId id = t.id;
          queue.pop_front();
          FailTask(id, Status::Infeasible((t.actor_creation ? "actor " : "task ") + t.function +
                                          " can never run: " + d.reason));
          continue;
        }
        bool done = false;
        if (d.kind == PlacementDecision::kPlace && d.node == node_id_) {
          done = StartOnNewLease(t, now);
        }
        if (!done && d.kind == PlacementDecision::kPlace && d.node != node_id_) {
          done = Forward(t, d.node, now);
          if (done) {
            for (auto& n : snap.nodes) {
              if (n.id == d.node && n.available.Contains(t.req.placement.demand)) {
                n.available.Subtract(t.req.placement.demand);
              }
            }
            auto v = view_.find(d.node);
            if (v != view_.end() && v->second.available.Contains(t.req.placement.demand)) {
              v->second.available.Subtract(t.req.placement.demand);
            }
          }
        }
        // Small tasks of one shape queue behind a busy worker of theirs rather than wait here.
        if (!done && !t.actor_creation && t.req.placement.strategy != PlacementStrategy::kSpread) {
          done = Pipeline(t);
        }
        if (!done) {
          pending.emplace_back(t.req.placement.demand, static_cast<uint32_t>(queue.size()));
          break;
        }
        queue.pop_front();
      }
      q = queue.empty() ? queues_.erase(q) : std::next(q);
    }
    std::lock_guard<std::mutex> lock(shared_mu_);
    shared_available_ = available_;
    shared_pending_ = std::move(pending);
  }

  // A retry after a failure waits a little, more each time (100 ms, 200 ms, ... up to 5 s), so
  // that a task that kills its worker does not spin. REQUIRES: the task is in tasks_.
  void RequeueLater(Task& t) {
    auto backoff = std::chrono::milliseconds(100 << std::min<uint32_t>(t.attempt - 1, 6));
    t.state = Task::kQueued;
    t.waiting_retry = true;
    delayed_.emplace(
        SystemClock::Get().Now() + std::min<Duration>(backoff, std::chrono::seconds(5)), t.id);
  }

  void RequeueDue(TimePoint now) {
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
      TaskId id = delayed_.begin()->second;
      delayed_.erase(delayed_.begin());
      auto t = tasks_.find(id);
      if (t == tasks_.end() || !t->second.waiting_retry) continue;
      t->second.waiting_retry = false;
      Requeue(t->second, /*front=*/false);
    }
  }

  void Requeue(Task& t, bool front) {
    t.state = Task::kQueued;
    auto& q = queues_[t.class_key];
    if (front) {
      q.push_front(t.id);
    } else {
      q.push_back(t.id);
    }
    schedule_dirty_ = true;
  }

  // Starts `t` on a worker of its own lease from this node's free resources, or from `bundle`'s.
  bool StartOnNewLease(Task& t, TimePoint now, HeldBundle* bundle = nullptr) {
    ResourceSet& pool = bundle ? bundle->available : available_;
    GpuAssignment& gpus = bundle ? *bundle->gpus : gpus_;
    if (!pool.Contains(t.req.placement.demand)) return false;
    int64_t gpu_units = t.req.placement.demand.GetUnits("GPU");
    std::vector<uint32_t> gpu_ids;
    if (gpu_units > 0) {
      auto got = gpus.Acquire(gpu_units);
      if (!got.ok()) return false;
      gpu_ids = *got;
    }
    std::string devices = GpuAssignment::VisibleDevices(gpu_ids);
    std::string key = t.job.Hex() + "/" + devices;
    Worker* w = nullptr;
    bool fresh_needed = t.actor_creation && gpu_units > 0;
    if (!fresh_needed) {
      for (auto& [id, cand] : workers_) {
        if (!cand.leased && !cand.is_actor && cand.key == key) {
          w = &cand;
          break;
        }
      }
    }
    if (!w) {
      if (!t.actor_creation && gpu_units == 0 && TaskWorkerCount() >= max_task_workers_) {
        return false;  // wait for a worker to come free
      }
      auto retry = program_retry_at_.find(t.job);
      Result<Worker*> spawned = Status::Unavailable("its program could not be fetched");
      if (retry == program_retry_at_.end() || retry->second <= now) {
        spawned = Spawn(t.job, key, devices, now);
        if (spawned.ok()) {
          program_retry_at_.erase(t.job);
        } else if (spawned.status().code() == StatusCode::kUnavailable) {
          program_retry_at_[t.job] = now + std::chrono::seconds(1);  // one try a second per job
        }
      }
      if (!spawned.ok() && spawned.status().code() == StatusCode::kUnavailable &&
          t.waiting_for_program && now - t.waiting_since > kProgramWait) {
        spawned = Status::Unavailable("the job's program could not be fetched for " +
                                      std::to_string(kProgramWait.count()) + " s (" +
                                      spawned.status().message() + ")");
        t.waiting_for_program = false;
        if (gpu_units > 0) (void)gpus.Release(gpu_ids, gpu_units);
        FailTask(t.id, Status(StatusCode::kUnavailable, "cannot start a worker for " + t.function +
                                                            ": " + spawned.status().message()));
        return true;
      }
      if (!spawned.ok()) {
        if (gpu_units > 0) (void)gpus.Release(gpu_ids, gpu_units);
        TaskId id = t.id;
        // Leave the queue entry: Schedule erases it because we report it done.
        if (spawned.status().code() == StatusCode::kUnavailable) {
          // The job's program could not be fetched (the head is restarting, or the driver's
          // node cannot be reached now): try again in a second rather than fail the task.
          if (!t.waiting_for_program) {
            CUMULUS_LOG(WARN) << "node: cannot start a worker for " << t.function << " yet ("
                              << spawned.status().message() << "); it waits";
            t.waiting_since = now;
          }
          t.waiting_for_program = true;
          t.state = Task::kQueued;
          t.waiting_retry = true;
          delayed_.emplace(now + std::chrono::seconds(1), id);
          return true;
        }
        FailTask(id, Status(spawned.status().code(), "cannot start a worker for " + t.function +
                                                         ": " + spawned.status().message()));
        return true;
      }
      w = *spawned;
    }
    pool.Subtract(t.req.placement.demand);
    w->in_bundle = bundle != nullptr;
    if (bundle) w->bundle = {bundle->group, bundle->index};
    w->leased = true;
    w->lease = t.req.placement.demand;
    w->gpu_ids = gpu_ids;
    w->lease_class = t.class_key;
    w->is_actor = t.actor_creation;
    w->detached = t.detached;
    Assign(*w, t);
    return true;
  }

  bool Pipeline(Task& t) {
    Worker* best = nullptr;
    for (auto& [id, w] : workers_) {
      if (w.leased && !w.is_actor && !w.blocked && w.lease_class == t.class_key && w.job == t.job &&
          w.assigned.size() < options_.pipeline_depth &&
          (!best || w.assigned.size() < best->assigned.size())) {
        best = &w;
      }
    }
    if (!best) return false;
    Assign(*best, t);
    return true;
  }

  void Assign(Worker& w, Task& t) {
    t.state = Task::kOnWorker;
    t.worker = w.id;
    t.assigned_at = SystemClock::Get().Now();
    w.assigned.push_back(t.id);
    if (w.conn) SendTo(w.conn, t.frame);  // else sent when the worker says hello
  }

  bool Forward(Task& t, const NodeId& node, TimePoint now) {
    uint64_t peer = PeerConn(node);
    if (!peer) {
      unreachable_until_[node] = now + kUnreachablePenalty;
      schedule_dirty_ = true;
      return false;
    }
    // The first of a job's tasks to go there takes where the job's program is.
    auto record = job_records_.find(t.job);
    if (record != job_records_.end() && told_.insert({node, t.job}).second) {
      capnp::MallocMessageBuilder info;
      auto j = info.initRoot<proto::CoreMessage>().initJobInfo();
      j.setJobId(DataOf(t.job));
      j.setRecord(capnp::Data::Reader(reinterpret_cast<const uint8_t*>(record->second.data()),
                                      record->second.size()));
      SendTo(peer, EncodeFrame(info));
    }
    // Mark the spec as forwarded once (hops = 1) so the other node does not pass it on again.
    Words words = kj::heapArray<capnp::word>((t.frame.size() - kFrameHeaderBytes) / 8);
    std::memcpy(words.begin(), t.frame.data() + kFrameHeaderBytes, words.size() * 8);
    capnp::FlatArrayMessageReader reader(words);
    capnp::MallocMessageBuilder message;
    message.setRoot(reader.getRoot<proto::CoreMessage>());
    message.getRoot<proto::CoreMessage>().getSubmitTask().setHops(t.hops + 1);
    SendTo(peer, EncodeFrame(message));
    t.state = Task::kForwarded;
    t.forwarded_to = node;
    return true;
  }

  size_t TaskWorkerCount() const {
    size_t n = 0;
    for (auto& [id, w] : workers_) n += w.is_actor ? 0 : 1;
    return n;
  }

  void MaybeReleaseLease(Worker& w) {
    if (w.is_actor || !w.assigned.empty() || !w.leased) return;
    ReleaseLease(w);
    w.idle_since = SystemClock::Get().Now();
  }

  void ReleaseLease(Worker& w) {
    if (!w.leased) return;
    int64_t gpu_units = w.lease.GetUnits("GPU");
    if (!w.in_bundle) {
      ResourceSet back = w.lease;
      if (w.lent_cpu > 0) back.SetUnits("CPU", back.GetUnits("CPU") - w.lent_cpu);  // given already
      w.lent_cpu = 0;
      Credit(back);
      if (gpu_units > 0) (void)gpus_.Release(w.gpu_ids, gpu_units);
    } else if (auto b = bundles_.find(w.bundle); b != bundles_.end()) {
      b->second.available.Add(w.lease);
      if (gpu_units > 0) (void)b->second.gpus->Release(w.gpu_ids, gpu_units);
    }  // else the bundle went first and took its whole reservation back with it
    w.in_bundle = false;
    w.leased = false;
    w.lease = ResourceSet();
    w.gpu_ids.clear();
    w.lease_class.clear();
    schedule_dirty_ = true;
  }

  // Resources back to the node's pool; CPU pays first what blocked workers took back beyond it.
  void Credit(ResourceSet r) {
    int64_t cpu = r.GetUnits("CPU");
    r.SetUnits("CPU", 0);
    available_.Add(r);
    if (cpu > 0) CreditCpu(cpu);
  }
  void CreditCpu(int64_t units) {
    int64_t pay = std::min(units, cpu_debt_);
    cpu_debt_ -= pay;
    if (units - pay <= 0) return;
    ResourceSet r;
    r.SetUnits("CPU", units - pay);
    available_.Add(r);
  }

  void FailTask(const TaskId& id, const Status& st) {
    auto it = tasks_.find(id);
    if (it == tasks_.end()) return;
    SendTo(it->second.origin, ErrorResultFrame(id, node_id_, st));
    tasks_.erase(it);
  }

  // ---- placement groups ----------------------------------------------------------------------

  JobId JobOf(const Conn& c) const {
    if (c.role == Role::kWorker) {
      auto w = workers_.find(c.worker);
      return w == workers_.end() ? JobId() : w->second.job;
    }
    return c.job;
  }

  void SendGroupReply(uint64_t conn, const PlacementGroupId& id, const Status& st,
                      const std::vector<NodeId>& nodes, uint32_t round = 0) {
    capnp::MallocMessageBuilder message;
    auto r = message.initRoot<proto::CoreMessage>().initGroupReply();
    r.setGroupId(DataOf(id));
    r.setRound(round);
    r.setCode(static_cast<uint16_t>(st.code()));
    r.setMessage(st.message());
    auto list = r.initNodes(static_cast<unsigned>(nodes.size()));
    for (unsigned i = 0; i < nodes.size(); ++i) list.set(i, DataOf(nodes[i]));
    SendTo(conn, EncodeFrame(message));
  }

  void HandleCreateGroup(Conn& c, proto::GroupRequest::Reader req) {
    PlacementGroupId id = IdFrom<PlacementGroupId>(req.getGroupId());
    auto refuse = [&](const Status& st) { SendGroupReply(c.id, id, st, {}); };
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
    op.job = JobOf(c);
    op.strategy = static_cast<GroupStrategy>(req.getStrategy());
    op.origin = c.id;
    for (auto b : req.getBundles()) op.bundles.push_back(DecodeResources(b.getResources()));
    if (op.bundles.empty())
      return refuse(Status::InvalidArgument("a placement group needs bundles"));
    for (size_t i = 0; i < op.bundles.size(); ++i) {
      if (op.bundles[i].empty()) {
        return refuse(Status::InvalidArgument("bundle " + std::to_string(i) +
                                              " of the placement group asks for nothing"));
      }
    }
    groups_.emplace(id, std::move(op));
    schedule_dirty_ = true;
  }

  // Places the waiting groups and asks the chosen nodes to hold their bundles.
  void ScheduleGroups(TimePoint now, std::vector<std::pair<ResourceSet, uint32_t>>& pending) {
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
        d = PlaceGroup(Snapshot(now), op.bundles, op.strategy);
        if (d.kind == PlacementDecision::kInfeasible && RefreshViewNow(now)) {
          d = PlaceGroup(Snapshot(now), op.bundles, op.strategy);
        }
        if (d.kind == PlacementDecision::kInfeasible &&
            PlaceGroup(Snapshot(now, /*include_unreachable=*/true), op.bundles, op.strategy).kind !=
                PlacementDecision::kInfeasible) {
          d.kind = PlacementDecision::kWait;  // fits once a node we cannot reach now is back
        }
      }
      if (d.kind == PlacementDecision::kInfeasible) {
        SendGroupReply(op.origin, op.id,
                       Status::Infeasible("placement group " + DescribeBundles(op.bundles) + " " +
                                          GroupStrategyName(op.strategy) +
                                          " can never be placed: " + d.reason),
                       {});
        it = groups_.erase(it);
        continue;
      }
      if (d.kind == PlacementDecision::kWait) {
        for (auto& b : op.bundles) pending.emplace_back(b, 1);
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
        if (node == node_id_) {
          Status st = ReserveLocal(op.id, op.job, op.round, indices, op.bundles);
          if (!st.ok()) op.refused = st.message();
          continue;
        }
        uint64_t peer = PeerConn(node);
        if (!peer) {
          unreachable_until_[node] = now + kUnreachablePenalty;
          op.refused = "node " + node.Hex() + " cannot be reached";
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
        SendTo(peer, EncodeFrame(message));
        op.awaiting.insert(node);
        // Booked in the view now so that what this pass places next does not count on it.
        auto v = view_.find(node);
        if (v != view_.end() && v->second.available.Contains(sum))
          v->second.available.Subtract(sum);
      }
      asked.push_back(op.id);
      ++it;
    }
    for (auto& id : asked) ConcludeGroup(id);
  }

  // Once every node asked has answered: ready, or released everywhere and waiting again.
  void ConcludeGroup(const PlacementGroupId& id) {
    auto it = groups_.find(id);
    if (it == groups_.end()) return;
    GroupOp& op = it->second;
    if (op.state != GroupOp::kReserving || !op.awaiting.empty()) return;
    if (op.removed) {
      ReleaseEverywhere(op, kAllRounds);
      SendGroupReply(op.origin, id,
                     Status::Cancelled("the placement group was removed before it was reserved"),
                     {});
      groups_.erase(it);
      return;
    }
    if (!op.refused.empty()) {
      CUMULUS_LOG(DEBUG) << "node: placement group " << id << " not reserved (" << op.refused
                         << "); trying again";
      ReleaseEverywhere(op, op.round);
      op.state = GroupOp::kWaiting;
      op.retry_at = SystemClock::Get().Now() + std::chrono::milliseconds(100);
      last_refresh_ = TimePoint{};  // the view was wrong: ask the head before the next try
      (void)RefreshViewNow(SystemClock::Get().Now());
      return;
    }
    op.state = GroupOp::kReady;
    // Other nodes route the group's tasks by this record.
    GroupRecord record;
    record.job = op.job.Hex();
    for (auto& n : op.nodes) record.nodes.push_back(n.Hex());
    Status st = EnsureHead();
    if (st.ok()) st = head_->KvPut(kGroupsNamespace, id.Hex(), Serialize(record)).status();
    if (!st.ok()) {
      head_.reset();
      CUMULUS_LOG(WARN) << "node: cannot record placement group " << id
                        << " with the head (only this node can route its tasks): " << st;
    }
    SendGroupReply(op.origin, id, Status(), op.nodes);
  }

  std::string ReleaseFrame(const PlacementGroupId& id, uint32_t round) {
    capnp::MallocMessageBuilder message;
    auto r = message.initRoot<proto::CoreMessage>().initRemoveGroup();
    r.setGroupId(DataOf(id));
    r.setRound(round);
    return EncodeFrame(message);
  }

  // Releases the bundles of `op` reserved by try `round` or earlier (kAllRounds: for good) on
  // every node it placed them on.
  void ReleaseEverywhere(const GroupOp& op, uint32_t round) {
    std::set<NodeId> nodes(op.nodes.begin(), op.nodes.end());
    std::string frame = ReleaseFrame(op.id, round);
    for (const NodeId& n : nodes) {
      if (n == node_id_) {
        ReleaseLocal(op.id, round);
      } else if (uint64_t peer = PeerConn(n)) {
        SendTo(peer, frame);
      }
    }
    // Credit the view as when it was booked: the release reaches each node before anything this
    // node sends it later (one connection, in order), so the next group may count on it.
    for (size_t i = 0; i < op.nodes.size() && i < op.bundles.size(); ++i) {
      auto v = view_.find(op.nodes[i]);
      if (v == view_.end()) continue;
      v->second.available.Add(op.bundles[i]);
      if (!v->second.total.Contains(v->second.available)) v->second.available = v->second.total;
    }
  }

  // Holds `indices` of `bundles` here, all or none.
  Status ReserveLocal(const PlacementGroupId& id, const JobId& job, uint32_t round,
                      const std::vector<uint32_t>& indices,
                      const std::vector<ResourceSet>& bundles) {
    auto released = released_.find(id);
    if (released != released_.end() && released->second >= round) {
      return Status::Cancelled("placement group " + id.Hex() + " was released (try " +
                               std::to_string(round) + ")");
    }
    ResourceSet sum;
    for (uint32_t i : indices) {
      if (bundles_.count({id, i})) {
        return Status::AlreadyExists("bundle " + std::to_string(i) + " of placement group " +
                                     id.Hex() + " is already held here");
      }
      sum.Add(bundles[i]);
    }
    if (!available_.Contains(sum)) {
      return Status::ResourceExhausted("node " + node_id_.Hex() + " has " + available_.ToString() +
                                       " free; the bundles need " + sum.ToString());
    }
    std::vector<HeldBundle> made;
    for (uint32_t i : indices) {
      HeldBundle b;
      b.group = id;
      b.index = i;
      b.job = job;
      b.round = round;
      b.total = b.available = bundles[i];
      int64_t units = bundles[i].GetUnits("GPU");
      if (units > 0) {
        auto got = gpus_.Acquire(units);
        if (!got.ok()) {
          for (auto& m : made) (void)gpus_.Release(m.gpu_ids, m.total.GetUnits("GPU"));
          return Status::ResourceExhausted("node " + node_id_.Hex() +
                                           " cannot hold the GPUs of bundle " + std::to_string(i) +
                                           ": " + got.status().message());
        }
        b.gpu_ids = *got;
      }
      b.gpus = std::make_unique<GpuAssignment>(b.gpu_ids);
      made.push_back(std::move(b));
    }
    available_.Subtract(sum);
    for (auto& b : made) {
      uint32_t index = b.index;
      bundles_.emplace(std::make_pair(id, index), std::move(b));
    }
    schedule_dirty_ = true;
    return Status();
  }

  // Gives a group's bundles held here (those reserved by try `round` or earlier) back to the
  // node; the workers using them are ended. Remembers the release, so that a reservation of an
  // earlier try arriving late (another connection) is refused rather than held forever.
  void ReleaseLocal(const PlacementGroupId& id, uint32_t round) {
    auto [tomb, fresh] = released_.emplace(id, round);
    if (fresh) {
      released_order_.push_back(id);
      if (released_order_.size() > 65536) {
        released_.erase(released_order_.front());
        released_order_.pop_front();
      }
    } else {
      tomb->second = std::max(tomb->second, round);
    }
    if (round == kAllRounds) group_locations_.erase(id);
    auto first = bundles_.lower_bound({id, 0});
    if (first == bundles_.end() || !(first->first.first == id)) return;
    std::vector<WorkerId> doomed;
    for (auto& [wid, w] : workers_) {
      if (!w.leased || !w.in_bundle || !(w.bundle.first == id)) continue;
      auto b = bundles_.find(w.bundle);
      if (b != bundles_.end() && b->second.round <= round) doomed.push_back(wid);
    }
    for (auto& wid : doomed) {
      Worker& w = workers_[wid];
      if (w.pid > 0) kill(w.pid, SIGKILL);
      WorkerGone(wid, "was stopped: its placement group was removed");
    }
    for (auto it = bundles_.lower_bound({id, 0}); it != bundles_.end() && it->first.first == id;) {
      HeldBundle& b = it->second;
      if (b.round > round) {
        ++it;
        continue;
      }
      Credit(b.total);
      int64_t units = b.total.GetUnits("GPU");
      if (units > 0) (void)gpus_.Release(b.gpu_ids, units);
      it = bundles_.erase(it);
    }
    schedule_dirty_ = true;
  }

  void HandleReserveBundles(Conn& c, proto::GroupRequest::Reader req) {
    PlacementGroupId id = IdFrom<PlacementGroupId>(req.getGroupId());
    std::vector<ResourceSet> bundles;
    std::vector<uint32_t> indices;
    Status st;
    for (auto b : req.getBundles()) {
      uint32_t i = b.getIndex();
      if (i > 1u << 20) {
        st = Status::InvalidArgument("bundle index " + std::to_string(i) + " is out of range");
        break;
      }
      if (std::find(indices.begin(), indices.end(), i) != indices.end()) {
        st = Status::InvalidArgument("bundle " + std::to_string(i) + " is named twice");
        break;
      }
      if (bundles.size() <= i) bundles.resize(i + 1);
      bundles[i] = DecodeResources(b.getResources());
      indices.push_back(i);
    }
    if (id.IsNil()) st = Status::InvalidArgument("a placement group needs a 16-byte id");
    if (req.getRound() == 0 || req.getRound() == kAllRounds) {
      st = Status::InvalidArgument("a reservation needs a try number");
    }
    if (st.ok()) {
      st = ReserveLocal(id, IdFrom<JobId>(req.getJobId()), req.getRound(), indices, bundles);
    }
    SendGroupReply(c.id, id, st, {}, req.getRound());
  }

  void HandleGroupReply(Conn& c, proto::GroupReply::Reader reply) {
    PlacementGroupId id = IdFrom<PlacementGroupId>(reply.getGroupId());
    auto it = groups_.find(id);
    if (it == groups_.end() || it->second.state != GroupOp::kReserving ||
        it->second.round != reply.getRound() || !it->second.awaiting.count(c.peer)) {
      // Held for a try nobody waits for any more: let that try's bundles go.
      if (reply.getCode() == 0 && reply.getRound() != kAllRounds) {
        SendTo(c.id, ReleaseFrame(id, reply.getRound()));
      }
      return;
    }
    it->second.awaiting.erase(c.peer);
    if (reply.getCode() != 0) it->second.refused = reply.getMessage();
    ConcludeGroup(id);
  }

  void HandleRemoveGroup(Conn& c, const PlacementGroupId& id, uint32_t round) {
    if (id.IsNil()) return;
    if (c.role == Role::kPeer) {
      ReleaseLocal(id, round);
      // Removed for good by way of another node: if this node made it, forget it here too.
      auto made = groups_.find(id);
      if (round == kAllRounds && made != groups_.end() && made->second.state == GroupOp::kReady) {
        groups_.erase(made);
      }
      return;
    }
    // From a driver or worker: only its own job's groups, and always for good.
    JobId job = JobOf(c);
    auto it = groups_.find(id);
    if (it != groups_.end()) {
      GroupOp& op = it->second;
      if (op.job != job) {
        CUMULUS_LOG(WARN) << "node: job " << job << " may not remove placement group " << id
                          << " of job " << op.job;
        return;
      }
      if (op.state == GroupOp::kReserving) {
        op.removed = true;  // released once every node has answered
        return;
      }
      if (op.state == GroupOp::kReady) {
        ReleaseEverywhere(op, kAllRounds);
        ForgetGroup(id);
      } else if (op.origin != c.id) {
        SendGroupReply(op.origin, id,
                       Status::Cancelled("the placement group was removed before it was reserved"),
                       {});
      }
      groups_.erase(it);
      return;
    }
    // Reserved by way of another node (a worker's group): its record says where.
    auto located = LocateGroup(id);
    if (!located.ok()) return;  // removed already, or never was
    if (located->first != job) {
      CUMULUS_LOG(WARN) << "node: job " << job << " may not remove placement group " << id;
      return;
    }
    GroupOp op;
    op.id = id;
    op.nodes = located->second;
    ReleaseEverywhere(op, kAllRounds);
    ForgetGroup(id);
  }

  void ForgetGroup(const PlacementGroupId& id) {
    group_locations_.erase(id);
    Status st = EnsureHead();
    if (st.ok()) st = head_->KvDelete(kGroupsNamespace, id.Hex()).status();
    if (!st.ok() && st.code() != StatusCode::kNotFound) {
      head_.reset();
      CUMULUS_LOG(WARN) << "node: cannot remove the record of placement group " << id << ": " << st;
    }
  }

  // The node of each bundle of a group: known here, or from the head's record.
  // NotFound: no such group; Unavailable: not reserved yet, or the head cannot be asked now.
  Result<std::pair<JobId, std::vector<NodeId>>> LocateGroup(const PlacementGroupId& id) {
    auto op = groups_.find(id);
    if (op != groups_.end()) {
      if (op->second.state != GroupOp::kReady) {
        return Status::Unavailable("placement group " + id.Hex() + " is not reserved yet");
      }
      return std::make_pair(op->second.job, op->second.nodes);
    }
    auto cached = group_locations_.find(id);
    if (cached != group_locations_.end()) return cached->second;
    CUMULUS_RETURN_IF_ERROR(EnsureHead());
    auto raw = head_->KvGet(kGroupsNamespace, id.Hex());
    if (!raw.ok()) {
      if (raw.status().code() == StatusCode::kNotFound) {
        return Status::NotFound("placement group " + id.Hex() +
                                " does not exist: it was removed, or its job ended");
      }
      head_.reset();
      return Status::Unavailable("cannot look up placement group " + id.Hex() + ": " +
                                 raw.status().message());
    }
    CUMULUS_ASSIGN_OR_RETURN(GroupRecord record, Deserialize<GroupRecord>(*raw));
    std::pair<JobId, std::vector<NodeId>> where;
    CUMULUS_ASSIGN_OR_RETURN(where.first, JobId::FromHex(record.job));
    for (auto& hex : record.nodes) {
      CUMULUS_ASSIGN_OR_RETURN(NodeId n, NodeId::FromHex(hex));
      where.second.push_back(n);
    }
    group_locations_[id] = where;
    return where;
  }

  // A task in a placement group runs on the node holding its bundle, from the bundle's resources.
  // True when it left the queue: started, forwarded or failed.
  bool PlaceInGroup(Task& t, TimePoint now) {
    TaskId tid = t.id;
    auto fail = [&](const Status& st) {
      FailTask(tid, st);
      return true;
    };
    std::string what = (t.actor_creation ? "actor " : "task ") + t.function;
    if (t.req.placement_group.size() != PlacementGroupId::kSize) {
      return fail(Status::InvalidArgument(what + " names a malformed placement group id"));
    }
    PlacementGroupId gid = PlacementGroupId::FromBinary(t.req.placement_group);
    if (t.req.bundle_index < 0) {
      return fail(Status::InvalidArgument(what + " asks for bundle " +
                                          std::to_string(t.req.bundle_index) +
                                          " of a placement group: give an index from 0"));
    }
    uint32_t index = static_cast<uint32_t>(t.req.bundle_index);
    std::string bundle_name =
        "bundle " + std::to_string(index) + " of placement group " + gid.Hex();
    auto b = bundles_.find({gid, index});
    if (b != bundles_.end()) {
      if (!b->second.total.Contains(t.req.placement.demand)) {
        return fail(Status::Infeasible(what + " asks for " + t.req.placement.demand.ToString() +
                                       " but " + bundle_name + " holds only " +
                                       b->second.total.ToString()));
      }
      if (!t.req.placement.labels.Matches(options_.labels)) {
        return fail(Status::Infeasible(what + ": " + bundle_name + " is on node " + node_id_.Hex() +
                                       ", whose labels do not match " +
                                       t.req.placement.labels.ToString()));
      }
      if (StartOnNewLease(t, now, &b->second)) return true;
      return !t.actor_creation && Pipeline(t);
    }
    if (t.hops > 0) {
      return fail(Status::NotFound(what + ": " + bundle_name + " is no longer held on node " +
                                   node_id_.Hex() + " (the group was removed, or its job ended)"));
    }
    auto located = LocateGroup(gid);
    if (!located.ok()) {
      if (located.status().code() == StatusCode::kUnavailable) return false;  // wait
      return fail(Status(located.status().code(), what + ": " + located.status().message()));
    }
    const std::vector<NodeId>& nodes = located->second;
    if (index >= nodes.size()) {
      return fail(Status::InvalidArgument(what + " asks for bundle " + std::to_string(index) +
                                          " but placement group " + gid.Hex() + " has " +
                                          std::to_string(nodes.size()) + " bundles"));
    }
    NodeId node = nodes[index];
    if (node == node_id_) {
      group_locations_.erase(gid);
      return fail(Status::NotFound(what + ": " + bundle_name +
                                   " is no longer held (the group was removed, or its job ended)"));
    }
    return Forward(t, node, now);
  }

  // ---- peers -------------------------------------------------------------------------------

  uint64_t PeerConn(const NodeId& node) {
    auto it = peers_.find(node);
    if (it != peers_.end() && conns_.count(it->second) && !conns_[it->second].closed) {
      return it->second;
    }
    auto addr = core_addresses_.find(node);
    if (addr == core_addresses_.end() || addr->second.empty()) return 0;
    auto hp = ParseHostPort(addr->second);
    if (!hp.ok()) return 0;
    auto fd = ConnectTcp(*hp, std::chrono::seconds(1));
    if (!fd.ok()) {
      CUMULUS_LOG(WARN) << "node: cannot reach node " << node << " at " << addr->second << ": "
                        << fd.status();
      return 0;
    }
    int flags = fcntl(*fd, F_GETFL);
    fcntl(*fd, F_SETFL, flags | O_NONBLOCK);
    Conn& c = AddConn(*fd, true);
    c.role = Role::kPeer;
    c.peer = node;
    peers_[node] = c.id;
    capnp::MallocMessageBuilder message;
    auto h = message.initRoot<proto::CoreMessage>().initHello();
    h.setRole("peer");
    h.setToken(options_.token);
    h.setNodeId(DataOf(node_id_));
    h.setPid(getpid());
    Send(c, EncodeFrame(message));
    return c.id;
  }

  // ---- workers -----------------------------------------------------------------------------

  Result<std::string> JobProgram(const JobId& job) {
    auto cached = programs_.find(job);
    if (cached != programs_.end()) return cached->second;
    // Told by the driver or the node that forwarded its work; else from the head.
    auto known = job_records_.find(job);
    if (known == job_records_.end()) {
      CUMULUS_RETURN_IF_ERROR(EnsureHead());
      auto raw = head_->KvGet(kJobsNamespace, job.Hex());
      if (!raw.ok()) {
        if (raw.status().code() != StatusCode::kNotFound) head_.reset();
        return Status(raw.status().code(), "job " + job.Hex() +
                                               " is not registered with the head (" +
                                               raw.status().message() + ")");
      }
      known = job_records_.emplace(job, *raw).first;
    }
    CUMULUS_ASSIGN_OR_RETURN(JobRecord record, Deserialize<JobRecord>(known->second));
    std::string dir = options_.work_dir + "/jobs";
    std::filesystem::create_directories(dir);
    std::string base = record.argv.empty()
                           ? std::string("program")
                           : std::filesystem::path(record.argv[0]).filename().string();
    if (base.empty() || base == "." || base == "..") base = "program";
    std::filesystem::create_directories(dir + "/" + record.binary_hash);
    std::string path = dir + "/" + record.binary_hash + "/" + base;
    if (!std::filesystem::exists(path)) {
      CUMULUS_ASSIGN_OR_RETURN(ObjectId obj, ObjectId::FromHex(record.binary_object));
      bool pulled = false;
      if (!options_.store->Contains(obj)) {
        CUMULUS_ASSIGN_OR_RETURN(HostPort from, ParseHostPort(record.transfer_address));
        CUMULUS_RETURN_IF_ERROR(PullObject(from, options_.token, obj, PullInto(*options_.store)));
        pulled = true;
      }
      {
        CUMULUS_ASSIGN_OR_RETURN(ObjectBuffer bytes, options_.store->Get(obj));
        std::string tmp = path + ".tmp";
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(bytes.data()),
                static_cast<std::streamsize>(bytes.size()));
        f.close();
        if (!f) return Status::ResourceExhausted("cannot write the job's program to " + tmp);
        chmod(tmp.c_str(), 0700);
        std::filesystem::rename(tmp, path);
      }
      if (pulled) (void)options_.store->Delete(obj);
    }
    programs_[job] = path;
    program_argv_[job] = record.argv;
    if (record.submitted) submitted_.insert(job);
    return path;
  }

  Result<Worker*> Spawn(const JobId& job, const std::string& key, const std::string& devices,
                        TimePoint now) {
    CUMULUS_ASSIGN_OR_RETURN(std::string program, JobProgram(job));
    WorkerId wid = WorkerId::FromRandom();
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) {
      std::string_view kv(*e);
      if (kv.rfind("CUMULUS_", 0) == 0 || kv.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0) continue;
      env_strings.emplace_back(kv);
    }
    env_strings.push_back("CUMULUS_WORKER_ID=" + wid.Hex());
    env_strings.push_back("CUMULUS_JOB_ID=" + job.Hex());
    env_strings.push_back("CUMULUS_NODE_SOCKET=" + options_.socket_path);
    env_strings.push_back("CUMULUS_STORE_SOCKET=" + options_.store_socket);
    env_strings.push_back("CUMULUS_NODE_ID=" + node_id_.Hex());
    env_strings.push_back("CUMULUS_TRANSFER_ADDRESS=" + options_.transfer_address);
    env_strings.push_back("CUMULUS_BIND_HOST=" + options_.bind_host);
    env_strings.push_back("CUMULUS_HEAD=" + options_.head.ToString());
    env_strings.push_back("CUMULUS_TOKEN=" + options_.token);
    env_strings.push_back("CUDA_VISIBLE_DEVICES=" + devices);
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = program_argv_[job];
    if (args.empty()) args.push_back(program);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    // Workers of a submitted job write to its log on this node (shipped to `cumulus logs`).
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (submitted_.count(job)) {
      std::string log = JobSupervisor::WorkerLogPath(options_.work_dir, job);
      posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                       0600);
      posix_spawn_file_actions_adddup2(&actions, 1, 2);
    }
    int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      return Status::ResourceExhausted("cannot start " + program + ": " + std::strerror(rc));
    }
    Worker& w = workers_[wid];
    w.id = wid;
    w.pid = pid;
    w.spawned_pid = pid;
    w.job = job;
    w.key = key;
    w.started = now;
    w.idle_since = now;
    return &w;
  }

  // Before the kernel's OOM killer picks a victim at random (often the node itself), this node
  // kills the newest task it runs that may be retried (else the newest task), retries it after a
  // backoff, and tells the task's job in its log. Actors are left alone (their state would go).
  void CheckMemory(TimePoint now) {
    if (memory_threshold_ >= 1.0 || now < memory_cooldown_until_) return;
    double used = MemoryUsage().fraction();
    if (used < memory_threshold_) return;
    Worker* victim = nullptr;
    Task* victim_task = nullptr;
    bool victim_retriable = false;
    for (auto& [id, w] : workers_) {
      if (w.is_actor || w.assigned.empty() || w.pid <= 0 || !w.killed_because.empty()) continue;
      auto t = tasks_.find(w.assigned.front());
      if (t == tasks_.end() || t->second.actor_creation) continue;
      Task& task = t->second;
      bool retriable = task.max_retries < 0 || static_cast<int>(task.attempt) < task.max_retries;
      if (!victim || (retriable && !victim_retriable) ||
          (retriable == victim_retriable && task.assigned_at > victim_task->assigned_at)) {
        victim = &w;
        victim_task = &task;
        victim_retriable = retriable;
      }
    }
    if (!victim) return;
    char why[160];
    std::snprintf(why, sizeof(why),
                  "was killed by node %s to free memory (%.1f%% used, threshold %.1f%%)",
                  node_id_.Hex().c_str(), used * 100, memory_threshold_ * 100);
    victim->killed_because = why;
    kill(victim->pid, SIGKILL);
    memory_cooldown_until_ = now + std::chrono::seconds(1);  // let the kernel reclaim it first
    std::string line =
        "cumulus: task " + victim_task->function + " (pid " + std::to_string(victim->pid) + ") " +
        why + (victim_retriable ? "; it will be retried" : "; it has no retries left") + "\n";
    CUMULUS_LOG(WARN) << "node: " << line.substr(0, line.size() - 1);
    // Into the job's log on this node (shipped to `cumulus logs JOB`).
    int fd = open(JobSupervisor::WorkerLogPath(options_.work_dir, victim->job).c_str(),
                  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      (void)!write(fd, line.data(), line.size());
      close(fd);
    }
  }

  // For `cumulus list tasks` (read by the node's reporter thread).
  void SnapshotTasks() {
    std::vector<TaskStateRow> rows;
    for (auto& [id, t] : tasks_) {
      if (rows.size() >= kMaxReportedRows) break;
      TaskStateRow r;
      r.task = id.Hex();
      r.job = t.job.Hex();
      r.function = t.function;
      r.attempt = t.attempt;
      switch (t.state) {
        case Task::kQueued:
          r.state = t.waiting_retry ? "RETRY_WAIT" : "QUEUED";
          break;
        case Task::kForwarded:
          r.state = "FORWARDED";
          break;
        case Task::kOnWorker: {
          r.state = "RUNNING";
          auto w = workers_.find(t.worker);
          if (w != workers_.end()) {
            r.pid = w->second.spawned_pid;
            if (w->second.assigned.empty() || w->second.assigned.front() != id) r.state = "QUEUED";
          }
          break;
        }
      }
      rows.push_back(std::move(r));
    }
    std::lock_guard<std::mutex> lock(shared_mu_);
    shared_tasks_ = std::move(rows);
    shared_tasks_total_ = tasks_.size();
  }

  void WorkerGone(const WorkerId& wid, std::string why) {
    auto it = workers_.find(wid);
    if (it == workers_.end()) return;
    Worker& w = it->second;
    if (!w.killed_because.empty()) why = w.killed_because;
    if (w.conn) {
      auto c = conns_.find(w.conn);
      if (c != conns_.end() && !c->second.closed) {
        c->second.worker = WorkerId();  // detach so Close does not come back here
        Close(c->second, "worker gone");
      }
    }
    if (options_.on_failure && why != kEndedWithJob && (w.is_actor || !w.assigned.empty())) {
      auto t = w.assigned.empty() ? tasks_.end() : tasks_.find(w.assigned.front());
      std::string running =
          t == tasks_.end() ? (w.is_actor ? "an actor" : "nothing") : t->second.function;
      options_.on_failure("worker pid " + std::to_string(w.spawned_pid) + " of job " + w.job.Hex() +
                          " running " + running + " " + why);
    }
    bool first = true;
    for (const TaskId& id : w.assigned) {
      auto t = tasks_.find(id);
      if (t == tasks_.end()) continue;
      Task& task = t->second;
      if (task.cancelled) {
        FailTask(id, Status::Cancelled("task " + task.function + " was cancelled while running"));
      } else if (task.actor_creation) {
        FailTask(id, Status::ActorDied("the worker of actor " + task.function + " died (" + why +
                                       ") on node " + node_id_.Hex()));
      } else if (!first) {
        Requeue(task, /*front=*/true);  // had not started: not an attempt
      } else if (task.max_retries < 0 || static_cast<int>(task.attempt) < task.max_retries) {
        task.attempt++;
        CUMULUS_LOG(WARN) << "node: the worker running " << task.function << " " << why
                          << "; retrying (attempt " << task.attempt + 1 << ")";
        RequeueLater(task);
      } else {
        FailTask(id, Status::Unavailable("the worker running task " + task.function + " " + why +
                                         " on node " + node_id_.Hex() + "; no retries left"));
      }
      first = false;
    }
    w.assigned.clear();
    ReleaseLease(w);
    if (w.pid > 0) zombies_.push_back(w.pid);
    workers_.erase(it);
    schedule_dirty_ = true;
  }

  void EndJob(const JobId& job, bool tell_peers) {
    if (job.IsNil()) return;
    std::vector<WorkerId> doomed;
    for (auto& [id, w] : workers_) {
      if (w.job == job && !w.detached) doomed.push_back(id);
    }
    for (auto& id : doomed) {
      Worker& w = workers_[id];
      if (w.pid > 0) kill(w.pid, SIGKILL);
      for (auto& t : w.assigned) tasks_.erase(t);  // their owner is gone
      w.assigned.clear();
      WorkerGone(id, kEndedWithJob);
    }
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      it = it->second.job == job ? tasks_.erase(it) : std::next(it);
    }
    programs_.erase(job);
    submitted_.erase(job);
    job_records_.erase(job);
    program_retry_at_.erase(job);
    for (auto it = told_.begin(); it != told_.end();) {
      it = it->second == job ? told_.erase(it) : std::next(it);
    }
    // Its objects: their owner is gone, so nobody could free or read them.
    if (options_.store) {
      size_t freed =
          options_.store->DeleteIf([&](const ObjectId& id) { return id.Task().Job() == job; });
      if (freed > 0) {
        CUMULUS_LOG(INFO) << "node: deleted " << freed << " objects of ended job " << job.Hex();
      }
    }
    for (auto it = groups_.begin(); it != groups_.end();) {
      if (it->second.job != job) {
        ++it;
        continue;
      }
      if (it->second.state == GroupOp::kReady) ForgetGroup(it->first);
      it = groups_.erase(it);  // every node releases the job's bundles itself (below, and peers)
    }
    std::set<PlacementGroupId> held;
    for (auto& [key, b] : bundles_) {
      if (b.job == job) held.insert(key.first);
    }
    for (auto& g : held) ReleaseLocal(g, kAllRounds);
    if (!tell_peers) return;
    capnp::MallocMessageBuilder message;
    message.initRoot<proto::CoreMessage>().setJobFinished(DataOf(job));
    std::string frame = EncodeFrame(message);
    for (auto& [id, v] : view_) {
      if (!v.alive) continue;
      if (uint64_t peer = PeerConn(id)) SendTo(peer, frame);
    }
  }

  void Housekeeping(TimePoint now) {
    // Reap exited workers (and notice those that died before connecting).
    for (auto it = zombies_.begin(); it != zombies_.end();) {
      it = waitpid(*it, nullptr, WNOHANG) != 0 ? zombies_.erase(it) : std::next(it);
    }
    std::vector<std::pair<WorkerId, std::string>> gone;
    for (auto& [id, w] : workers_) {
      if (w.pid <= 0) continue;
      int status = 0;
      pid_t r = waitpid(w.pid, &status, WNOHANG);
      if (r == w.pid) {
        w.pid = -1;
        gone.emplace_back(id, DescribeExit(status));
      } else if (!w.conn && now - w.started > kWorkerStartTimeout) {
        kill(w.pid, SIGKILL);
      } else if (!w.leased && !w.is_actor && w.assigned.empty() &&
                 now - w.idle_since > kIdleWorkerLifetime) {
        kill(w.pid, SIGKILL);
      }
    }
    for (auto& [id, why] : gone) WorkerGone(id, why);
    if (now >= next_task_snapshot_) {
      next_task_snapshot_ = now + std::chrono::seconds(1);
      SnapshotTasks();
    }
    if (now >= next_memory_check_) {
      next_memory_check_ = now + memory_check_every_;
      CheckMemory(now);
    }
    for (auto& [id, op] : groups_) {
      if (op.state == GroupOp::kWaiting && op.retry_at <= now) schedule_dirty_ = true;
    }
  }

  void Close(Conn& c, const std::string& why) {
    if (c.closed) return;
    c.closed = true;
    epoll_ctl(epoll_, EPOLL_CTL_DEL, c.fd, nullptr);
    shutdown(c.fd, SHUT_RDWR);
    closed_.push_back(c.id);
    if (c.role == Role::kWorker && !c.worker.IsNil()) {
      auto w = workers_.find(c.worker);
      if (w != workers_.end()) {
        w->second.conn = 0;
        int status = 0;
        std::string what = "closed its connection";
        if (w->second.pid > 0) {
          // It is usually exiting already; give it a moment, then make sure.
          pid_t r = 0;
          for (int i = 0; i < 20 && (r = waitpid(w->second.pid, &status, WNOHANG)) == 0; ++i) {
            usleep(5000);
          }
          if (r == 0) {
            kill(w->second.pid, SIGKILL);
            r = waitpid(w->second.pid, &status, 0);
          }
          if (r == w->second.pid) {
            w->second.pid = -1;
            what = DescribeExit(status);
          }
        }
        WorkerGone(c.worker, what);
      }
    } else if (c.role == Role::kDriver) {
      // Its queued tasks have nobody to answer to; its job's workers go away.
      EndJob(c.job, /*tell_peers=*/true);
      if (options_.on_job_end && !c.job.IsNil()) options_.on_job_end(c.job);
    } else if (c.role == Role::kPeer) {
      // Only the connection this node sends on carries its forwarded tasks and reservations
      // (the peer's own connection into this node may close independently).
      bool ours = peers_.count(c.peer) && peers_[c.peer] == c.id;
      if (ours) peers_.erase(c.peer);
      if (!ours) {
        CUMULUS_LOG(DEBUG) << "node: closed a second connection of node " << c.peer << ": " << why;
        return;
      }
      // Tasks forwarded there come back here to be placed again: an attempt each, as the node
      // may have died running them.
      std::vector<TaskId> lost;
      for (auto& [id, t] : tasks_) {
        if (t.state == Task::kForwarded && t.forwarded_to == c.peer) lost.push_back(id);
      }
      for (const TaskId& id : lost) {
        Task& t = tasks_.at(id);
        std::string where = "node " + c.peer.Hex() + " (" + why + ")";
        if (t.actor_creation) {
          // Placed again: an actor built there died with it (its owner's restart count is for
          // actors that died after they were built).
          Requeue(t, /*front=*/true);
        } else if (t.cancelled) {
          FailTask(id, Status::Cancelled("task " + t.function + " was cancelled"));
        } else if (t.max_retries < 0 || static_cast<int>(t.attempt) < t.max_retries) {
          t.attempt++;
          CUMULUS_LOG(WARN) << "node: lost the connection to " << where << " while it ran "
                            << t.function << "; retrying (attempt " << t.attempt + 1 << ")";
          RequeueLater(t);
        } else {
          FailTask(id, Status::Unavailable("lost the connection to " + where + " while it ran " +
                                           t.function + "; no retries left"));
        }
      }
      unreachable_until_[c.peer] = SystemClock::Get().Now() + kUnreachablePenalty;
      std::vector<PlacementGroupId> asked;
      for (auto& [id, op] : groups_) {
        if (op.state == GroupOp::kReserving && op.awaiting.count(c.peer)) asked.push_back(id);
      }
      for (auto& id : asked) {
        GroupOp& op = groups_.at(id);
        op.awaiting.erase(c.peer);
        op.refused = "node " + c.peer.Hex() + " closed its connection";
        ConcludeGroup(id);
      }
    } else if (c.role == Role::kUnknown && c.tcp) {
      CUMULUS_LOG(DEBUG) << "node: closed a core connection: " << why;
    }
    if (c.role != Role::kUnknown && why != "closed" && why != "worker gone") {
      CUMULUS_LOG(WARN) << "node: closed a core connection: " << why;
    }
  }

  void ReapClosed() {
    for (uint64_t id : closed_) {
      auto it = conns_.find(id);
      if (it == conns_.end()) continue;
      close(it->second.fd);
      conns_.erase(it);
    }
    closed_.clear();
  }

  TaskRouterOptions options_;
  NodeId node_id_;
  GpuAssignment gpus_;
  ResourceSet available_;
  int64_t cpu_debt_ = 0;  // CPU units in use beyond available_ (blocked workers that woke up)
  size_t max_task_workers_ = 4;

  int unix_fd_ = -1, tcp_fd_ = -1, epoll_ = -1;
  int wake_[2] = {-1, -1};
  uint16_t tcp_port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  // Loop-thread state.
  std::unordered_map<uint64_t, Conn> conns_;
  uint64_t next_conn_ = kFirstConnId;
  std::set<uint64_t> dirty_out_;
  std::vector<uint64_t> closed_;
  std::unordered_map<TaskId, Task> tasks_;
  std::map<std::string, std::deque<TaskId>> queues_;  // scheduling class -> FIFO
  bool schedule_dirty_ = false;
  std::unordered_map<WorkerId, Worker> workers_;
  std::vector<pid_t> zombies_;
  std::map<NodeId, NodeView> view_;
  std::map<NodeId, std::string> core_addresses_;
  std::map<NodeId, TimePoint> unreachable_until_;
  std::map<NodeId, uint64_t> peers_;
  std::set<JobId> submitted_;
  std::map<JobId, std::string> job_records_;  // serialized JobRecord of jobs known here
  std::set<std::pair<NodeId, JobId>> told_;   // peers sent a job's record already  // jobs run by
                                              // `cumulus submit` (their workers' output is logged)
  std::vector<NodeId> newly_dead_;
  std::set<NodeId> known_dead_;                  // dead nodes already announced to local processes
  std::set<NodeId> past_ids_;                    // ids this node had before it rejoined
  std::map<JobId, TimePoint> program_retry_at_;  // jobs whose program could not be fetched
  // The memory monitor (CheckMemory): CUMULUS_MEMORY_USAGE_THRESHOLD (0-1; 1 turns it off) and
  // CUMULUS_MEMORY_MONITOR_MS.
  double memory_threshold_ = 0.95;
  Duration memory_check_every_ = std::chrono::milliseconds(250);
  TimePoint next_memory_check_{}, memory_cooldown_until_{};  // from the view, not yet acted on
  std::multimap<TimePoint, TaskId> delayed_;                 // retries waiting for their backoff
  std::map<JobId, std::string> programs_;
  std::map<JobId, std::vector<std::string>> program_argv_;
  std::unique_ptr<ControlClient> head_;
  TimePoint last_refresh_{};
  TimePoint head_retry_at_{};
  std::map<std::pair<PlacementGroupId, uint32_t>, HeldBundle> bundles_;
  std::map<PlacementGroupId, GroupOp> groups_;  // groups reserved by way of this node
  // Groups reserved by way of other nodes (job, node per bundle), from the head's records.
  std::map<PlacementGroupId, std::pair<JobId, std::vector<NodeId>>> group_locations_;
  std::map<PlacementGroupId, uint32_t> released_;  // release tombstones: group -> last try
  std::deque<PlacementGroupId> released_order_;    // oldest first, to bound released_

  // Shared with the daemon's heartbeat thread.
  mutable std::mutex shared_mu_;
  std::vector<NodeRecord> shared_view_;
  bool view_dirty_ = false;
  NodeId new_node_id_;
  ResourceSet shared_available_;
  std::vector<std::pair<ResourceSet, uint32_t>> shared_pending_;
  std::vector<int64_t> startup_micros_;
  std::vector<TaskStateRow> shared_tasks_;  // guarded by shared_mu_
  size_t shared_tasks_total_ = 0;
  TimePoint next_task_snapshot_{};

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
ResourceSet TaskRouter::Available() const { return impl_->Available(); }
std::vector<std::pair<ResourceSet, uint32_t>> TaskRouter::PendingDemand() const {
  return impl_->PendingDemand();
}
std::vector<TaskStateRow> TaskRouter::Tasks(size_t limit, size_t* total) const {
  std::lock_guard<std::mutex> lock(impl_->shared_mu_);
  *total = impl_->shared_tasks_total_;
  std::vector<TaskStateRow> out(
      impl_->shared_tasks_.begin(),
      impl_->shared_tasks_.begin() + std::min(limit, impl_->shared_tasks_.size()));
  return out;
}

std::vector<int64_t> TaskRouter::WorkerStartupMicros() const {
  std::lock_guard<std::mutex> lock(impl_->shared_mu_);
  return impl_->startup_micros_;
}

}  // namespace cumulus
