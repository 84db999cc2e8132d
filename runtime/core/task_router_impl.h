// TaskRouter::Impl: the node's task router, the composition root of the node's units
// (runtime/node/), and the state its event-loop thread keeps. Private to runtime/core:
//   task_router.cc               the loop, the cluster view, scheduling, workers and jobs ending;
//   task_router_protocol.cc      the core protocol: hellos by role, submissions, results, frees,
//                                cancels, blocked workers, group messages, connections closing;
//   task_router_node_context.cc  NodeContext (the node as its units see it), the links to other
//                                nodes, and the head's requests (AskHead).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "runtime/base/serial_executor.h"
#include "runtime/core/messages.h"
#include "runtime/core/task_router.h"
#include "runtime/net/event_loop.h"
#include "runtime/node/actor_ends.h"
#include "runtime/node/group_coordinator.h"
#include "runtime/node/head_link.h"
#include "runtime/node/local_scheduler.h"
#include "runtime/node/machine_stats.h"
#include "runtime/node/memory_monitor.h"
#include "runtime/node/node_context.h"
#include "runtime/node/remote_nodes.h"
#include "runtime/node/state_rows.h"
#include "runtime/node/task_table.h"
#include "runtime/node/worker_leases.h"

namespace cumulus {

class TaskRouter::Impl : public NodeContext {
 public:
  explicit Impl(const TaskRouterOptions& o);
  ~Impl() override;

  Status Start();
  std::string core_address() const { return options_.bind_host + ":" + std::to_string(tcp_port_); }
  const std::string& socket_path() const { return options_.socket_path; }
  void UpdateView(const std::vector<NodeRecord>& nodes);
  void SetNodeId(const NodeId& id);

 private:
  // kCaller: a process outside every job over TCP with the cluster token (`cumulus list|describe|
  // top|call|timeline`): it may ask about state and for the timeline, submit normal tasks of a job,
  // cancel them, and free the stored results of its own tasks (others' objects are refused). When
  // it leaves, its unfinished tasks are cancelled and the results it did not free are freed.
  enum class Role { kUnknown, kDriver, kWorker, kPeer, kCaller };

  // What this node knows of a connection (its socket is the event loop's).
  struct Conn {
    bool tcp = false;
    bool closed = false;
    Role role = Role::kUnknown;
    JobId job;        // drivers
    WorkerId worker;  // workers
    NodeId peer;      // peers
    // Callers: the tasks it submitted that have not answered it (some may have ended otherwise),
    // and the stored results it was answered with and has not freed (freeObjects entries).
    std::unordered_set<TaskId> tasks;
    std::unordered_set<std::string> freeable;
  };

  void Send(uint64_t conn, std::string frame) { loop_->Send(conn, std::move(frame)); }
  void Close(uint64_t conn, const std::string& why) { loop_->Close(conn, why); }

  // ---- task_router.cc: the loop, the cluster view, scheduling, workers and jobs ---------------
  void Loop();
  void ApplySharedUpdates();
  void DropDeadPeers();
  void Schedule();
  void WorkerGone(const WorkerId& wid, std::string why);
  void PeerLost(const NodeId& peer, const std::string& why);
  void EndJob(const JobId& job, bool tell_peers);
  void WorkerExited(const WorkerId& id);
  void Housekeeping(TimePoint now);
  void SnapshotTasks();
  void SnapshotWork();

  // ---- task_router_protocol.cc: the core protocol ---------------------------------------------
  void OnFrame(uint64_t id, FrameWords words);
  void OnClose(uint64_t id, const std::string& why);
  void Handle(uint64_t id, Conn& c, proto::CoreMessage::Reader msg, const FrameWords& words);
  void HandleHello(uint64_t id, Conn& c, proto::CoreHello::Reader h);
  void SendHelloAck(uint64_t id);
  void HandleSubmit(uint64_t id, Conn& c, proto::TaskSpec::Reader spec, const FrameWords& words);
  void HandleResult(Conn& c, proto::TaskResult::Reader result, const FrameWords& words);
  void HandleFree(Conn& c, capnp::List<capnp::Data>::Reader entries);
  // A caller's free: only of what `freeable` holds; the rest is refused in one `refused` reply.
  void HandleCallerFree(uint64_t id, Conn& c, capnp::List<capnp::Data>::Reader entries);
  // Deletes stored objects (freeObjects entries): here, or through the node holding each (a
  // peer's entries are all this node's own: `here_only`).
  void FreeEntries(const std::vector<std::string>& entries, bool here_only);
  // Frees of objects on `node`, a node that drained (alive or gone): also freed where the head says
  // each was handed on, if it was (the owner sent them before it heard of the move). One request
  // to the head for the batch.
  void FreeWhereMoved(const NodeId& node, const std::vector<std::string>& entries);
  // A caller left: its unfinished tasks are cancelled (their results freed when they answer),
  // and the results it did not free are freed.
  void CallerLeft(uint64_t id, Conn& c);
  // `t` was answered for here (`st`: its error, OK if it finished): its caller no longer waits
  // for it, and it is kept among the finished tasks if it ran or failed here.
  void TaskAnswered(const RoutedTask& t, const Status& st);
  void HandleCancel(const TaskId& id);
  void HandleBlocked(Conn& c, proto::WorkerBlocked::Reader b);
  void HandleReturned(uint64_t id, Conn& c, proto::TaskReturned::Reader r);
  // Sends `frame` to every driver and worker connected here.
  void TellLocalProcesses(const std::string& frame);
  // This node handed `ids` to node `to`: tells its own processes and every other alive node.
  void AnnounceMoves(const NodeId& to, const std::string& transfer,
                     const std::vector<ObjectId>& ids);
  // The timeline (task_router_timeline.cc): a worker's batch, a client's request, and the node's
  // own event for a task a worker of its answered.
  void HandleTimelineEvents(Conn& c, proto::TimelineEvents::Reader batch);
  void HandleActorLost(uint64_t id, Conn& c, proto::ActorLost::Reader lost);
  void HandleTimelineRequest(uint64_t id, proto::TimelineRequest::Reader request);
  void RecordScheduled(const RoutedTask& t, const Worker& w);
  JobId JobOf(const Conn& c);

