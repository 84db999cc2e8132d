#include "workers/core_worker.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "cumulus/internal/registry.h"
#include "cumulus/remote.h"
#include "runtime/base/logging.h"
#include "runtime/base/serial_executor.h"
#include "runtime/core/messages.h"
#include "runtime/head/control_client.h"
#include "runtime/head/head_server.h"  // TokensEqual
#include "runtime/head/node_codec.h"
#include "runtime/object_store/store_client.h"
#include "runtime/transfer/object_transfer.h"
#include "scheduler/placement.h"
#include "workers/actor_directory.h"
#include "workers/core_channel.h"
#include "workers/execution_queue.h"
#include "workers/head_session.h"
#include "workers/object_reader.h"
#include "workers/placement_group_client.h"
#include "workers/reference_table.h"
#include "workers/task_executor.h"
#include "workers/task_spec.h"

namespace cumulus {

namespace {

using Words = kj::Array<capnp::word>;

// A bounded blocking write of a whole frame (the hello, before the event loop runs).
Status WriteAll(int fd, const std::string& frame) {
  return SendAll(fd, reinterpret_cast<const uint8_t*>(frame.data()), frame.size(),
                 std::chrono::seconds(30));
}

void SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

}  // namespace

class CoreWorkerImpl : public CoreWorker {
 public:
  explicit CoreWorkerImpl(const CoreWorkerOptions& o) : options_(o) {
    is_worker_ = !o.worker_id.IsNil();
    refs_ = ReferenceTable(o.max_lineage_depth);
    job_ = o.job;
    driver_task_ = TaskId::ForDriver(job_);
    head_ = std::make_unique<HeadSession>(o.head, o.token, is_worker_ ? "worker" : "driver");
    directory_ = std::make_unique<ActorDirectory>(*head_);
  }
  ~CoreWorkerImpl() override { Stop(); }

  Status Connect() {
    CUMULUS_ASSIGN_OR_RETURN(int node_fd, ConnectUnix(options_.node_socket));
    capnp::MallocMessageBuilder message;
    auto h = message.initRoot<proto::CoreMessage>().initHello();
    h.setPid(getpid());
    if (is_worker_) {
      auto w = h.initWorker();
      w.setWorkerId(DataOf(options_.worker_id));
      w.setJobId(DataOf(job_));
    } else {
      h.initDriver().setJobId(DataOf(job_));
    }
    Status said = WriteAll(node_fd, EncodeFrame(message));
    if (!said.ok()) {
      close(node_fd);
      return said;
    }
    FrameDecoder decoder(kMaxCoreFrameBytes);
    auto words = ReadFrame(node_fd, decoder, SystemClock::Get().Now() + std::chrono::seconds(10));
    if (!words.ok()) {
      close(node_fd);
      return words.status();
    }
    {
      capnp::FlatArrayMessageReader reader(*words);
      auto msg = reader.getRoot<proto::CoreMessage>();
      if (!msg.isHelloAck()) {
        close(node_fd);
        return Status::Internal("the node did not acknowledge the hello");
      }
      auto ack = msg.getHelloAck();
      node_id_ = IdFrom<NodeId>(ack.getNodeId());
      transfer_address_ = ack.getTransferAddress();
      store_socket_ = ack.getStoreSocket();
    }
    StoreClientOptions so;
    so.name = is_worker_ ? "worker" : "driver";
    auto store = StoreClient::Connect(store_socket_, so);
    if (!store.ok()) {
      close(node_fd);
      return store.status();
    }
    store_ = std::move(*store);
    if (is_worker_) {
      TaskExecutorOptions eo;
      eo.node = node_id_;
      eo.transfer_address = transfer_address_;
      eo.token = options_.token;
      eo.store = store_.get();
      eo.start_actor_listener = [this] { return StartActorListener(); };
      executor_ = std::make_unique<TaskExecutor>(std::move(eo));
    }
    CoreChannel::Handlers handlers;
    handlers.on_accept = [this](uint64_t conn) {
      std::lock_guard<std::mutex> lock(mu_);
      peers_[conn].caller = true;
    };
    handlers.on_frame = [this](uint64_t conn, FrameWords words) {
      OnFrame(conn, std::move(words));
    };
    handlers.on_close = [this](uint64_t conn, const std::string& why) { OnClose(conn, why); };
    // Held until node_conn_ is set: the loop may hand on frames before Start returns.
    std::lock_guard<std::mutex> lock(mu_);
    CUMULUS_ASSIGN_OR_RETURN(channel_,
                             CoreChannel::Start(node_fd, std::move(decoder), std::move(handlers)));
    node_conn_ = channel_->node_conn();
    return Status();
  }

  // ---- Runtime: submission ------------------------------------------------------------------

  ObjectId SubmitTask(const std::string& function, std::vector<internal::ArgData> args,
                      const internal::CallOptions& options) override {
    TaskId task = TaskId::ForNormalTask(job_);
    ObjectId ret = ObjectId::FromTaskReturn(task, 1);
    std::unique_lock<std::mutex> lock(mu_);
    NewObject(ret);
    auto pending = NewPending(task, ret, function, std::move(args), options);
    // Like Ray: a task takes one CPU unless it says otherwise, whatever else it asks for.
    pending->options.resources.emplace("CPU", 1.0);
    pending->max_retries = options.max_retries.value_or(3);
    Enqueue(std::move(pending));
    return ret;
  }

  ActorId CreateActor(const std::string& factory, const std::string& class_name,
                      std::vector<internal::ArgData> args,
                      const internal::CallOptions& options) override {
    ActorId actor = ActorId::Of(job_);
    std::unique_lock<std::mutex> lock(mu_);
    ActorEntry& a = actors_[actor];
    a.id = actor;
    a.class_name = class_name;
    a.factory = factory;
    a.owned = true;
    a.name = options.name;
    a.max_restarts = options.max_restarts;
    a.detached = options.detached;
    if (a.detached && !options.placement_group.IsNil()) {
      MarkActorDead(a, Status::InvalidArgument(
                           "actor " + factory +
                           " is detached and in a placement group: a group ends with its job"));
      return actor;
    }
    if (a.detached && options.name.empty()) {
      MarkActorDead(a, Status::InvalidArgument(
                           "actor " + factory +
                           " is detached but has no name: give it SetName(...) so that other "
                           "programs can find it once this one is gone"));
      return actor;
    }
    if (a.max_restarts != 0) {
      // Kept to build it again; its object arguments stay alive as long as it may restart.
      a.creation_args = args;
      a.creation_options = options;
      for (auto& arg : args) {
        if (arg.is_ref && refs_.Hold(arg.ref)) a.pinned.push_back(arg.ref);
      }
    }
    if (!options.name.empty()) {
      lock.unlock();
      Status reserved = directory_->Reserve(options.name, actor, class_name);
      lock.lock();
      if (!reserved.ok()) {
        MarkActorDead(actors_[actor], reserved);
        return actor;
      }
    }
    SubmitConstructor(actors_[actor], std::move(args), options);
    return actor;
  }

