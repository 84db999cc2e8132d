// CoreWorkerImpl: the core worker (behind cumulus/api.h), the composition root of the owner
// side's units (workers/), and the state they share under its one lock. Private to workers/:
//   core_worker.cc          Connect and Stop, submission, actors, the head's key-value store, the
//                           worker loop, OwnerIo, the connections and their frames;
//   core_worker_objects.cc  the object API: Get (rebuilding lost copies), Put, Wait, references,
//                           cancels, and what a task blocked in Get or Wait hands back.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "runtime/base/serial_executor.h"
#include "runtime/core/messages.h"
#include "runtime/object_store/store_client.h"
#include "workers/actor_directory.h"
#include "workers/core_channel.h"
#include "workers/core_worker.h"
#include "workers/execution_queue.h"
#include "workers/head_session.h"
#include "workers/placement_group_client.h"
#include "workers/reference_table.h"
#include "workers/task_executor.h"
#include "workers/task_manager.h"

namespace cumulus {

using Words = kj::Array<capnp::word>;

class CoreWorkerImpl : public CoreWorker, private OwnerIo {
 public:
  explicit CoreWorkerImpl(const CoreWorkerOptions& o);
  ~CoreWorkerImpl() override { Stop(); }

  Status Connect();

  // ---- Runtime: submission (core_worker.cc) -------------------------------------------------

  ObjectId SubmitTask(const std::string& function, std::vector<internal::ArgData> args,
                      const internal::CallOptions& options) override;
  ActorId CreateActor(const std::string& factory, const std::string& class_name,
                      std::vector<internal::ArgData> args,
                      const internal::CallOptions& options) override;
  ObjectId SubmitActorTask(const ActorId& actor, const std::string& method,
                           std::vector<internal::ArgData> args,
                           const internal::CallOptions& options) override;

  // ---- Runtime: objects (core_worker_objects.cc) --------------------------------------------

  Result<internal::Payload> Get(const ObjectId& id, int64_t timeout_ms) override;
  static bool IsLoss(const Status& st);
  // A copy on `tried` could not be read: if a draining node handed `id` on (the head's
  // kObjectMovesNamespace), follow it. REQUIRES: `lock` holds mu_ (released during the call).
  bool FollowMove(const ObjectId& id, const NodeId& tried, std::unique_lock<std::mutex>& lock);
  Result<internal::Payload> GetOnce(const ObjectId& id, int64_t timeout_ms, TimePoint deadline,
                                    std::unique_lock<std::mutex>& lock, NodeId* tried);
  Result<ObjectId> Put(std::string bytes) override;
  Result<ObjectId> PutWith(uint64_t size, const std::function<void(uint8_t*)>& fill) override;
  std::vector<bool> Wait(const std::vector<ObjectId>& ids, size_t num_ready,
                         int64_t timeout_ms) override;
  void AddRef(const ObjectId& id) override;
  void RemoveRef(const ObjectId& id) override;
  Status Cancel(const ObjectId& id) override;
  Status PutRaw(const ObjectId& id, const std::string& bytes) override;

  // ---- Runtime: actors (core_worker.cc) -----------------------------------------------------

  Status KillActor(const ActorId& actor) override;
  Result<std::pair<ActorId, std::string>> GetActor(const std::string& name) override;

  Result<std::pair<PlacementGroupId, std::vector<NodeId>>> CreatePlacementGroup(
      const std::vector<std::map<std::string, double>>& bundles, PlacementGroupStrategy strategy,
      int64_t timeout_ms, const std::string& purpose, const PlacementGroupId& id) override {
    return groups_.Create(bundles, strategy, timeout_ms, purpose, id);
  }
  Status RemovePlacementGroup(const PlacementGroupId& id) override { return groups_.Remove(id); }
  void CancelPlacementGroup(const PlacementGroupId& id) override { groups_.Cancel(id); }

  NodeId node_id() const override { return node_id_; }
  bool was_restarted() const override { return executor_ && executor_->was_restarted(); }
  ActorId current_actor() const override { return executor_ ? executor_->actor_id() : ActorId(); }
  Status KvPut(const std::string& ns, const std::string& key, const std::string& value) override;
  Result<std::string> KvWait(const std::string& ns, const std::string& key,
                             int64_t timeout_ms) override;
  std::pair<std::string, std::string> cluster_credentials() const override {
    return {options_.head.ToString(), options_.token};
  }
  std::string bind_host() const override { return options_.bind_host; }
  JobId job_id() const override { return options_.job; }

