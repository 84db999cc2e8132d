// CoreWorkerImpl: the composition root of the core worker (declared in core_worker_impl.h):
// Connect and Stop, submission, actors, the head's key-value store, the worker loop, OwnerIo,
// and the connections with their frames. The object API is in core_worker_objects.cc.
#include "workers/core_worker.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "runtime/base/logging.h"
#include "runtime/head/control_client.h"
#include "runtime/head/head_server.h"  // TokensEqual
#include "runtime/net/first_segment.h"
#include "runtime/net/frame.h"
#include "runtime/net/tcp.h"
#include "workers/core_worker_impl.h"

namespace cumulus {

CoreWorkerImpl::CoreWorkerImpl(const CoreWorkerOptions& o) : options_(o) {
  is_worker_ = !o.worker_id.IsNil();
  refs_ = ReferenceTable(o.max_lineage_depth);
  job_ = o.job;
  driver_task_ = TaskId::ForDriver(job_);
  head_ = std::make_unique<HeadSession>(o.head, o.token, is_worker_ ? "worker" : "driver", *o.clock,
                                        o.head_wait);
  directory_ = std::make_unique<ActorDirectory>(*head_);
}

Status CoreWorkerImpl::Connect() {
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
    eo.find_move = [this](const ObjectId& id) -> Result<ObjectMove> {
      auto moved = head_->TryCall([&](ControlClient& head) {
        return head.KvGet(kObjectMovesNamespace, ObjectMoveKey(id));
      });
      if (!moved.ok()) return moved.status();
      return ParseObjectMove(*moved);
    };
    executor_ = std::make_unique<TaskExecutor>(std::move(eo));
  }
  CoreChannel::Handlers handlers;
  handlers.on_accept = [this](uint64_t conn) {
    std::lock_guard<std::mutex> lock(mu_);
    peers_[conn].caller = true;
  };
  handlers.on_frame = [this](uint64_t conn, FrameWords words) { OnFrame(conn, std::move(words)); };
  handlers.on_close = [this](uint64_t conn, const std::string& why) { OnClose(conn, why); };
  // Held until node_conn_ is set: the loop may hand on frames before Start returns.
  std::lock_guard<std::mutex> lock(mu_);
  CUMULUS_ASSIGN_OR_RETURN(
      channel_, CoreChannel::Start(node_fd, std::move(hello.decoder), std::move(handlers)));
  node_conn_ = channel_->node_conn();
  return Status();
}

// ---- Runtime: submission ------------------------------------------------------------------

ObjectId CoreWorkerImpl::SubmitTask(const std::string& function,
                                    std::vector<internal::ArgData> args,
                                    const internal::CallOptions& options) {
  std::vector<ObjectId> stored;
  Status st = StoreLargeArguments(&args, &stored);
  std::lock_guard<std::mutex> lock(mu_);
  ObjectId ret = st.ok() ? tasks_.SubmitTask(function, std::move(args), options)
                         : tasks_.Refused(TaskId::ForNormalTask(job_), function, st);
  for (const ObjectId& id : stored) refs_.RemoveRef(id);  // the task holds them now
  tasks_.FlushFrees();
  return ret;
}

Status CoreWorkerImpl::StoreLargeArguments(std::vector<internal::ArgData>* args,
                                           std::vector<ObjectId>* stored) {
  std::vector<size_t> by_value;
  uint64_t total = 0;
  for (size_t i = 0; i < args->size(); ++i) {
    if ((*args)[i].is_ref) continue;
    by_value.push_back(i);
    total += (*args)[i].value.size();
  }
  std::sort(by_value.begin(), by_value.end(),
            [&](size_t x, size_t y) { return (*args)[x].value.size() > (*args)[y].value.size(); });
  for (size_t i : by_value) {
    internal::ArgData& a = (*args)[i];
    uint64_t size = a.value.size();
    if (size <= kMaxInlineResultBytes && total <= kInlineArgumentBudget) break;
    auto id = Put(std::move(a.value));
    if (!id.ok()) {
      return Status(id.status().code(),
                    "argument " + std::to_string(i) + " (" + std::to_string(size) +
                        " bytes) could not be stored: " + id.status().message());
    }
    a.is_ref = true;
    a.ref = *id;
    a.value.clear();
    stored->push_back(*id);
    total -= size;
  }
  return Status();
}

