#include "workers/core_worker.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <unordered_map>

#include "runtime/base/logging.h"
#include "runtime/base/serial_executor.h"
#include "runtime/core/messages.h"
#include "runtime/head/control_client.h"
#include "runtime/head/head_server.h"  // TokensEqual
#include "runtime/net/frame.h"
#include "runtime/net/tcp.h"
#include "runtime/object_store/store_client.h"
#include "workers/actor_directory.h"
#include "workers/core_channel.h"
#include "workers/execution_queue.h"
#include "workers/head_session.h"
#include "workers/object_reader.h"
#include "workers/placement_group_client.h"
#include "workers/reference_table.h"
#include "workers/task_executor.h"
#include "workers/task_manager.h"

namespace cumulus {

using Words = kj::Array<capnp::word>;

class CoreWorkerImpl : public CoreWorker, private OwnerIo {
 public:
  explicit CoreWorkerImpl(const CoreWorkerOptions& o) : options_(o) {
    is_worker_ = !o.worker_id.IsNil();
    refs_ = ReferenceTable(o.max_lineage_depth);
    job_ = o.job;
    driver_task_ = TaskId::ForDriver(job_);
    head_ =
        std::make_unique<HeadSession>(o.head, o.token, is_worker_ ? "worker" : "driver", *o.clock);
    directory_ = std::make_unique<ActorDirectory>(*head_);
  }
  ~CoreWorkerImpl() override { Stop(); }

  Status Connect() {
    CUMULUS_ASSIGN_OR_RETURN(NodeHello hello,
                             HelloNode(options_.node_socket, job_, options_.worker_id));
    node_id_ = hello.node_id;
    transfer_address_ = hello.transfer_address;
    store_socket_ = hello.store_socket;
    int node_fd = hello.fd;
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
      eo.start_actor_listener = [this] { return channel_->ListenForCallers(options_.bind_host); };
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
    CUMULUS_ASSIGN_OR_RETURN(
        channel_, CoreChannel::Start(node_fd, std::move(hello.decoder), std::move(handlers)));
    node_conn_ = channel_->node_conn();
    return Status();
  }

  // ---- Runtime: submission ------------------------------------------------------------------

  ObjectId SubmitTask(const std::string& function, std::vector<internal::ArgData> args,
                      const internal::CallOptions& options) override {
    std::lock_guard<std::mutex> lock(mu_);
    return tasks_.SubmitTask(function, std::move(args), options);
  }

  ActorId CreateActor(const std::string& factory, const std::string& class_name,
                      std::vector<internal::ArgData> args,
                      const internal::CallOptions& options) override {
    ActorId actor = ActorId::Of(job_);
    std::unique_lock<std::mutex> lock(mu_);
    ActorEntry& a = tasks_.actors().Create(actor, factory, class_name, args, options);
    if (a.state == ActorEntry::kDead) return actor;
    if (!options.name.empty()) {
      lock.unlock();
      Status reserved = directory_->Reserve(options.name, actor, class_name);
      lock.lock();
      if (!reserved.ok()) {
        tasks_.actors().MarkDead(*tasks_.actors().Find(actor), reserved);
        return actor;
      }
    }
    tasks_.actors().Start(*tasks_.actors().Find(actor), std::move(args), options);
    return actor;
  }

  ObjectId SubmitActorTask(const ActorId& actor, const std::string& method,
                           std::vector<internal::ArgData> args,
                           const internal::CallOptions& options) override {
    std::lock_guard<std::mutex> lock(mu_);
    return tasks_.SubmitActorCall(actor, method, std::move(args), options);
  }

  // ---- Runtime: objects --------------------------------------------------------------------