  ObjectId SubmitActorTask(const ActorId& actor, const std::string& method,
                           std::vector<internal::ArgData> args,
                           const internal::CallOptions& options) override {
    TaskId task = TaskId::ForActorTask(actor);
    ObjectId ret = ObjectId::FromTaskReturn(task, 1);
    std::unique_lock<std::mutex> lock(mu_);
    NewObject(ret);
    auto it = actors_.find(actor);
    if (it == actors_.end()) {
      FailObject(ret, Status::NotFound("actor " + actor.Hex() + " is unknown to this process"));
      return ret;
    }
    auto pending = NewPending(task, ret, method, std::move(args), options);
    pending->actor = actor;
    pending->actor_call = true;
    pending->max_retries = options.max_retries.value_or(0);
    pending->seq = next_seq_++;
    it->second.queue.push_back(task);
    Enqueue(std::move(pending));
    return ret;
  }

  // ---- Runtime: objects --------------------------------------------------------------------

  Result<internal::Payload> Get(const ObjectId& id, int64_t timeout_ms) override {
    TimePoint deadline = timeout_ms < 0
                             ? TimePoint::max()
                             : SystemClock::Get().Now() + std::chrono::milliseconds(timeout_ms);
    std::unique_lock<std::mutex> lock(mu_);
    // A stored copy that cannot be read is rebuilt (lineage) and read again, a bounded number of
    // times (Rebuild fails the object once it may not be rebuilt any more).
    for (int round = 0;; ++round) {
      NodeId tried;
      auto got = GetOnce(id, timeout_ms, deadline, lock, &tried);
      if (got.ok() || round > ReferenceTable::kMaxRebuilds || !IsLoss(got.status())) return got;
      const ObjectEntry* e = refs_.Find(id);
      if (!e || e->state != ObjectEntry::kReady || !e->stored) return got;
      Rebuild(id, tried, got.status().message());
    }
  }

  // A read of a stored object failed because its copy is gone (or its node cannot be reached).
  static bool IsLoss(const Status& st) { return st.code() == StatusCode::kObjectLost; }

  // One try of Get. REQUIRES: `lock` holds mu_ (it is held again on return).
  Result<internal::Payload> GetOnce(const ObjectId& id, int64_t timeout_ms, TimePoint deadline,
                                    std::unique_lock<std::mutex>& lock, NodeId* tried) {
    ObjectEntry* found = refs_.Find(id);
    if (!found) {
      return Status::NotFound("object " + id.Hex() +
                              " is not owned by this process (or was freed)");
    }
    if (found->state == ObjectEntry::kPending) {
      BlockedGuard blocked(this, lock);
      bool done = WaitUntil(lock, deadline, [&] {
        const ObjectEntry* e = refs_.Find(id);
        return !e || e->state != ObjectEntry::kPending;
      });
      if (!done) {
        return Status::TimedOut("Get of object " + id.Hex() + " (result of " +
                                DescribeProducer(id) + ") timed out after " +
                                std::to_string(timeout_ms) + " ms");
      }
      found = refs_.Find(id);
      if (!found) return Status::NotFound("object " + id.Hex() + " was freed");
    }
    ObjectEntry& e = *found;
    if (e.state == ObjectEntry::kFailed) return e.error;
    if (e.inline_value) {
      auto keep = e.inline_value;
      return internal::Payload{std::string_view(*keep), keep};
    }
    // In a store: this node's, or another node's (pull it here first).
    NodeId where = e.node;
    *tried = where;
    std::string from = e.transfer;
    bool pulled = where != node_id_;
    if (pulled) e.local_copy = true;
    lock.unlock();
    auto buffer = ReadObject(*store_, options_.token, node_id_, id, pulled, from);
    lock.lock();
    if (!buffer.ok()) return buffer.status();
    auto holder = std::make_shared<ObjectBuffer>(std::move(*buffer));
    std::string_view view(reinterpret_cast<const char*>(holder->data()), holder->size());
    return internal::Payload{view, holder};
  }

  Result<ObjectId> Put(std::string bytes) override {
    std::unique_lock<std::mutex> lock(mu_);
    ObjectId id = ObjectId::FromPut(CurrentTaskLocked(), ++put_index_);
    ObjectEntry& e = refs_.Add(id);
    if (bytes.size() <= kMaxInlineResultBytes) {
      e.state = ObjectEntry::kReady;
      e.inline_value = std::make_shared<std::string>(std::move(bytes));
      return id;
    }
    lock.unlock();
    Status st = store_->Put(id, bytes.data(), bytes.size());
    lock.lock();
    ObjectEntry* stored = refs_.Find(id);
    if (!st.ok()) {
      if (stored) {  // never seen by anyone: gone again
        stored->refs = 0;
        stored->state = ObjectEntry::kFailed;
        refs_.FreeIfUnused(id);
      }
      return st;
    }
    if (stored) SetStoredHere(*stored, bytes.size());
    return id;
  }

  Result<ObjectId> PutWith(uint64_t size, const std::function<void(uint8_t*)>& fill) override {
    std::unique_lock<std::mutex> lock(mu_);
    ObjectId id = ObjectId::FromPut(CurrentTaskLocked(), ++put_index_);
    lock.unlock();
    CUMULUS_ASSIGN_OR_RETURN(MutableBuffer buffer, store_->Create(id, size));
    fill(buffer.data);
    CUMULUS_RETURN_IF_ERROR(store_->Seal(id));
    lock.lock();
    SetStoredHere(refs_.Add(id), size);
    return id;
  }