ActorId CoreWorkerImpl::CreateActor(const std::string& factory, const std::string& class_name,
                                    std::vector<internal::ArgData> args,
                                    const internal::CallOptions& options) {
  ActorId actor = ActorId::Of(job_);
  std::vector<ObjectId> stored;
  Status st = StoreLargeArguments(&args, &stored);
  std::unique_lock<std::mutex> lock(mu_);
  ActorEntry& a = tasks_.actors().Create(actor, factory, class_name, args, options);
  // The constructor (and a restartable actor's pin) hold the stored arguments once submitted;
  // this process's own handles on them go on every way out.
  struct DropHandles {
    CoreWorkerImpl* w;
    std::vector<ObjectId>* ids;
    ~DropHandles() {
      for (const ObjectId& id : *ids) w->refs_.RemoveRef(id);
      w->tasks_.FlushFrees();
    }
  } drop{this, &stored};
  if (!st.ok()) {
    tasks_.actors().MarkDead(a, Status(st.code(), "actor " + factory + ": " + st.message()));
    return actor;
  }
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

ObjectId CoreWorkerImpl::SubmitActorTask(const ActorId& actor, const std::string& method,
                                         std::vector<internal::ArgData> args,
                                         const internal::CallOptions& options) {
  std::vector<ObjectId> stored;
  Status st = StoreLargeArguments(&args, &stored);
  std::lock_guard<std::mutex> lock(mu_);
  ObjectId ret = st.ok() ? tasks_.SubmitActorCall(actor, method, std::move(args), options)
                         : tasks_.Refused(TaskId::ForActorTask(actor), method, st);
  for (const ObjectId& id : stored) refs_.RemoveRef(id);
  tasks_.FlushFrees();
  return ret;
}

// ---- Runtime: actors ---------------------------------------------------------------------

Status CoreWorkerImpl::KillActor(const ActorId& actor) {
  std::unique_lock<std::mutex> lock(mu_);
  CUMULUS_ASSIGN_OR_RETURN(std::string name, tasks_.actors().Kill(actor));
  lock.unlock();
  if (!name.empty()) directory_->Release(name, actor);  // free again, if it still names it
  return Status();
}

Result<std::pair<ActorId, std::string>> CoreWorkerImpl::GetActor(const std::string& name) {
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

Status CoreWorkerImpl::KvPut(const std::string& ns, const std::string& key,
                             const std::string& value) {
  auto put = head_->Call([&](ControlClient& head) { return head.KvPut(ns, key, value); });
  return put.ok() ? Status() : put.status();
}
Result<std::string> CoreWorkerImpl::KvWait(const std::string& ns, const std::string& key,
                                           int64_t timeout_ms) {
  return head_->Call([&](ControlClient& head) {
    return head.KvWait(ns, key, std::chrono::milliseconds(timeout_ms));
  });
}

Status CoreWorkerImpl::AnnounceJob(const std::string& record) {
  capnp::MallocMessageBuilder message(FrameFirstSegmentWords(record.size()));
  auto j = message.initRoot<proto::CoreMessage>().initJobInfo();
  j.setJobId(DataOf(job_));
  j.setRecord(capnp::Data::Reader(reinterpret_cast<const uint8_t*>(record.data()), record.size()));
  std::lock_guard<std::mutex> lock(mu_);
  return SendToNode(EncodeFrame(message));
}

// ---- worker side -------------------------------------------------------------------------

void CoreWorkerImpl::RunWorkerLoop() {
  timeline_ = std::make_unique<TimelineBatch>(options_.timeline);
  auto to_node = [this](std::string frame) {
    std::lock_guard<std::mutex> lock(mu_);
    (void)SendToNode(std::move(frame));  // (a node that went away keeps no timeline)
  };
  auto reply = [this](uint64_t conn, std::string frame, bool exit_after) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (conn != node_conn_) NoteAnswer(conn, frame);  // before a free of it can come
    }
    if (!exit_after) {
      channel_->Send(conn, std::move(frame));
      return;
    }
    // The process ends after this answer: it is written (bounded) before it does.
    channel_->SendAndWait(conn, std::move(frame), std::chrono::seconds(5));
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(1);
  };
  execution_.Run(*executor_, reply, timeline_.get(), to_node);
}