  Status AnnounceJob(const std::string& record) override;
  std::string transfer_address() const override { return transfer_address_; }

  // ---- worker side (core_worker.cc) ---------------------------------------------------------

  void RunWorkerLoop() override;
  void Stop() override;

 private:
  static constexpr Duration kActorConnectTimeout = std::chrono::seconds(5);
  // By-value arguments of one task may take this much of its spec (each at most
  // kMaxInlineResultBytes); larger ones go through the object store (StoreLargeArguments).
  static constexpr uint64_t kInlineArgumentBudget = 4u << 20;

  // Moves the by-value arguments too large to travel in a task's spec into this node's object
  // store, as references (`stored`: this process's handles on them, dropped once the task holds
  // them). Not under mu_.
  Status StoreLargeArguments(std::vector<internal::ArgData>* args, std::vector<ObjectId>* stored);

  // What a connection of the loop is, beyond the node's.
  struct Peer {
    ActorId actor;         // caller side: the actor at the other end
    bool caller = false;   // worker side: an actor caller (authenticates with its hello)
    bool refused = false;  // its hello was refused: what it sent after is ignored until it closes
    // Worker side, a caller outside every job (`cumulus call`): its calls not answered yet, and
    // the stored results it was answered with and has not freed (freeObjects entries).
    bool outside = false;
    int unanswered = 0;
    std::unordered_set<std::string> freeable;
  };

  class BlockedGuard;  // core_worker_objects.cc

  template <typename Pred>
  bool WaitUntil(std::unique_lock<std::mutex>& lock, TimePoint deadline, Pred pred);

  TaskId CurrentTaskLocked() const {
    TaskId running = execution_.running();
    return running.IsNil() ? driver_task_ : running;
  }

  // `e` is sealed in this node's store. REQUIRES: mu_.
  void SetStoredHere(ObjectEntry& e, uint64_t size) {
    ReferenceTable::SetStored(e, node_id_, transfer_address_, size);
  }

  // ---- OwnerIo: what the owner side's units ask of this process (all under mu_) -------------

  Status SendToNode(std::string frame) override;
  void SendToActor(uint64_t conn, std::string frame) override {
    channel_->Send(conn, std::move(frame));
  }
  Status ConnectToActor(const ActorId& actor, int incarnation, const std::string& address) override;
  void PublishActorName(const std::string& name, const ActorNameRecord& record) override;
  void DeleteLocalCopies(std::vector<ObjectId> ids) override;
  void Changed() override { cv_.notify_all(); }
  std::string CannotSubmit() const override;
  bool stopped() const override { return stopped_; }

  // ---- connections (core_worker.cc) ---------------------------------------------------------

  void OnFrame(uint64_t conn, FrameWords words);
  bool HandleMessage(uint64_t tag, proto::CoreMessage::Reader msg, Words& words);
  void OnClose(uint64_t tag, const std::string& why);
  std::string NodeLostMessage() const;
  void NotifyBlocked(bool blocked);
  static std::string BlockedFrame(bool blocked, const std::vector<TaskId>& returned);
  // The actor's answer `frame` to `conn`, before it is sent (the execution thread): an outside
  // caller's stored results become its own to free, or are freed if it left. REQUIRES: mu_.
  void NoteAnswer(uint64_t conn, const std::string& frame);
  // An outside caller's freeObjects: only of the results it was answered with (this node's
  // store); the rest is refused in one `refused` reply. REQUIRES: mu_.
  void HandleCallerFree(uint64_t tag, Peer& c, capnp::List<capnp::Data>::Reader entries);

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
  std::string node_lost_;  // why the connection to the node closed ("" while it is open)
  std::atomic<bool> stopped_{false};
  ReferenceTable refs_{100};                       // the objects this process owns
  TaskManager tasks_{options_.job, refs_, *this};  // what it submitted
  std::unordered_map<uint64_t, Peer> peers_;
  // Outside callers that left before all their calls answered, and how many did not: the stored
  // results of those answers are freed when they come.
  std::unordered_map<uint64_t, int> left_unanswered_;
  uint32_t put_index_ = 0;

  ExecutionQueue execution_;  // workers: what the node and callers sent, run in order
  std::unique_ptr<TimelineBatch> timeline_;  // workers: their events on the way to the node
  std::unique_ptr<TaskExecutor> executor_;   // workers: runs what the node and callers send
};

}  // namespace cumulus
