// NodeDaemon: one per machine (or per `cumulus start`). Owns the node's resources and its object
// store, registers with the head and heartbeats. When the head goes away it keeps reconnecting and
// re-registers under the same id; if the head declared it dead meanwhile, it rejoins with a new id.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/core/task_router.h"
#include "runtime/core/timeline.h"
#include "runtime/head/control_client.h"
#include "runtime/net/tcp.h"
#include "runtime/node/job_supervisor.h"
#include "runtime/node/object_handoff.h"
#include "runtime/object_store/object_store.h"
#include "runtime/object_store/store_server.h"
#include "runtime/transfer/object_transfer.h"
#include "scheduler/resources.h"

namespace cumulus {

struct NodeDaemonOptions {
  NodeId node_id;  // nil: a new random id (the head's own node reuses its id)
  HostPort head;
  std::string token;
  ResourceSet declared;  // overrides what is detected (e.g. GPU=2 on a machine without GPUs)
  Labels labels;
  std::string data_dir;  // required: the node's object store lives here
  std::string bind_host =
      "127.0.0.1";                   // where the node's object channel listens (other nodes pull)
  uint64_t object_store_memory = 0;  // 0: 30% of RAM
  uint64_t program_cache_bytes = 2ull << 30;  // bound of DATA_DIR/node-PID/jobs (job programs)
  // Work no node can run waits for an autoscaler, not fails (unless pinned to a node gone).
  bool wait_for_nodes = false;
  // host:port of this node's Prometheus endpoint, published to the head in its record (the head
  // lists it for service discovery, runtime/metrics/file_sd.h); "": it serves none.
  std::string metrics_address;
  bool prefault_object_store = false;  // touch the store's memory at start (see SharedRegion)
  Duration max_reconnect_backoff = std::chrono::seconds(1);  // below the head's disconnect grace
  // While the head cannot be reached, a line this often says so (how long, the last error);
  // CUMULUS_CUT_OFF_REPORT_MS (100-3600000) overrides it.
  Duration cut_off_report_every = std::chrono::seconds(30);
  // The task timeline's ring (`cumulus timeline`), in events of ~128 bytes; 0 turns it off.
  // CUMULUS_TIMELINE=0 turns it off, CUMULUS_TIMELINE_EVENTS=N sets it (runtime/core/timeline.h).
  size_t timeline_events = kDefaultTimelineEvents;
  // Ended tasks the node keeps for `cumulus list tasks` / `describe task`, oldest dropped first;
  // CUMULUS_FINISHED_TASKS=N sets it (runtime/node/finished_tasks.h).
  size_t finished_tasks = kDefaultFinishedTasks;
  Clock* clock = &SystemClock::Get();  // the node's time; must outlive the daemon
  // Called once (on the daemon's thread; must not block) when the head marked this node DRAINING
  // and it runs and serves nothing and its store holds no object (a draining node that runs
  // nothing hands its objects to another node first: ObjectHandoff): the owner of the process
  // should then destroy the daemon (it tells the head it left: STOPPED, not failed). Unset (the
  // head's own node, embedded nodes): a drained node only stops taking work.
  std::function<void()> on_drained;
  // Whether a draining node also tells the other nodes at once where its objects went
  // (objectsMoved), besides recording it at the head. Only tests turn it off, through
  // CUMULUS_TEST_UNANNOUNCED_HANDOFF=1: the owners then learn of the moves from the head alone,
  // as when that message comes after everything else.
  bool announce_moves = true;
};

class NodeDaemon {
 public:
  // Detects resources, opens the object store and registers with the head. Fails with the head's
  // error if it cannot be reached or refuses the node (wrong token).
  static Result<std::unique_ptr<NodeDaemon>> Start(const NodeDaemonOptions& options);
  // Stops heartbeating, tells the head it is leaving (recorded as STOPPED, not failed), stops its
  // workers and closes the object store.
  ~NodeDaemon();

  NodeId node_id() const;
  ResourceSet resources() const { return record_.total; }
  const std::string& store_socket() const { return store_socket_; }
  // host:port other nodes pull this node's objects from.
  const std::string& transfer_address() const { return record_.object_store_address; }
  // Unix socket where drivers and workers on this machine connect (core protocol).
  const std::string& core_socket() const { return router_->socket_path(); }
  // host:port where other nodes send tasks.
  const std::string& core_address() const { return record_.core_address; }
  const TaskRouter& router() const { return *router_; }
  // For the metrics endpoint (runtime/metrics/); thread-safe.
  ObjectStoreStats store_stats() const { return store_->Stats(); }
  const Labels& labels() const { return record_.labels; }  // set at start
  const std::string& hostname() const { return record_.hostname; }

 private:
  NodeDaemon() = default;
  Status Register();  // on the daemon's thread (or in Start): the only writer of record_
  void SetClient(std::unique_ptr<ControlClient> client);
  void Cleanup();
  void Leave();  // tells the head this node stops on purpose (after Run ended), if it joined
  void CutOff(const std::string& error);  // on the daemon's thread: the head cannot be reached
  void Run();
  void OnJobEnded(const JobId& job);  // from the router's thread
  void OnFailure(const std::string& what);
  std::string DrainNote();  // on the daemon's thread: what a draining node waits for ("" if none)

  NodeDaemonOptions options_;
  std::unique_ptr<ObjectStore> store_;
  std::unique_ptr<StoreServer> store_server_;
  std::unique_ptr<ObjectTransferServer> transfer_server_;
  std::unique_ptr<TaskRouter> router_;
  // What its rounds handed on, for frees that race them (shared with the router's hook).
  std::shared_ptr<HandoffLedger> ledger_ = std::make_shared<HandoffLedger>();
  std::unique_ptr<ObjectHandoff> handoff_;     // made when a drained node first holds objects
  std::unique_ptr<JobSupervisor> supervisor_;  // set under mu_ (the router's thread reads it)
  std::string store_socket_;
  std::string store_dir_;
  mutable std::mutex mu_;  // guards stop_, record_.id for readers, client_ swaps and active_fd_
  std::condition_variable cv_;
  bool stop_ = false;
  bool joined_ = false;  // registered with the head in Start (else there is nothing to leave)
  NodeRecord record_;
  std::unique_ptr<ControlClient> client_;  // used by the daemon's thread only
  ViewCursor view_;
  TimePoint view_pushed_{};  // the cluster as the heartbeats' acks tell it
  int active_fd_ = -1;
  Duration heartbeat_interval_ = std::chrono::seconds(1);
  // Since when the head cannot be reached (none while connected), when to say so next, and why.
  std::optional<TimePoint> cut_off_since_;
  TimePoint next_cut_off_report_{};
  std::string head_error_;
  bool drained_ = false;                                          // on_drained was called
  std::string leave_reason_ = "cumulus stop, SIGTERM or SIGINT";  // set before on_drained
  std::thread thread_;
};

}  // namespace cumulus