  std::vector<bool> Wait(const std::vector<ObjectId>& ids, size_t num_ready,
                         int64_t timeout_ms) override {
    TimePoint deadline = timeout_ms < 0
                             ? TimePoint::max()
                             : SystemClock::Get().Now() + std::chrono::milliseconds(timeout_ms);
    std::vector<bool> ready(ids.size(), false);
    num_ready = std::min(num_ready, ids.size());
    std::unique_lock<std::mutex> lock(mu_);
    auto count = [&] {
      size_t n = 0;
      for (size_t i = 0; i < ids.size(); ++i) {
        const ObjectEntry* e = refs_.Find(ids[i]);
        ready[i] = !e || e->state != ObjectEntry::kPending;
        n += ready[i] ? 1 : 0;
      }
      return n;
    };
    if (count() < num_ready) {
      BlockedGuard blocked(this, lock);
      WaitUntil(lock, deadline, [&] { return count() >= num_ready; });
    }
    count();
    return ready;
  }

  void AddRef(const ObjectId& id) override {
    std::lock_guard<std::mutex> lock(mu_);
    refs_.AddRef(id);
  }

  void RemoveRef(const ObjectId& id) override {
    std::lock_guard<std::mutex> lock(mu_);
    refs_.RemoveRef(id);
    FlushFrees();
  }

  Status Cancel(const ObjectId& id) override {
    std::unique_lock<std::mutex> lock(mu_);
    TaskId task = id.Task();
    auto it = tasks_.find(task);
    if (it == tasks_.end()) return Status();  // finished already (or never ours)
    PendingTask& t = *it->second;
    if (t.actor_call)
      return Status::InvalidArgument("actor calls cannot be cancelled; kill the actor");
    if (!t.sent) {
      Status st = Status::Cancelled("task " + t.function + " was cancelled before it ran");
      FinishTask(task, &st, nullptr);
      return Status();
    }
    capnp::MallocMessageBuilder message;
    message.initRoot<proto::CoreMessage>().setCancelTask(DataOf(task));
    return SendToNode(EncodeFrame(message));
  }

  // ---- Runtime: actors ---------------------------------------------------------------------

  Status KillActor(const ActorId& actor) override {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = actors_.find(actor);
    if (it == actors_.end()) return Status::NotFound("actor " + actor.Hex() + " is unknown here");
    ActorEntry& a = it->second;
    bool was_dead = a.state == ActorEntry::kDead;
    if (was_dead) {
      // Its name may still be held (a detached actor whose creator went before it was built).
    } else if (a.conn) {
      SendOn(a.conn, KillFrame(actor));
    } else {
      a.kill_when_created = true;  // being built, or being connected to
    }
    if (!was_dead) {
      MarkActorDead(a, Status::ActorDied("actor " + a.factory + " (" + actor.Hex() +
                                         ") was killed by its handle"));
    }
    std::string name = a.name;
    lock.unlock();
    if (!name.empty()) directory_->Release(name, actor);  // free again, if it still names it
    return Status();
  }

  Result<std::pair<ActorId, std::string>> GetActor(const std::string& name) override {
    CUMULUS_ASSIGN_OR_RETURN(ActorNameRecord rec, directory_->Lookup(name));
    CUMULUS_ASSIGN_OR_RETURN(ActorId id, ActorId::FromHex(rec.actor_id));
    std::unique_lock<std::mutex> lock(mu_);
    ActorEntry& a = actors_[id];
    if (a.id.IsNil()) {
      a.id = id;
      a.class_name = rec.class_name;
      a.factory = name;
      a.name = name;
      a.owned = false;
      if (rec.address.empty()) {
        // Registered but not created yet: wait for its owner to publish the address.
        lock.unlock();
        auto full = directory_->WaitForAddress(name, std::chrono::seconds(30));
        lock.lock();
        if (!full.ok()) {
          MarkActorDead(a, Status::Unavailable("actor '" + name +
                                               "' did not start: " + full.status().message()));
          return std::make_pair(id, rec.class_name);
        }
        rec.address = *full;
      }
      Status st = ConnectActorLocked(a, rec.address);
      if (!st.ok()) MarkActorDead(a, Status::ActorDied("actor '" + name + "': " + st.message()));
    }
    return std::make_pair(id, rec.class_name);
  }

  Result<std::pair<PlacementGroupId, std::vector<NodeId>>> CreatePlacementGroup(
      const std::vector<std::map<std::string, double>>& bundles, PlacementGroupStrategy strategy,
      int64_t timeout_ms) override {
    return groups_.Create(bundles, strategy, timeout_ms);
  }
  Status RemovePlacementGroup(const PlacementGroupId& id) override { return groups_.Remove(id); }

  NodeId node_id() const override { return node_id_; }
  bool was_restarted() const override { return executor_ && executor_->was_restarted(); }
  ActorId current_actor() const override { return executor_ ? executor_->actor_id() : ActorId(); }
  Status KvPut(const std::string& ns, const std::string& key, const std::string& value) override {
    auto put = head_->Call([&](ControlClient& head) { return head.KvPut(ns, key, value); });
    return put.ok() ? Status() : put.status();
  }
  Result<std::string> KvWait(const std::string& ns, const std::string& key,
                             int64_t timeout_ms) override {
    return head_->Call([&](ControlClient& head) {
      return head.KvWait(ns, key, std::chrono::milliseconds(timeout_ms));
    });
  }
  std::pair<std::string, std::string> cluster_credentials() const override {
    return {options_.head.ToString(), options_.token};
  }
  std::string bind_host() const override { return options_.bind_host; }
  JobId job_id() const override { return options_.job; }

  Status AnnounceJob(const std::string& record) override {
    capnp::MallocMessageBuilder message;
    auto j = message.initRoot<proto::CoreMessage>().initJobInfo();
    j.setJobId(DataOf(job_));
    j.setRecord(
        capnp::Data::Reader(reinterpret_cast<const uint8_t*>(record.data()), record.size()));
    return SendToNode(EncodeFrame(message));
  }
  std::string transfer_address() const override { return transfer_address_; }

  Status PutRaw(const ObjectId& id, const std::string& bytes) override {
    CUMULUS_RETURN_IF_ERROR(store_->Put(id, bytes.data(), bytes.size()));
    std::lock_guard<std::mutex> lock(mu_);
    SetStoredHere(refs_.Add(id), bytes.size());
    return Status();
  }

  // ---- worker side -------------------------------------------------------------------------

  void RunWorkerLoop() override {
    execution_.Run([this](ExecutionQueue::Item& item) { Execute(item); });
  }