void CoreWorkerImpl::Stop() {
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

// ---- OwnerIo: what the owner side's units ask of this process (all under mu_) -------------

Status CoreWorkerImpl::SendToNode(std::string frame) {
  if (node_conn_ == 0) return Status::Unavailable(NodeLostMessage());
  channel_->Send(node_conn_, std::move(frame));
  return Status();
}

Status CoreWorkerImpl::ConnectToActor(const ActorId& actor, int incarnation,
                                      const std::string& address) {
  CUMULUS_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  CUMULUS_ASSIGN_OR_RETURN(int fd, StartConnectTcp(hp));
  capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
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

void CoreWorkerImpl::PublishActorName(const std::string& name, const ActorNameRecord& record) {
  if (!blocking_calls_) return;
  // Off the loop's thread and without mu_: a head call may wait.
  blocking_calls_->Post([this, name, record] { directory_->Publish(name, record); });
}

void CoreWorkerImpl::DeleteLocalCopies(std::vector<ObjectId> ids) {
  if (!blocking_calls_) return;
  blocking_calls_->Post([this, ids = std::move(ids)] {
    for (auto& id : ids) (void)store_->Delete(id);
  });
}

std::string CoreWorkerImpl::CannotSubmit() const {
  if (stopped_) return "cumulus is shutting down";
  if (node_conn_ == 0) return NodeLostMessage();
  return "";
}

// REQUIRES: mu_, node_conn_ == 0. This process's own node, not the one a task was meant for:
// nothing can be submitted from here again.
std::string CoreWorkerImpl::NodeLostMessage() const {
  return "this process lost its connection to its node " + node_id_.Hex() + " (" +
         (node_lost_.empty() ? std::string("closed") : node_lost_) +
         "); it can submit no more work: start it again attached to a live node";
}

// ---- connections -------------------------------------------------------------------------

// One frame from a connection (the loop's thread).
void CoreWorkerImpl::OnFrame(uint64_t conn, FrameWords words) {
  bool keep = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    try {
      // A handler may read a field more than once: 8 times the frame's words, never the 64M
      // words a frame of zero-sized list elements could make it walk.
      capnp::FlatArrayMessageReader reader(words, CoreReaderOptions(words.size() * 8));
      auto msg = reader.getRoot<proto::CoreMessage>();
      keep = HandleMessage(conn, msg, words);
      if (!keep) {
        CUMULUS_LOG(WARN) << "cumulus: closing " << (conn == node_conn_ ? "the node's" : "a")
                          << " connection: it sent a message it may not send (core message "
                          << static_cast<int>(msg.which()) << ")";
      }
    } catch (const kj::Exception& e) {
      CUMULUS_LOG(WARN) << "cumulus: a peer sent a malformed message: "
                        << e.getDescription().cStr();
    }
  }
  if (!keep) channel_->Close(conn, "it sent a message it may not send");
}

// REQUIRES: mu_. False: close the connection.
bool CoreWorkerImpl::HandleMessage(uint64_t tag, proto::CoreMessage::Reader msg, Words& words) {
  Peer& c = peers_[tag];
  // A caller whose token was refused may have sent its request in the same write as its hello:
  // that is ignored, so the refusal goes out before the connection closes (not a bare close).
  if (c.refused) return true;
  if (c.caller && !channel_->IsAuthenticated(tag)) {
    if (!msg.isHello() || !msg.getHello().isCaller()) return false;
    auto caller = msg.getHello().getCaller();
    if (!TokensEqual(caller.getToken(), options_.token)) {
      // Said, then closed: the caller prints why (not how close the token was).
      channel_->Refuse(
          tag,
          HelloRefusalFrame("the actor's worker on node " + node_id_.Hex().substr(0, 8) +
                            " refused the cluster token"),
          "refused a caller: wrong cluster token");
      c.refused = true;
      return true;
    }
    channel_->Authenticated(tag, kMaxCoreFrameBytes);
    c.outside = caller.getOutside();
    return true;
  }
  switch (msg.which()) {
    case proto::CoreMessage::TASK_RESULT:
      tasks_.OnResult(msg.getTaskResult());
      return true;
    case proto::CoreMessage::SUBMIT_TASK: {
      if (!is_worker_ || (tag != node_conn_ && !c.caller)) return false;
      TaskId id = IdFrom<TaskId>(msg.getSubmitTask().getTaskId());
      if (c.outside) c.unanswered++;
      if (!execution_.Push({std::move(words), tag, tag == node_conn_})) {
        // Sent before the node heard that the running task blocked: it would wait behind the
        // task it may be waiting for. Hand it straight back.
        (void)SendToNode(BlockedFrame(true, {id}));
      }
      return true;
    }
    case proto::CoreMessage::KILL_ACTOR: {
      if (!c.caller) return false;
      // Only for the actor hosted here: a stale address may now be another actor's worker.
      ActorId target = IdFrom<ActorId>(msg.getKillActor());
      if (!target.IsNil() && (!executor_ || target != executor_->actor_id())) return false;
      CUMULUS_LOG(DEBUG) << "actor: killed by a caller";
      std::fflush(stdout);
      std::fflush(stderr);
      // Its owner's kill (a handle, or its end) exits 0; `cumulus kill`'s says so to the node.
      _exit(c.outside ? kKilledByCallerExitStatus : 0);
    }
    case proto::CoreMessage::FREE_OBJECTS:
      if (c.caller) HandleCallerFree(tag, c, msg.getFreeObjects());
      return true;
    case proto::CoreMessage::GROUP_REPLY:
      if (tag != node_conn_) return false;
      groups_.OnReply(msg.getGroupReply());
      return true;
    case proto::CoreMessage::JOB_FINISHED:
      return true;
    case proto::CoreMessage::OBJECTS_MOVED: {
      // A draining node handed its objects on: those owned here are read and freed there now.
      if (tag != node_conn_) return false;
      auto m = msg.getObjectsMoved();
      NodeId from = IdFrom<NodeId>(m.getFrom()), to = IdFrom<NodeId>(m.getTo());
      std::string transfer = m.getTransferAddress();
      for (auto id : m.getObjects()) refs_.Moved(IdFrom<ObjectId>(id), from, to, transfer);
      return true;
    }
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
void CoreWorkerImpl::OnClose(uint64_t tag, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  Peer c = peers_[tag];
  peers_.erase(tag);
  if (tag == node_conn_) {
    if (is_worker_) {
      // A worker ends with its node, even in the middle of a task: nobody takes its result,
      // the cluster runs the work elsewhere, and an orphan would hold CPUs (and its task's
      // side effects) until the task returned. (Its node's log needs no line for it.)
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(1);
    }
    node_conn_ = 0;
    node_lost_ = why;
    if (!stopped_) CUMULUS_LOG(WARN) << "cumulus: " << NodeLostMessage();
    tasks_.NodeLost();
    groups_.NodeLost();
    execution_.Close();
    cv_.notify_all();
    return;
  }
  if (!c.actor.IsNil()) tasks_.actors().ConnectionClosed(tag, c.actor, why);
  if (c.outside) {
    // Nobody reads them now: the results it did not free, and those of calls still running.
    std::vector<ObjectId> ids;
    for (const std::string& e : c.freeable) {
      ids.push_back(ObjectId::FromBinary(std::string_view(e.data(), ObjectId::kSize)));
    }
    if (!ids.empty()) DeleteLocalCopies(std::move(ids));
    if (c.unanswered > 0) left_unanswered_[tag] = c.unanswered;
  }
}

// REQUIRES: mu_.
void CoreWorkerImpl::NoteAnswer(uint64_t conn, const std::string& frame) {
  auto peer = peers_.find(conn);
  bool left = peer == peers_.end() && left_unanswered_.count(conn) > 0;
  if (!left && (peer == peers_.end() || !peer->second.outside)) return;
  std::vector<std::string> stored;
  FrameDecoder decoder(kMaxCoreFrameBytes);
  decoder.Append(frame.data(), frame.size());
  auto words = decoder.Next();
  if (words.ok() && words->has_value()) {
    capnp::FlatArrayMessageReader reader(**words, CoreReaderOptions((*words)->size() * 8));
    auto msg = reader.getRoot<proto::CoreMessage>();
    if (msg.isTaskResult()) stored = StoredReturnEntries(msg.getTaskResult());
  }
  if (!left) {
    Peer& c = peer->second;
    c.unanswered = std::max(0, c.unanswered - 1);
    for (auto& e : stored) c.freeable.insert(std::move(e));
    return;
  }
  std::vector<ObjectId> ids;
  for (const std::string& e : stored) {
    ids.push_back(ObjectId::FromBinary(std::string_view(e.data(), ObjectId::kSize)));
  }
  if (!ids.empty()) DeleteLocalCopies(std::move(ids));
  if (--left_unanswered_[conn] <= 0) left_unanswered_.erase(conn);
}

// REQUIRES: mu_.
void CoreWorkerImpl::HandleCallerFree(uint64_t tag, Peer& c,
                                      capnp::List<capnp::Data>::Reader entries) {
  std::vector<ObjectId> ids;
  size_t refused = 0;
  std::string first;
  for (auto e : entries) {
    std::string entry(reinterpret_cast<const char*>(e.begin()), e.size());
    if (c.freeable.erase(entry) > 0) {
      ids.push_back(ObjectId::FromBinary(std::string_view(entry.data(), ObjectId::kSize)));
    } else if (refused++ == 0 && entry.size() >= ObjectId::kSize) {
      first = ObjectId::FromBinary(std::string_view(entry.data(), ObjectId::kSize)).Hex();
    }
  }
  if (!ids.empty()) DeleteLocalCopies(std::move(ids));
  if (refused == 0) return;
  channel_->Send(tag, RefusalFrame(Status::InvalidArgument(
                          "the actor's worker refused to free " + std::to_string(refused) +
                          " object(s)" + (first.empty() ? "" : " (" + first + ")") +
                          ": a caller may free only the stored results of its own calls")));
}

// REQUIRES: mu_ (held by the Get/Wait that blocks).
void CoreWorkerImpl::NotifyBlocked(bool blocked) {
  std::vector<TaskId> returned;
  if (blocked) {
    returned = execution_.Block();
  } else {
    execution_.Unblock();
  }
  (void)SendToNode(BlockedFrame(blocked, returned));
}

std::string CoreWorkerImpl::BlockedFrame(bool blocked, const std::vector<TaskId>& returned) {
  capnp::MallocMessageBuilder message(FrameFirstSegmentWords(returned.size() * TaskId::kSize));
  auto b = message.initRoot<proto::CoreMessage>().initWorkerBlocked();
  b.setBlocked(blocked);
  auto list = b.initReturned(static_cast<unsigned>(returned.size()));
  for (unsigned i = 0; i < returned.size(); ++i) list.set(i, DataOf(returned[i]));
  return EncodeFrame(message);
}

Result<std::unique_ptr<CoreWorker>> CoreWorker::Start(const CoreWorkerOptions& options) {
  auto w = std::make_unique<CoreWorkerImpl>(options);
  CUMULUS_RETURN_IF_ERROR(w->Connect());
  return std::unique_ptr<CoreWorker>(std::move(w));
}

}  // namespace cumulus