  // ---- task_router_state.cc: state queries (`cumulus list|describe|top`) ---------------------
  void HandleStateQuery(uint64_t id, proto::StateQuery::Reader q);
  std::vector<StateRowFields> TaskRows(const StateQuerySpec& q, bool* more, uint64_t* matched);
  std::vector<StateRowFields> ObjectRows(const StateQuerySpec& q, bool* more, uint64_t* matched);
  std::vector<StateRowFields> WorkerRows(const StateQuerySpec& q, bool* more, uint64_t* matched);
  void FinishedTaskRows(RowSelector& selector, bool detail);
  std::vector<StateRowFields> ActorEndRows(const StateQuerySpec& q, bool* more, uint64_t* matched);
  std::vector<StateRowFields> ActorRows(const StateQuerySpec& q, bool* more, uint64_t* matched);
  StateRowFields NodeRow();
  std::string PendingReason(const RoutedTask& t);

  // ---- task_router_node_context.cc: NodeContext, links to other nodes, the head ---------------
  const NodeId& node_id() const override;
  ClusterSnapshot Snapshot(TimePoint now, bool include_unreachable) override;
  bool RefreshView(TimePoint now, bool force) override;
  Status ReserveHere(const PlacementGroupId& id, const JobId& job, uint32_t round,
                     const std::vector<uint32_t>& indices,
                     const std::vector<ResourceSet>& bundles) override;
  void ReleaseHere(const PlacementGroupId& id, uint32_t round) override;
  bool SendToNode(const NodeId& node, std::string frame, TimePoint now,
                  bool avoid_if_unreachable) override;
  void SendToConn(uint64_t conn, std::string frame) override;
  void BookView(const NodeId& node, const ResourceSet& r, bool take) override;
  void ScheduleAgain() override;
  void HeadPut(const std::string& ns, const std::string& key, const std::string& value,
               std::function<void(Status)> done) override;
  void HeadGet(const std::string& ns, const std::string& key,
               std::function<void(Result<std::string>)> done) override;
  void HeadDelete(const std::string& ns, const std::string& key,
                  std::function<void(Status)> done) override;
  // Where the head says each of `ids` was handed on by a drained node (those with no move are
  // left out), asked in one request of the head's queue.
  using Moves = std::vector<std::pair<ObjectId, NodeId>>;
  void HeadMoves(std::vector<ObjectId> ids, std::function<void(Result<Moves>)> done);
  template <typename Call, typename Done>
  void AskHead(Call call, Done done_fn);
  uint64_t PeerConn(const NodeId& node);

  TaskRouterOptions options_;
  Clock& clock_;
  NodeId node_id_;
  WorkerLeases leases_;
  RemoteNodes remote_;
  TaskTable tasks_;
  HeadLink head_;  // used only on head_calls_'s thread
  GroupCoordinator groups_;
  LocalScheduler scheduler_;
  MemoryMonitor memory_;
  MachineStats machine_;  // CPU, memory and GPU use, for `cumulus top`
  TimePoint next_machine_sample_{};
  TimelineRing timeline_;  // loop thread
  // Timeline batches dropped as malformed: logged at most once per 10 s, with the count since.
  TimePoint timeline_drop_logged_{};
  uint64_t timeline_drops_unlogged_ = 0;
  FinishedTasks finished_;  // loop thread: tasks answered for here, for state queries
  ActorEnds actor_ends_;    // loop thread: actor processes that ended here, for state queries
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
  DemandList shared_pending_;
  std::vector<int64_t> startup_micros_;
  std::vector<TaskStateRow> shared_tasks_;
  size_t shared_tasks_total_ = 0;
  RouterMetrics shared_metrics_;
  RouterMetrics counters_;  // the loop's own: its counters since start (copied into shared_)
  NodeWork shared_work_;

  friend class TaskRouter;
};

}  // namespace cumulus