  void Stop() override {
    std::unique_lock<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    head_->StopWaiting();
    groups_.NodeLost();
    // Objects this process owns are freed where they live.
    refs_.FreeAll();
    FlushFrees();
    // Owned actors end with their owner; named ones leave the registry.
    std::vector<std::string> names_to_release;
    for (auto& [id, a] : actors_) {
      if (!a.owned || a.detached) continue;
      bool alive = a.conn && a.state == ActorEntry::kAlive;
      MarkActorDead(a, Status::ActorDied("actor " + a.factory + " ended with its owner"));
      if (alive) SendOn(a.conn, KillFrame(id));
      if (!a.name.empty()) names_to_release.push_back(a.name);
    }
    cv_.notify_all();
    lock.unlock();
    // One try each: shutting down does not wait for the head, nor connect to it.
    for (const std::string& name : names_to_release) directory_->ReleaseNow(name);
    blocking_calls_.reset();         // runs what was posted (name publications) first
    if (channel_) channel_->Stop();  // after writing what was sent (frees, kills)
  }

 private:
  static constexpr Duration kActorConnectTimeout = std::chrono::seconds(5);
  static constexpr uint32_t kMaxHelloBytes = 64 << 10;  // a caller's frames until its hello

  struct PendingTask {
    TaskId id;
    ObjectId ret;
    std::string function;
    std::vector<internal::ArgData> args;
    internal::CallOptions options;
    int max_retries = 0;
    int attempt = 0;
    uint64_t seq = 0;  // actor calls: submission order
    bool actor_creation = false;
    bool actor_call = false;
    ActorId actor;
    int unresolved = 0;
    bool sent = false;
    std::vector<ObjectId> held;  // argument objects this task keeps alive
  };

  struct ActorEntry {
    ActorId id;
    std::string class_name;
    std::string factory;
    std::string name;
    bool owned = false;
    enum State { kPending, kAlive, kDead } state = kPending;
    Status death;
    uint64_t conn = 0;
    TaskId creation_task;
    std::deque<TaskId> queue;  // calls not sent yet, in order
    std::set<TaskId> in_flight;
    bool kill_when_created = false;
    bool detached = false;  // outlives this process: not killed or unnamed at Stop
    NodeId node;            // where it runs (actors this process created)
    // Restarts (owner only): how to build it again, and how often it may be.
    int max_restarts = 0;  // -1: forever
    int restarts = 0;
    std::vector<internal::ArgData> creation_args;
    internal::CallOptions creation_options;
    std::vector<ObjectId> pinned;  // object arguments of its constructor
  };

  // What a connection of the loop is, beyond the node's.
  struct Peer {
    ActorId actor;        // caller side: the actor at the other end
    bool caller = false;  // worker side: an actor caller (authenticates with its hello)
  };

  // While the current task waits in Get or Wait, tasks queued behind it on this worker could be
  // the ones it waits for: hand them back to the node, and say so.
  class BlockedGuard {
   public:
    BlockedGuard(CoreWorkerImpl* w, std::unique_lock<std::mutex>& lock) : w_(w) {
      if (!w_->is_worker_ || !w_->executing_) return;
      active_ = true;
      w_->NotifyBlocked(true);
    }
    ~BlockedGuard() {
      if (active_) w_->NotifyBlocked(false);
    }

   private:
    CoreWorkerImpl* w_;
    bool active_ = false;
  };

  template <typename Pred>
  bool WaitUntil(std::unique_lock<std::mutex>& lock, TimePoint deadline, Pred pred) {
    while (!pred()) {
      if (stopped_) return pred();
      if (deadline == TimePoint::max()) {
        cv_.wait(lock);
      } else if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
        return pred();
      }
    }
    return true;
  }

  TaskId CurrentTaskLocked() const { return current_task_.IsNil() ? driver_task_ : current_task_; }

  // `e` is sealed in this node's store. REQUIRES: mu_.
  void SetStoredHere(ObjectEntry& e, uint64_t size) {
    ReferenceTable::SetStored(e, node_id_, transfer_address_, size);
  }

  void NewObject(const ObjectId& id) { refs_.Add(id); }

  std::string DescribeProducer(const ObjectId& id) {
    auto t = tasks_.find(id.Task());
    return t == tasks_.end() ? "a finished task" : "task " + t->second->function;
  }

  static std::unique_ptr<PendingTask> NewPending(const TaskId& id, const ObjectId& ret,
                                                 std::string function,
                                                 std::vector<internal::ArgData> args,
                                                 internal::CallOptions options) {
    auto p = std::make_unique<PendingTask>();
    p->id = id;
    p->ret = ret;
    p->function = std::move(function);
    p->args = std::move(args);
    p->options = std::move(options);
    return p;
  }

  // Resolves the arguments of a new task, or parks it until they are ready. REQUIRES: mu_.
  void Enqueue(std::unique_ptr<PendingTask> task) {
    PendingTask& t = *task;
    TaskId id = t.id;
    tasks_[id] = std::move(task);
    if (stopped_) {
      Status st = Status::Unavailable("cumulus was shut down");
      FinishTask(id, &st, nullptr);
      return;
    }
    for (auto& arg : t.args) {
      if (!arg.is_ref) continue;
      ObjectEntry* held = refs_.Find(arg.ref);
      if (!held) {
        Status st =
            Status::InvalidArgument("an argument of " + t.function + " is object " + arg.ref.Hex() +
                                    ", which this process does not own (or freed)");
        FinishTask(id, &st, nullptr);
        return;
      }
      held->task_refs++;
      t.held.push_back(arg.ref);
      if (held->state == ObjectEntry::kPending) {
        t.unresolved++;
        held->waiting.push_back(id);
      }
    }
    if (t.unresolved == 0) Dispatch(t);
  }

  // All arguments are ready: send (normal tasks, actor creation) or queue on the actor.
  void Dispatch(PendingTask& t) {
    // An argument that failed fails the task, naming it.
    for (size_t i = 0; i < t.args.size(); ++i) {
      if (!t.args[i].is_ref) continue;
      const ObjectEntry& e = *refs_.Find(t.args[i].ref);  // held by the task
      if (e.state == ObjectEntry::kFailed) {
        Status st(e.error.code(), "argument " + std::to_string(i) + " of " + t.function +
                                      " failed: " + e.error.message());
        FinishTask(t.id, &st, nullptr);
        return;
      }
    }
    if (t.actor_call) {
      PumpActor(actors_[t.actor]);
      return;
    }
    std::string frame;
    Status st = BuildSpec(t, &frame);
    if (st.ok()) st = SendToNode(std::move(frame));
    if (!st.ok()) {
      FinishTask(t.id, &st, nullptr);
      return;
    }
    t.sent = true;
  }