  Result<internal::Payload> Get(const ObjectId& id, int64_t timeout_ms) override {
    TimePoint deadline = timeout_ms < 0
                             ? TimePoint::max()
                             : options_.clock->Now() + std::chrono::milliseconds(timeout_ms);
    std::unique_lock<std::mutex> lock(mu_);
    // A stored copy that cannot be read is rebuilt (lineage) and read again, a bounded number of
    // times (Rebuild fails the object once it may not be rebuilt any more).
    for (int round = 0;; ++round) {
      NodeId tried;
      auto got = GetOnce(id, timeout_ms, deadline, lock, &tried);
      if (got.ok() || round > ReferenceTable::kMaxRebuilds || !IsLoss(got.status())) return got;
      const ObjectEntry* e = refs_.Find(id);
      if (!e || e->state != ObjectEntry::kReady || !e->stored) return got;
      tasks_.Rebuild(id, tried, got.status().message());
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
                                tasks_.DescribeProducer(id) + ") timed out after " +
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
                             : options_.clock->Now() + std::chrono::milliseconds(timeout_ms);
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
    tasks_.FlushFrees();
  }

  Status Cancel(const ObjectId& id) override {
    std::lock_guard<std::mutex> lock(mu_);
    return tasks_.Cancel(id);
  }

  // ---- Runtime: actors ---------------------------------------------------------------------

  Status KillActor(const ActorId& actor) override {
    std::unique_lock<std::mutex> lock(mu_);
    CUMULUS_ASSIGN_OR_RETURN(std::string name, tasks_.actors().Kill(actor));
    lock.unlock();
    if (!name.empty()) directory_->Release(name, actor);  // free again, if it still names it
    return Status();
  }

  Result<std::pair<ActorId, std::string>> GetActor(const std::string& name) override {
    CUMULUS_ASSIGN_OR_RETURN(ActorNameRecord rec, directory_->Lookup(name));
    CUMULUS_ASSIGN_OR_RETURN(ActorId id, ActorId::FromHex(rec.actor_id));
    std::unique_lock<std::mutex> lock(mu_);
    bool added = false;
    tasks_.actors().AddNamed(id, name, rec.class_name, &added);
    if (!added) return std::make_pair(id, rec.class_name);
    if (rec.address.empty()) {
      // Registered but not created yet: wait for its owner to publish the address.
      lock.unlock();
      auto full = directory_->WaitForAddress(name, std::chrono::seconds(30));
      lock.lock();
      if (!full.ok()) {
        tasks_.actors().MarkDead(
            *tasks_.actors().Find(id),
            Status::Unavailable("actor '" + name + "' did not start: " + full.status().message()));
        return std::make_pair(id, rec.class_name);
      }
      rec.address = *full;
    }
    ActorEntry& a = *tasks_.actors().Find(id);
    Status st = tasks_.actors().Connect(a, rec.address);
    if (!st.ok()) {
      tasks_.actors().MarkDead(a, Status::ActorDied("actor '" + name + "': " + st.message()));
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
    std::lock_guard<std::mutex> lock(mu_);
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
    execution_.Run(*executor_, [this](uint64_t conn, std::string frame, bool exit_after) {
      if (!exit_after) {
        channel_->Send(conn, std::move(frame));
        return;
      }
      // The process ends after this answer: it is written (bounded) before it does.
      channel_->SendAndWait(conn, std::move(frame), std::chrono::seconds(5));
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(1);
    });
  }

  void Stop() override {
    std::unique_lock<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    head_->StopWaiting();
    groups_.NodeLost();
    // Objects this process owns are freed where they live.
    refs_.FreeAll();
    tasks_.FlushFrees();
    // Owned actors end with their owner; named ones leave the registry.
    std::vector<std::string> names_to_release = tasks_.actors().EndOwned();
    cv_.notify_all();
    lock.unlock();
    // One try each: shutting down does not wait for the head, nor connect to it.
    for (const std::string& name : names_to_release) directory_->ReleaseNow(name);
    std::unique_ptr<SerialExecutor> blocking;
    {
      std::lock_guard<std::mutex> relock(mu_);
      blocking = std::move(blocking_calls_);
    }
    blocking.reset();                // runs what was posted (name publications, deletes) first
    if (channel_) channel_->Stop();  // after writing what was sent (frees, kills)
  }

 private:
  static constexpr Duration kActorConnectTimeout = std::chrono::seconds(5);

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
      if (!w_->is_worker_ || w_->execution_.running().IsNil()) return;
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

  TaskId CurrentTaskLocked() const {
    TaskId running = execution_.running();
    return running.IsNil() ? driver_task_ : running;
  }

  // `e` is sealed in this node's store. REQUIRES: mu_.
  void SetStoredHere(ObjectEntry& e, uint64_t size) {
    ReferenceTable::SetStored(e, node_id_, transfer_address_, size);
  }

  // ---- OwnerIo: what the owner side's units ask of this process (all under mu_) -------------

  Status SendToNode(std::string frame) override {
    if (node_conn_ == 0) {
      return Status::Unavailable("the node cannot be reached: its connection is closed");
    }
    channel_->Send(node_conn_, std::move(frame));
    return Status();
  }

  void SendToActor(uint64_t conn, std::string frame) override {
    channel_->Send(conn, std::move(frame));
  }

  Status ConnectToActor(const ActorId& actor, int incarnation,
                        const std::string& address) override {
    CUMULUS_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
    CUMULUS_ASSIGN_OR_RETURN(int fd, StartConnectTcp(hp));
    capnp::MallocMessageBuilder message;
    auto h = message.initRoot<proto::CoreMessage>().initHello();
    h.initCaller().setToken(options_.token);
    h.setPid(getpid());
    channel_->Connect(fd, EncodeFrame(message), kActorConnectTimeout,
                      [this, actor, incarnation](uint64_t conn) {
                        std::lock_guard<std::mutex> lock(mu_);
                        peers_[conn].actor = actor;
                        return tasks_.actors().Adopt(conn, actor, incarnation);
                      });
    return Status();
  }

  void PublishActorName(const std::string& name, const ActorNameRecord& record) override {
    if (!blocking_calls_) return;
    // Off the loop's thread and without mu_: a head call may wait.
    blocking_calls_->Post([this, name, record] { directory_->Publish(name, record); });
  }

  void DeleteLocalCopies(std::vector<ObjectId> ids) override {
    if (!blocking_calls_) return;
    blocking_calls_->Post([this, ids = std::move(ids)] {
      for (auto& id : ids) (void)store_->Delete(id);
    });
  }

  void Changed() override { cv_.notify_all(); }

  std::string CannotSubmit() const override {
    if (stopped_) return "cumulus is shutting down";
    if (node_conn_ == 0) return "the connection to the node was lost";
    return "";
  }

  bool stopped() const override { return stopped_; }

  // ---- connections -------------------------------------------------------------------------

  // One frame from a connection (the loop's thread).
  void OnFrame(uint64_t conn, FrameWords words) {
    bool keep = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      try {
        // A handler may read a field more than once: 8 times the frame's words, never the 64M
        // words a frame of zero-sized list elements could make it walk.
        capnp::FlatArrayMessageReader reader(words, CoreReaderOptions(words.size() * 8));
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
      case proto::CoreMessage::TASK_RESULT:
        tasks_.OnResult(msg.getTaskResult());
        return true;
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
        for (uint64_t conn : tasks_.actors().NodeDied(IdFrom<NodeId>(msg.getNodeDied()))) {
          channel_->Close(conn, "its node was declared dead");
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
      tasks_.NodeLost();
      groups_.NodeLost();
      execution_.Close();
      cv_.notify_all();
      return;
    }
    if (!c.actor.IsNil()) tasks_.actors().ConnectionClosed(tag, c.actor, why);
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
  PlacementGroupClient groups_{options_.job,
                               [this](std::string frame) {
                                 std::lock_guard<std::mutex> lock(mu_);
                                 return SendToNode(std::move(frame));
                               },
                               *options_.clock};

  std::mutex mu_;  // everything below; never held while waiting on a socket
  std::condition_variable cv_;
  uint64_t node_conn_ = 0;
  std::atomic<bool> stopped_{false};
  ReferenceTable refs_{100};                       // the objects this process owns
  TaskManager tasks_{options_.job, refs_, *this};  // what it submitted
  std::unordered_map<uint64_t, Peer> peers_;
  uint32_t put_index_ = 0;

  ExecutionQueue execution_;                // workers: what the node and callers sent, run in order
  std::unique_ptr<TaskExecutor> executor_;  // workers: runs what the node and callers send
};

Result<std::unique_ptr<CoreWorker>> CoreWorker::Start(const CoreWorkerOptions& options) {
  auto w = std::make_unique<CoreWorkerImpl>(options);
  CUMULUS_RETURN_IF_ERROR(w->Connect());
  return std::unique_ptr<CoreWorker>(std::move(w));
}

}  // namespace cumulus