  void PumpActor(ActorEntry& a) {
    if (a.state == ActorEntry::kDead) {
      while (!a.queue.empty()) {
        TaskId id = a.queue.front();
        a.queue.pop_front();
        Status st = a.death;
        FinishTask(id, &st, nullptr);
      }
      return;
    }
    if (a.state != ActorEntry::kAlive || a.conn == 0) return;  // being built or connected to
    while (!a.queue.empty()) {
      auto it = tasks_.find(a.queue.front());
      if (it == tasks_.end()) {
        a.queue.pop_front();
        continue;
      }
      PendingTask& t = *it->second;
      if (t.unresolved > 0) return;  // keep the order: later calls wait for this one
      std::string frame;
      Status st = BuildSpec(t, &frame);
      if (!st.ok()) {
        a.queue.pop_front();
        FinishTask(t.id, &st, nullptr);
        continue;
      }
      // A call written into a connection that breaks is in flight: it is sent again to a
      // restarted actor if it has retries left (ActorLost).
      SendOn(a.conn, std::move(frame));
      a.queue.pop_front();
      t.sent = true;
      a.in_flight.insert(t.id);
    }
  }

  Status BuildSpec(PendingTask& t, std::string* frame) {
    TaskSpecInput in;
    in.id = t.id;
    in.job = job_;
    in.function = t.function;
    in.max_retries = t.max_retries;
    in.attempt = t.attempt;
    in.actor_creation = t.actor_creation;
    in.actor_call = t.actor_call;
    in.actor = t.actor;
    in.args = &t.args;
    in.options = &t.options;
    auto built = BuildTaskSpec(in, [this](const ObjectId& id) {
      const ObjectEntry& e = *refs_.Find(id);  // held by the task
      return ArgumentLocation{e.inline_value, e.node, e.transfer, e.size};
    });
    if (!built.ok()) return built.status();
    *frame = std::move(*built);
    return Status();
  }

  // Ends a task: its return object becomes ready (result) or failed (error). REQUIRES: mu_.
  void FinishTask(const TaskId& id, const Status* error, proto::TaskResult::Reader* result) {
    auto it = tasks_.find(id);
    if (it == tasks_.end()) return;
    std::unique_ptr<PendingTask> t = std::move(it->second);
    tasks_.erase(it);
    if (t->actor_call) {
      auto a = actors_.find(t->actor);
      if (a != actors_.end()) a->second.in_flight.erase(id);
    }
    if (t->actor_creation) {
      ActorEntry& a = actors_[t->actor];
      if (a.creation_task != id) {
        // An older attempt's answer: the actor has moved on.
      } else if (error && error->code() == StatusCode::kActorDied && a.state != ActorEntry::kDead &&
                 CanRestart(a)) {
        // Its worker died before the constructor finished: build it again. (Not other errors:
        // a constructor that throws, or a node that cannot start workers, would only fail again.)
        ActorLost(a, error->message());
      } else if (error) {
        MarkActorDead(a, Status::ActorDied("actor " + t->function + " (" + t->actor.Hex() +
                                           ") could not be created: " + error->ToString()));
      } else {
        std::string address = result->getActorAddress();
        a.node = IdFrom<NodeId>(result->getNodeId());
        // Killed by its handle while it was being built: connected to only to be killed.
        bool killed = a.state == ActorEntry::kDead;
        Status st = ConnectActorLocked(a, address);
        if (!st.ok() && !killed) {
          // It died between answering and our connecting: a restart if it may have one.
          ActorLost(a, "cannot connect to it at " + address + ": " + st.message());
        } else if (st.ok() && !killed && !a.name.empty() && blocking_calls_) {
          // Published off the loop's thread and without mu_: a head call may wait.
          ActorNameRecord record{a.id.Hex(), a.class_name, address};
          blocking_calls_->Post(
              [this, name = a.name, record] { directory_->Publish(name, record); });
        }
      }
    }
    if (ObjectEntry* found = refs_.Find(t->ret)) {
      ObjectEntry& e = *found;
      if (error) {
        e.state = ObjectEntry::kFailed;
        e.error = *error;
      } else {
        e.state = ObjectEntry::kReady;
        auto returns = result->getReturns();
        if (returns.size() != 1) {
          e.state = ObjectEntry::kFailed;
          e.error = Status::Internal("task " + t->function + " returned " +
                                     std::to_string(returns.size()) + " values, expected 1");
        } else if (returns[0].isInline()) {
          auto d = returns[0].getInline();
          e.inline_value =
              std::make_shared<std::string>(reinterpret_cast<const char*>(d.begin()), d.size());
        } else {
          auto loc = returns[0].getStored();
          ReferenceTable::SetStored(e, IdFrom<NodeId>(loc.getNodeId()), loc.getTransferAddress(),
                                    loc.getSize());
          if (t->actor_call || t->actor_creation) {
            e.no_lineage = "it is the result of actor call " + t->function +
                           ", and actor calls are not run again to rebuild their results";
          } else {
            // Its hold on its arguments passes to the lineage.
            refs_.RecordLineage(e, t->function, std::move(t->args), t->options, t->max_retries,
                                std::move(t->held));
            t->held.clear();
          }
        }
      }
      ResolveWaiters(t->ret, e);  // may add or erase objects
      refs_.FreeIfUnused(t->ret);
    }
    refs_.Release(t->held);
    FlushFrees();
    cv_.notify_all();
  }

  // The copy of `id` on `failed_node` cannot be read (`why`): run the task that made it again, or
  // fail the object with ObjectLost saying why it cannot be. True if it is being rebuilt, or was
  // already (its copy is elsewhere now). REQUIRES: mu_.
  bool Rebuild(const ObjectId& id, const NodeId& failed_node, const std::string& why) {
    auto plan = refs_.PlanRebuild(
        id, failed_node, why,
        stopped_ || node_conn_ == 0 ? "this process is no longer connected to its node" : "");
    switch (plan.kind) {
      case ReferenceTable::RebuildPlan::kNotStored:
        return false;
      case ReferenceTable::RebuildPlan::kUnderway:
        return true;
      case ReferenceTable::RebuildPlan::kLost:
        FlushFrees();
        cv_.notify_all();
        return false;
      case ReferenceTable::RebuildPlan::kRebuild:
        break;
    }
    std::unique_ptr<Lineage> l = std::move(plan.lineage);
    CUMULUS_LOG(WARN) << "cumulus: object " << id.Hex() << " (result of " << l->function
                      << ") was lost (" << why << "); rebuilding it by running " << l->function
                      << " again (rebuild " << plan.attempt << " of "
                      << ReferenceTable::kMaxRebuilds << ")";
    auto pending = NewPending(id.Task(), id, l->function, l->args, l->options);
    pending->max_retries = l->max_retries;
    Enqueue(std::move(pending));  // holds the arguments again before the lineage lets them go
    refs_.Release(l->pinned);
    return true;
  }

  // Task `task` could not read its argument `lost` on `node`: if that is being rebuilt, the task
  // waits for it and is sent again (not an attempt of its own); if it was rebuilt already, the
  // task is sent again at once. REQUIRES: mu_.
  bool WaitForRebuiltArgument(const TaskId& task, const ObjectId& lost, const NodeId& node,
                              const std::string& why) {
    auto t = tasks_.find(task);
    if (t == tasks_.end() || t->second->actor_call) return false;
    PendingTask& p = *t->second;
    if (std::find(p.held.begin(), p.held.end(), lost) == p.held.end()) return false;
    if (!Rebuild(lost, node, why)) return false;
    ObjectEntry* e = refs_.Find(lost);
    if (!e) return false;
    p.sent = false;
    if (e->state == ObjectEntry::kPending) {
      p.unresolved++;
      e->waiting.push_back(task);
    } else if (e->state == ObjectEntry::kReady) {
      Dispatch(p);
    } else {
      return false;
    }
    return true;
  }

  void FailObject(const ObjectId& id, const Status& st) {
    ObjectEntry* e = refs_.Find(id);
    if (!e) return;
    e->state = ObjectEntry::kFailed;
    e->error = st;
    ResolveWaiters(id, *e);
    cv_.notify_all();
  }

  void ResolveWaiters(const ObjectId& id, ObjectEntry& e) {
    auto waiting = std::move(e.waiting);
    e.waiting.clear();
    for (const TaskId& tid : waiting) {
      auto t = tasks_.find(tid);
      if (t == tasks_.end()) continue;
      if (--t->second->unresolved == 0) Dispatch(*t->second);
    }
  }

  // Sends the node the objects freed since the last call; deletes the copies pulled here (off
  // this thread: a store call may wait). REQUIRES: mu_.
  void FlushFrees() {
    ReferenceTable::Frees frees = refs_.TakeFrees();
    if (!frees.remote.empty()) {
      capnp::MallocMessageBuilder message;
      auto list = message.initRoot<proto::CoreMessage>().initFreeObjects(
          static_cast<unsigned>(frees.remote.size()));
      for (unsigned i = 0; i < frees.remote.size(); ++i) {
        list.set(i, capnp::Data::Reader(reinterpret_cast<const uint8_t*>(frees.remote[i].data()),
                                        frees.remote[i].size()));
      }
      (void)SendToNode(EncodeFrame(message));
    }
    if (!frees.local_copies.empty() && blocking_calls_) {
      blocking_calls_->Post([this, copies = std::move(frees.local_copies)] {
        for (auto& id : copies) (void)store_->Delete(id);
      });
    }
  }

  // Sends the task that builds actor `a` (first time or again). REQUIRES: mu_.
  void SubmitConstructor(ActorEntry& a, std::vector<internal::ArgData> args,
                         const internal::CallOptions& options) {
    TaskId task = TaskId::ForActorTask(a.id);
    ObjectId ret = ObjectId::FromTaskReturn(task, 1);
    refs_.Add(ret).refs = 0;  // nobody holds the creation result: freed once it arrives
    auto pending = NewPending(task, ret, a.factory, std::move(args), options);
    pending->actor_creation = true;
    pending->actor = a.id;
    pending->attempt = a.restarts;  // the worker tells WasRestarted() from it
    a.creation_task = task;
    Enqueue(std::move(pending));
  }

  bool CanRestart(const ActorEntry& a) const {
    return a.owned && (a.max_restarts < 0 || a.restarts < a.max_restarts);
  }

  // The actor's process is gone (it was not killed by a handle): build it again if it may be
  // restarted, else it is dead. Calls it was running are sent again to the new one if they have
  // retries left (SetMaxRetries on the call), else fail. REQUIRES: mu_.
  void ActorLost(ActorEntry& a, const std::string& why) {
    if (a.state == ActorEntry::kDead) return;
    std::string name = "actor " + a.factory + " (" + a.id.Hex() + ")";
    if (stopped_ || node_conn_ == 0) {
      MarkActorDead(a, Status::ActorDied(name + " died (" + why + ") and cannot be restarted: " +
                                         (stopped_ ? "cumulus is shutting down"
                                                   : "the connection to the node was lost")));
      return;
    }
    if (!CanRestart(a)) {
      std::string limit = a.max_restarts == 0 ? std::string("it may not restart (max_restarts 0)")
                                              : "no restarts left (max_restarts " +
                                                    std::to_string(a.max_restarts) + ")";
      MarkActorDead(a, Status::ActorDied(name + " died: " + why + "; " + limit));
      return;
    }
    a.restarts++;
    a.state = ActorEntry::kPending;
    a.conn = 0;
    std::string restarting =
        name + " died (" + why + "); restarting it (restart " + std::to_string(a.restarts) +
        (a.max_restarts < 0 ? std::string() : " of " + std::to_string(a.max_restarts)) + ")";
    CUMULUS_LOG(WARN) << "cumulus: " << restarting;
    // Calls it was running: again, in their order, ahead of those not sent yet; or they fail.
    std::vector<PendingTask*> running;
    for (const TaskId& id : a.in_flight) {
      auto t = tasks_.find(id);
      if (t != tasks_.end()) running.push_back(t->second.get());
    }
    a.in_flight.clear();
    std::sort(running.begin(), running.end(),
              [](PendingTask* x, PendingTask* y) { return x->seq > y->seq; });
    for (PendingTask* t : running) {
      if (t->max_retries < 0 || t->attempt < t->max_retries) {
        t->attempt++;
        t->sent = false;
        a.queue.push_front(t->id);
      } else {
        Status st = Status::ActorDied(restarting + " while it ran " + t->function +
                                      ", which has no retries left");
        FinishTask(t->id, &st, nullptr);
      }
    }
    // The constructor again, with the arguments it had.
    SubmitConstructor(a, a.creation_args, a.creation_options);
  }

  void MarkActorDead(ActorEntry& a, const Status& why) {
    if (a.state == ActorEntry::kDead) return;
    a.state = ActorEntry::kDead;
    a.death = why;
    refs_.Release(a.pinned);
    a.pinned.clear();
    std::vector<TaskId> in_flight(a.in_flight.begin(), a.in_flight.end());
    a.in_flight.clear();
    for (auto& id : in_flight) {
      Status st = why;
      FinishTask(id, &st, nullptr);
    }
    PumpActor(a);
    cv_.notify_all();
  }

  // Starts connecting to actor `a` at `address`; its calls are sent once the loop has the
  // connection (an actor killed meanwhile is sent the kill instead). Never waits for the connect.
  // REQUIRES: mu_.
  Status ConnectActorLocked(ActorEntry& a, const std::string& address) {
    CUMULUS_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
    CUMULUS_ASSIGN_OR_RETURN(int fd, StartConnectTcp(hp));
    if (a.state != ActorEntry::kDead) a.state = ActorEntry::kAlive;
    a.conn = 0;
    capnp::MallocMessageBuilder message;
    auto h = message.initRoot<proto::CoreMessage>().initHello();
    h.initCaller().setToken(options_.token);
    h.setPid(getpid());
    channel_->Connect(fd, EncodeFrame(message), kActorConnectTimeout,
                      [this, actor = a.id, incarnation = a.restarts](uint64_t conn) {
                        std::lock_guard<std::mutex> lock(mu_);
                        return Adopt(conn, actor, incarnation);
                      });
    return Status();
  }

  // The connection to `actor`, made for its life number `incarnation`, is open: its calls go
  // out, unless it died or restarted meanwhile. REQUIRES: mu_.
  CoreChannel::Adopted Adopt(uint64_t conn, const ActorId& actor, int incarnation) {
    peers_[conn].actor = actor;
    auto it = actors_.find(actor);
    bool current =
        it != actors_.end() && it->second.restarts == incarnation && it->second.conn == 0;
    if (current && it->second.state == ActorEntry::kAlive) {
      it->second.conn = conn;
      PumpActor(it->second);
      return {};
    }
    bool kill = current && it->second.state == ActorEntry::kDead && it->second.kill_when_created;
    return {false, kill ? KillFrame(actor) : std::string()};
  }

  // ---- connections -------------------------------------------------------------------------

  static std::string KillFrame(const ActorId& actor) {
    capnp::MallocMessageBuilder message;
    message.initRoot<proto::CoreMessage>().setKillActor(DataOf(actor));
    return EncodeFrame(message);
  }

  Status SendToNode(std::string frame) {
    if (node_conn_ == 0) {
      return Status::Unavailable("the node cannot be reached: its connection is closed");
    }
    SendOn(node_conn_, std::move(frame));
    return Status();
  }

  void SendOn(uint64_t conn, std::string frame) { channel_->Send(conn, std::move(frame)); }

  // One frame from a connection (the loop's thread).
  void OnFrame(uint64_t conn, FrameWords words) {
    bool keep = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      try {
        capnp::ReaderOptions ro;
        ro.traversalLimitInWords = kMaxCoreFrameBytes / 8;
        capnp::FlatArrayMessageReader reader(words, ro);
        keep = HandleMessage(conn, reader.getRoot<proto::CoreMessage>(), words);
      } catch (const kj::Exception& e) {
        CUMULUS_LOG(WARN) << "cumulus: a peer sent a malformed message: "
                          << e.getDescription().cStr();
      }
    }
    if (!keep) channel_->Close(conn, "it sent a message it may not send");
  }

  // REQUIRES: mu_. False: close the connection.
  bool HandleMessage(uint64_t tag, proto::CoreMessage::Reader msg, Words& words) {
    Peer& c = peers_[tag];
    if (c.caller && !channel_->IsAuthenticated(tag)) {
      if (!msg.isHello() || !msg.getHello().isCaller()) return false;
      if (!TokensEqual(msg.getHello().getCaller().getToken(), options_.token)) return false;
      channel_->Authenticated(tag, kMaxCoreFrameBytes);
      return true;
    }
    switch (msg.which()) {
      case proto::CoreMessage::TASK_RESULT: {
        auto r = msg.getTaskResult();
        TaskId id = IdFrom<TaskId>(r.getTaskId());
        if (r.getCode() != 0) {
          Status st(static_cast<StatusCode>(r.getCode()), r.getMessage());
          if (r.hasLostObject() &&
              WaitForRebuiltArgument(id, IdFrom<ObjectId>(r.getLostObject()),
                                     IdFrom<NodeId>(r.getLostObjectNode()), st.message())) {
            return true;
          }
          FinishTask(id, &st, nullptr);
        } else {
          FinishTask(id, nullptr, &r);
        }
        return true;
      }
      case proto::CoreMessage::SUBMIT_TASK: {
        if (!is_worker_ || (tag != node_conn_ && !c.caller)) return false;
        TaskId id = IdFrom<TaskId>(msg.getSubmitTask().getTaskId());
        if (!execution_.Push({std::move(words), tag, tag == node_conn_})) {
          // Sent before the node heard that the running task blocked: it would wait behind the
          // task it may be waiting for. Hand it straight back.
          (void)SendToNode(BlockedFrame(true, {id}));
        }
        return true;
      }
      case proto::CoreMessage::KILL_ACTOR: {
        if (!c.caller) return false;
        CUMULUS_LOG(DEBUG) << "actor: killed by a caller";
        std::fflush(stdout);
        std::fflush(stderr);
        _exit(0);
      }
      case proto::CoreMessage::GROUP_REPLY:
        if (tag != node_conn_) return false;
        groups_.OnReply(msg.getGroupReply());
        return true;
      case proto::CoreMessage::JOB_FINISHED:
        return true;
      case proto::CoreMessage::NODE_DIED: {
        if (tag != node_conn_) return false;
        // A hung node keeps its connections open: its actors are lost all the same.
        NodeId dead = IdFrom<NodeId>(msg.getNodeDied());
        std::vector<ActorId> lost;
        for (auto& [id, a] : actors_) {
          if (a.node == dead && a.state == ActorEntry::kAlive) lost.push_back(id);
        }
        for (auto& id : lost) {
          ActorEntry& a = actors_.at(id);
          if (a.conn) channel_->Close(a.conn, "its node was declared dead");
          ActorLost(a, "its node " + dead.Hex() + " was declared dead by the head");
        }
        return true;
      }
      default:
        return true;
    }
  }

  // A connection closed (the loop's thread).
  void OnClose(uint64_t tag, const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    Peer c = peers_[tag];
    peers_.erase(tag);
    if (tag == node_conn_) {
      node_conn_ = 0;
      Status st = Status::Unavailable("the connection to the node was lost");
      std::vector<TaskId> lost;
      for (auto& [id, t] : tasks_) {
        if (t->sent && !t->actor_call) lost.push_back(id);
      }
      for (auto& id : lost) FinishTask(id, &st, nullptr);
      groups_.NodeLost();
      execution_.Close();
      cv_.notify_all();
      return;
    }
    if (!c.actor.IsNil()) {
      auto a = actors_.find(c.actor);
      if (a != actors_.end() && a->second.conn == tag) {
        a->second.conn = 0;
        ActorLost(a->second, why == "closed" ? std::string("its process closed the connection")
                                             : "its connection failed (" + why + ")");
      }
    }
  }

  // ---- worker: executing -------------------------------------------------------------------

  // Runs one task or actor call (TaskExecutor) and answers on the connection it came from.
  void Execute(ExecutionQueue::Item& ex) {
    capnp::ReaderOptions ro;
    ro.traversalLimitInWords = kMaxCoreFrameBytes / 8;
    capnp::FlatArrayMessageReader reader(ex.words, ro);
    auto spec = reader.getRoot<proto::CoreMessage>().getSubmitTask();
    TaskId task = IdFrom<TaskId>(spec.getTaskId());
    capnp::MallocMessageBuilder message;
    auto result = message.initRoot<proto::CoreMessage>().initTaskResult();
    {
      std::lock_guard<std::mutex> lock(mu_);
      current_task_ = task;
      executing_ = true;
    }
    bool exit_after = executor_->Run(spec, result);
    {
      std::lock_guard<std::mutex> lock(mu_);
      current_task_ = TaskId();
      executing_ = false;
    }
    if (!exit_after) {
      SendOn(ex.reply_conn, EncodeFrame(message));
      return;
    }
    // The process ends after this answer: it is written (bounded) before it does.
    channel_->SendAndWait(ex.reply_conn, EncodeFrame(message), std::chrono::seconds(5));
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(1);
  }

  // The actor built here listens for its callers; returns where.
  // Callers must send their hello, with the cluster's token, first: until then a small frame, a
  // deadline, and a cap on how many may wait (EventLoop::ListenRules).
  Result<std::string> StartActorListener() {
    uint16_t port = 0;
    CUMULUS_ASSIGN_OR_RETURN(int fd, ListenTcp(options_.bind_host, 0, &port));
    SetNonBlocking(fd);
    EventLoop::ListenRules rules;
    rules.max_frame_bytes = kMaxHelloBytes;
    rules.require_auth = true;
    rules.auth_deadline = std::chrono::seconds(10);
    rules.max_unauthenticated = 256;
    channel_->Listen(fd, rules);
    return options_.bind_host + ":" + std::to_string(port);
  }

  // REQUIRES: mu_ (held by the Get/Wait that blocks).
  void NotifyBlocked(bool blocked) {
    std::vector<TaskId> returned;
    if (blocked) {
      returned = execution_.Block();
    } else {
      execution_.Unblock();
    }
    (void)SendToNode(BlockedFrame(blocked, returned));
  }

  static std::string BlockedFrame(bool blocked, const std::vector<TaskId>& returned) {
    capnp::MallocMessageBuilder message;
    auto b = message.initRoot<proto::CoreMessage>().initWorkerBlocked();
    b.setBlocked(blocked);
    auto list = b.initReturned(static_cast<unsigned>(returned.size()));
    for (unsigned i = 0; i < returned.size(); ++i) list.set(i, DataOf(returned[i]));
    return EncodeFrame(message);
  }

  CoreWorkerOptions options_;
  bool is_worker_ = false;
  JobId job_;
  TaskId driver_task_;
  NodeId node_id_;
  std::string transfer_address_;
  std::string store_socket_;
  std::unique_ptr<StoreClient> store_;
  std::unique_ptr<HeadSession> head_;
  std::unique_ptr<ActorDirectory> directory_;
  // Calls that may wait (the head, the store), made neither on the loop's thread nor under mu_:
  // publishing a named actor's address, deleting copies pulled here.
  std::unique_ptr<SerialExecutor> blocking_calls_ = std::make_unique<SerialExecutor>();
  std::unique_ptr<CoreChannel> channel_;  // node, actors called, callers of the actor here
  PlacementGroupClient groups_{options_.job, [this](std::string frame) {
                                 std::lock_guard<std::mutex> lock(mu_);
                                 return SendToNode(std::move(frame));
                               }};

  std::mutex mu_;  // everything below; never held while waiting on a socket
  std::condition_variable cv_;
  uint64_t node_conn_ = 0;
  std::atomic<bool> stopped_{false};
  ReferenceTable refs_{100};  // the objects this process owns
  std::unordered_map<TaskId, std::unique_ptr<PendingTask>> tasks_;
  std::unordered_map<ActorId, ActorEntry> actors_;
  std::unordered_map<uint64_t, Peer> peers_;
  uint32_t put_index_ = 0;
  uint64_t next_seq_ = 1;
  TaskId current_task_;
  bool executing_ = false;

  ExecutionQueue execution_;  // workers: what the node and callers sent, run in order

  std::unique_ptr<TaskExecutor> executor_;  // workers: runs what the node and callers send
};

Result<std::unique_ptr<CoreWorker>> CoreWorker::Start(const CoreWorkerOptions& options) {
  auto w = std::make_unique<CoreWorkerImpl>(options);
  CUMULUS_RETURN_IF_ERROR(w->Connect());
  return std::unique_ptr<CoreWorker>(std::move(w));
}

}  // namespace cumulus
