#include "runtime/node/node_daemon.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "runtime/base/logging.h"
#include "runtime/base/numeric.h"
#include "runtime/node/detect_resources.h"

namespace cumulus {

namespace {
ControlClientOptions NodeClientOptions() {
  ControlClientOptions o;
  o.role = "node";
  o.request_timeout = std::chrono::seconds(3);
  return o;
}
}  // namespace

namespace {

int64_t ToMillis(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// The memory monitor's settings: CUMULUS_MEMORY_USAGE_THRESHOLD (a fraction from 0.01 to 1; 1
// turns it off), CUMULUS_MEMORY_MONITOR_MS (10-60000) and CUMULUS_MEMORY_WORKER_LIMIT (bytes,
// "2G": the node's workers' private memory is watched against it instead of the machine's
// memory). A bad value is said and left out.
void ReadMemoryMonitorEnvironment(TaskRouterOptions& router) {
  auto threshold = RealFromEnv("CUMULUS_MEMORY_USAGE_THRESHOLD", {0.01, 1});
  if (!threshold.ok()) {
    CUMULUS_LOG(WARN) << "node: " << threshold.status().message()
                      << " (1 turns the memory monitor off); using " << router.memory_threshold;
  } else if (*threshold) {
    router.memory_threshold = **threshold;
  }
  auto every = IntegerFromEnv("CUMULUS_MEMORY_MONITOR_MS", {10, 60000, "milliseconds"});
  if (!every.ok()) {
    CUMULUS_LOG(WARN) << "node: " << every.status().message() << "; using "
                      << ToMillis(router.memory_check_every) << " ms";
  } else if (*every) {
    router.memory_check_every = std::chrono::milliseconds(**every);
  }
  if (const char* limit = std::getenv("CUMULUS_MEMORY_WORKER_LIMIT"); limit && *limit) {
    auto bytes = ParseBytes(limit);
    if (bytes.ok() && *bytes > 0) {
      router.memory_worker_limit = *bytes;
    } else {
      CUMULUS_LOG(WARN) << "node: CUMULUS_MEMORY_WORKER_LIMIT must be a number of bytes such as "
                           "2G, got '"
                        << limit << "'; watching the machine's memory";
    }
  }
}

// Bytes of the files under `dir` (0 if it is not there).
uint64_t BytesUnder(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      uint64_t n = it->file_size(size_ec);
      if (!size_ec) total += n;
    }
  }
  return total;
}

// The program caches of node processes of this data dir that are gone (DATA_DIR/node-PID, PID
// not running): nobody can use them. Their submitted jobs are left to the job supervisor, which
// asks the head whether they ended; their logs stay for whoever looks into why the node died.
void RemoveDeadNodesPrograms(const std::string& data_dir) {
  std::error_code ec;
  for (auto& entry : std::filesystem::directory_iterator(data_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("node-", 0) != 0) continue;
    auto pid = ParseInteger("a node directory's pid", name.substr(5), {1, INT32_MAX});
    if (!pid.ok() || *pid == getpid()) continue;
    if (kill(static_cast<pid_t>(*pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    std::filesystem::remove_all(entry.path() / "jobs", rm);
  }
}

}  // namespace

Result<std::unique_ptr<NodeDaemon>> NodeDaemon::Start(const NodeDaemonOptions& options) {
  if (options.data_dir.empty()) return Status::InvalidArgument("the node needs a data dir");
  if (options.declared.GetUnits("GPU") % ResourceSet::kUnit != 0) {
    return Status::InvalidArgument("a node's GPU count must be a whole number (got " +
                                   std::to_string(options.declared.Get("GPU")) + ")");
  }
  std::unique_ptr<NodeDaemon> d(new NodeDaemon());
  d->options_ = options;
  auto report_every = IntegerFromEnv("CUMULUS_CUT_OFF_REPORT_MS", {100, 3600000, "milliseconds"});
  if (!report_every.ok()) {
    CUMULUS_LOG(WARN) << "node: " << report_every.status().message() << "; using "
                      << ToMillis(d->options_.cut_off_report_every) << " ms";
  } else if (*report_every) {
    d->options_.cut_off_report_every = std::chrono::milliseconds(**report_every);
  }

  const char* unannounced = std::getenv("CUMULUS_TEST_UNANNOUNCED_HANDOFF");
  if (unannounced && std::string(unannounced) == "1") d->options_.announce_moves = false;

  // Authenticate before creating anything: a wrong token or an unreachable head leaves nothing.
  CUMULUS_ASSIGN_OR_RETURN(
      d->client_, ControlClient::Connect(options.head, options.token, NodeClientOptions()));

  DetectedResources detected = DetectResources();
  if (!detected.gpu_note.empty() && !options.declared.Has("GPU")) {
    CUMULUS_LOG(INFO) << "node: " << detected.gpu_note;
  }
  d->record_.id = options.node_id.IsNil() ? NodeId::FromRandom() : options.node_id;
  d->record_.labels = options.labels;
  d->record_.pid = getpid();
  d->record_.metrics_address = options.metrics_address;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  d->record_.hostname = host;

  // The object store lives in a directory of its own per node process, removed when it stops.
  d->store_dir_ = options.data_dir + "/node-" + std::to_string(getpid());
  {
    // The program cache starts empty (a dir of an earlier process with this pid: its files are
    // not in the cache's books), and the caches of node processes that died go.
    std::error_code ec;
    std::filesystem::remove_all(d->store_dir_ + "/jobs", ec);
    RemoveDeadNodesPrograms(options.data_dir);
  }
  ObjectStoreOptions store_options;
  store_options.directory = d->store_dir_;
  store_options.memory_capacity = options.object_store_memory;
  store_options.prefault = options.prefault_object_store;
  CUMULUS_ASSIGN_OR_RETURN(d->store_, ObjectStore::Open(store_options));
  d->store_socket_ = d->store_dir_ + "/store.sock";
  CUMULUS_ASSIGN_OR_RETURN(d->store_server_, StoreServer::Start(d->store_.get(), d->store_socket_));
  CUMULUS_ASSIGN_OR_RETURN(
      d->transfer_server_,
      ObjectTransferServer::Start(d->store_.get(), options.bind_host, 0, options.token));
  std::string advertise =
      options.bind_host == "0.0.0.0" ? LocalAddressOf(d->client_->fd()) : options.bind_host;
  d->record_.object_store_address = advertise + ":" + std::to_string(d->transfer_server_->port());

  // Memory for tasks is what the object store does not take; declared resources override all.
  ResourceSet total = detected.resources;
  total.SetUnits("memory",
                 std::max<int64_t>(0, total.GetUnits("memory") -
                                          static_cast<int64_t>(d->store_->Stats().capacity_bytes) *
                                              ResourceSet::kUnit));
  total.Override(options.declared);
  d->record_.total = total;
  // The GPU model as a label (gpu_model=H100) for selectors such as "gpu_model in (A100,H100)";
  // a gpu_model label the user gave wins, and a node offering no GPU shows none.
  if (!detected.gpu_model.empty() && total.Has("GPU") && !d->record_.labels.count("gpu_model")) {
    d->record_.labels["gpu_model"] = detected.gpu_model;
  }
  d->record_.available = total;
  if (options.declared.Has("GPU")) {  // declared GPUs (e.g. to test scheduling): ids 0..n-1
    for (int64_t g = 0; g < total.GetUnits("GPU") / ResourceSet::kUnit; ++g) {
      d->record_.gpu_ids.push_back(static_cast<uint32_t>(g));
    }
  } else if (total.Has("GPU")) {
    d->record_.gpu_ids = detected.gpu_ids;
  }

  TaskRouterOptions router;
  router.node_id = d->record_.id;
  router.socket_path = d->store_dir_ + "/core.sock";
  router.bind_host = options.bind_host;
  router.token = options.token;
  router.head = options.head;
  router.store = d->store_.get();
  router.store_socket = d->store_socket_;
  router.transfer_address = d->record_.object_store_address;
  router.work_dir = d->store_dir_;
  router.program_cache_bytes = options.program_cache_bytes;
  router.total = total;
  router.labels = d->record_.labels;
  router.wait_for_nodes = options.wait_for_nodes;
  router.gpu_ids = d->record_.gpu_ids;
  router.clock = options.clock;
  ReadMemoryMonitorEnvironment(router);
  if (auto events = TimelineEventsFromEnv(options.timeline_events); events.ok()) {
    router.timeline_events = *events;
  } else {
    CUMULUS_LOG(WARN) << "node: " << events.status().message() << "; keeping "
                      << options.timeline_events << " timeline events";
    router.timeline_events = options.timeline_events;
  }
  if (auto kept = FinishedTasksFromEnv(options.finished_tasks); kept.ok()) {
    router.finished_tasks = *kept;
  } else {
    CUMULUS_LOG(WARN) << "node: " << kept.status().message() << "; keeping "
                      << options.finished_tasks << " finished tasks";
    router.finished_tasks = options.finished_tasks;
  }
  router.on_job_end = [p = d.get()](const JobId& job) { p->OnJobEnded(job); };
  router.on_failure = [p = d.get()](const std::string& what) { p->OnFailure(what); };
  router.on_freed_here = [ledger = d->ledger_](const std::vector<ObjectId>& ids) {
    return ledger->Freed(ids);
  };
  auto started = TaskRouter::Start(router);
  if (!started.ok()) {
    d->Cleanup();
    return started.status();
  }
  d->router_ = std::move(*started);
  d->record_.core_address = d->router_->core_address();
  d->record_.core_socket = d->router_->socket_path();
  if (options.bind_host == "0.0.0.0") {
    d->record_.core_address =
        advertise + d->record_.core_address.substr(d->record_.core_address.rfind(':'));
  }

  Status registered = d->Register();
  if (!registered.ok()) {
    d->Cleanup();
    return registered;
  }
  d->joined_ = true;
  if (auto view = d->client_->GetClusterStatus(); view.ok()) d->router_->UpdateView(view->nodes);
  d->active_fd_ = d->client_->fd();
  JobSupervisorOptions jobs;
  jobs.node_id = d->record_.id;
  jobs.head = options.head;
  jobs.token = options.token;
  jobs.work_dir = d->store_dir_;
  jobs.core_socket = d->record_.core_socket;
  jobs.clock = options.clock;
  jobs.state_report = [p = d.get()] {
    NodeStateReport r;
    r.micros = p->options_.clock->WallMicros();
    size_t total = 0;
    r.tasks = p->router_->Tasks(kMaxReportedRows, &total);
    r.tasks_total = total;
    for (auto& o : p->store_->List(kMaxReportedRows, &total)) {
      ObjectStateRow row;
      row.object = o.id.Hex();
      row.job = o.id.Task().Job().Hex();
      row.size = o.size;
      row.where = o.in_memory && o.on_disk ? "BOTH" : o.in_memory ? "MEMORY" : "DISK";
      row.pins = static_cast<uint32_t>(o.pins);
      r.objects.push_back(std::move(row));
    }
    r.objects_total = total;
    const std::string& dir = p->store_dir_;
    r.disk.program_cache = BytesUnder(dir + "/jobs");
    r.disk.program_cache_max = p->options_.program_cache_bytes;
    r.disk.submitted = BytesUnder(dir + "/submitted");
    r.disk.spill = BytesUnder(dir + "/objects.db");
    r.disk.logs = BytesUnder(dir + "/logs");
    struct statvfs fs;
    if (statvfs(dir.c_str(), &fs) == 0) {
      r.disk.free = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
    }
    return EncodeRecord(r);
  };
  auto supervisor = JobSupervisor::Start(jobs);
  if (!supervisor.ok()) {
    d->Cleanup();
    return supervisor.status();
  }
  {
    std::lock_guard<std::mutex> lock(d->mu_);
    d->supervisor_ = std::move(*supervisor);
  }
  d->thread_ = std::thread([p = d.get()] { p->Run(); });
  return d;
}

NodeDaemon::~NodeDaemon() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    // Unblock a heartbeat or registration in flight: it fails at once and Run sees stop_.
    if (active_fd_ >= 0) shutdown(active_fd_, SHUT_RDWR);
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Leave();
  Cleanup();
}

void NodeDaemon::Leave() {
  // A node that never joined (the head unreachable, a start that failed) has nothing to leave:
  // its start's own error is the one line to say.
  if (!joined_) return;
  // On a connection of its own (the heartbeat's was shut down above); bounded, so that a node
  // whose head is away still stops within seconds.
  ControlClientOptions o = NodeClientOptions();
  o.connect_timeout = std::chrono::seconds(2);
  o.request_timeout = std::chrono::seconds(2);
  auto client = ControlClient::Connect(options_.head, options_.token, o);
  Status st = client.ok() ? (*client)->Leave(record_.id, leave_reason_) : client.status();
  if (st.ok()) {
    CUMULUS_LOG(INFO) << "node " << record_.id << ": told the head it is stopping";
  } else {
    CUMULUS_LOG(WARN) << "node " << record_.id << ": could not tell the head it is stopping (" << st
                      << "); it will be declared dead when its connection's grace ends";
  }
}

void NodeDaemon::OnJobEnded(const JobId& job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (supervisor_) supervisor_->JobEnded(job);
}

void NodeDaemon::OnFailure(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  if (supervisor_) supervisor_->RecordFailure(what);
}

void NodeDaemon::Cleanup() {
  std::unique_ptr<JobSupervisor> supervisor;
  {
    std::lock_guard<std::mutex> lock(mu_);
    supervisor = std::move(supervisor_);
  }
  supervisor.reset();  // stops the drivers it started, before their node goes
  handoff_.reset();    // waits for a round in flight (it uses the router and the store)
  client_.reset();
  router_.reset();  // kills the workers before their store goes
  transfer_server_.reset();
  store_server_.reset();
  store_.reset();
  if (!store_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(store_dir_, ec);
  }
}

// A draining node says what it still waits for; once nothing is left, it asks its process to
// stop it (on_drained). Objects count as something others may still read: once the node runs
// nothing, it hands them to another node (ObjectHandoff), whose note this is meanwhile; if no
// node can take them, it keeps them, and says why.
std::string NodeDaemon::DrainNote() {
  if (!router_ || !store_) return "";
  NodeWork work = router_->Work();
  if (!work.draining) return "";
  size_t objects = 0;
  (void)store_->List(0, &objects);
  std::string waiting = work.ToString();
  if (!waiting.empty()) {
    if (objects) {
      waiting += ", " + std::to_string(objects) + (objects == 1 ? " object" : " objects");
    }
    return "waiting for " + waiting;
  }
  if (objects && !options_.on_drained) {  // it stays anyway: its objects stay with it
    return "waiting for " + std::to_string(objects) + (objects == 1 ? " object" : " objects");
  }
  if (objects || (handoff_ && handoff_->running())) {
    if (!handoff_) {
      ObjectHandoffOptions o;
      o.store = store_.get();
      o.self = record_.id;
      o.self_transfer = record_.object_store_address;
      o.head = options_.head;
      o.token = options_.token;
      o.clock = options_.clock;
      o.ledger = ledger_.get();
      TaskRouter* router = router_.get();
      o.free_on = [router](const NodeId& to, const std::vector<ObjectId>& ids) {
        router->FreeOn(to, ids);
      };
      if (options_.announce_moves) {
        o.on_moved = [router](const NodeId& to, const std::string& transfer,
                              const std::vector<ObjectId>& ids) {
          router->AnnounceMoves(to, transfer, ids);
        };
      }
      handoff_ = std::make_unique<ObjectHandoff>(std::move(o));
    }
    std::vector<NodeRecord> nodes;
    nodes.reserve(view_.nodes.size());
    for (auto& [id, n] : view_.nodes) nodes.push_back(n);
    return handoff_->Step(nodes, objects);
  }
  if (!options_.on_drained) return "idle; stays up (this process also runs the head or a driver)";
  if (!drained_) {
    drained_ = true;
    leave_reason_ = "drained";
    CUMULUS_LOG(INFO) << "node " << record_.id << ": drained (nothing runs, no object held); "
                      << "leaving the cluster";
    options_.on_drained();
  }
  return "leaving";
}

NodeId NodeDaemon::node_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return record_.id;
}

Status NodeDaemon::Register() {
  // Runs on the daemon's thread (or in Start, before it exists): record_ changes only here.
  auto interval = client_->RegisterNode(record_);
  if (!interval.ok() && interval.status().code() == StatusCode::kNotFound) {
    // The head declared this node dead while it was away: join again as a new node.
    NodeId old = record_.id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      record_.id = NodeId::FromRandom();
    }
    if (router_) router_->SetNodeId(record_.id);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (supervisor_) supervisor_->SetNodeId(record_.id);
    }
    CUMULUS_LOG(WARN) << "node " << old << " was declared dead by the head; rejoining as "
                      << record_.id;
    interval = client_->RegisterNode(record_);
  }
  if (!interval.ok()) return interval.status();
  heartbeat_interval_ = std::max<Duration>(*interval, std::chrono::milliseconds(10));
  return Status();
}

void NodeDaemon::SetClient(std::unique_ptr<ControlClient> client) {
  std::lock_guard<std::mutex> lock(mu_);
  client_ = std::move(client);
  active_fd_ = client_ ? client_->fd() : -1;
}

// The head cannot be reached (or refused this node) because of `error`: the first time, one line
// now; then a line every cut_off_report_every while it lasts (how long, what the node keeps
// doing, the last error), so that a node cut off is never silent for long.
void NodeDaemon::CutOff(const std::string& error) {
  TimePoint now = options_.clock->Now();
  head_error_ = error;
  if (!cut_off_since_) {
    cut_off_since_ = now;
    next_cut_off_report_ = now + options_.cut_off_report_every;
    CUMULUS_LOG(WARN) << "node " << record_.id << ": lost the head at " << options_.head.ToString()
                      << " (" << error << "); reconnecting";
    return;
  }
  if (now < next_cut_off_report_) return;
  next_cut_off_report_ = now + options_.cut_off_report_every;
  size_t tasks = 0;
  if (router_) (void)router_->Tasks(0, &tasks);
  CUMULUS_LOG(WARN)
      << "node " << record_.id << ": cut off from the head at " << options_.head.ToString()
      << " for " << std::chrono::duration_cast<std::chrono::seconds>(now - *cut_off_since_).count()
      << " s; still running its " << tasks << " task(s) and keeping its objects, retrying every "
      << std::chrono::duration_cast<std::chrono::milliseconds>(options_.max_reconnect_backoff)
             .count()
      << " ms at most; last error: " << error;
}

void NodeDaemon::Run() {
  Duration backoff = std::chrono::milliseconds(50);
  while (true) {
    {
      // A timed wait is the heartbeat schedule; the destructor wakes it at once.
      std::unique_lock<std::mutex> lock(mu_);
      Duration wait = client_ ? heartbeat_interval_ : backoff;
      if (cv_.wait_for(lock, wait, [this] { return stop_; })) return;
    }
    // Network calls run without the lock.
    if (!client_) {
      auto client = ControlClient::Connect(options_.head, options_.token, NodeClientOptions());
      if (client.ok()) {
        SetClient(std::move(*client));
        Status st = Register();
        if (st.ok()) {
          if (cut_off_since_) {
            CUMULUS_LOG(INFO) << "node " << record_.id << ": back in touch with the head at "
                              << options_.head.ToString() << " after "
                              << std::chrono::duration_cast<std::chrono::seconds>(
                                     options_.clock->Now() - *cut_off_since_)
                                     .count()
                              << " s cut off";
            cut_off_since_.reset();
          } else {
            CUMULUS_LOG(INFO) << "node " << record_.id << ": connected to the head at "
                              << options_.head.ToString();
          }
          backoff = std::chrono::milliseconds(50);
          continue;
        }
        SetClient(nullptr);
        client = st;
      }
      std::string error = client.status().ToString();
      if (client.status().code() == StatusCode::kUnauthenticated && error != head_error_) {
        CUMULUS_LOG(ERROR) << "node: the head refused this node: " << client.status();
      }
      CutOff(error);
      // Stay well under the head's disconnect grace (2 s by default).
      backoff = std::min<Duration>(backoff * 2, options_.max_reconnect_backoff);
      continue;
    }
    if (router_) {
      record_.available = router_->Available();
      // What holds the node, also when it takes no resources (a zero-resource actor): the
      // autoscaler never counts such a node idle.
      record_.work = static_cast<uint32_t>(
          std::min<size_t>(router_->Work().held(), std::numeric_limits<uint32_t>::max()));
    }
    std::string drain_note = DrainNote();
    if (drained_) return;  // the process stops the daemon now (on_drained)
    bool view_changed = false;
    auto known = client_->Heartbeat(record_.id, record_.available,
                                    router_ ? router_->PendingDemand() : DemandList(), &view_,
                                    &view_changed, drain_note, record_.work);
    if (!known.ok()) {
      CutOff(known.status().ToString());
      SetClient(nullptr);
      continue;
    }
    if (!*known) {
      Status st = Register();
      if (!st.ok()) {
        CUMULUS_LOG(WARN) << "node: re-registering failed: " << st;
        CutOff("re-registering failed: " + st.ToString());
        SetClient(nullptr);
      }
      continue;
    }
    // The other nodes as the head sees them (where to spill work): what changed since the last
    // heartbeat came with its ack. Given to the router when it changed, and every 5 s anyway
    // (the router books what it sends in its copy; this corrects what it guessed).
    TimePoint now = options_.clock->Now();
    if (view_changed && transfer_server_) {
      // Whom this node pulls from when asked to take objects: the cluster's alive nodes only.
      std::set<std::string> sources;
      for (auto& [id, n] : view_.nodes) {
        if (n.state == NodeState::kAlive && !n.object_store_address.empty()) {
          sources.insert(n.object_store_address);
        }
      }
      transfer_server_->SetFetchSources(std::move(sources));
    }
    if (router_ && view_.epoch != 0 &&  // (no view yet: keep what the router has)
        (view_changed || now - view_pushed_ >= std::chrono::seconds(5))) {
      view_pushed_ = now;
      std::vector<NodeRecord> nodes;
      nodes.reserve(view_.nodes.size());
      for (auto& [id, n] : view_.nodes) nodes.push_back(n);
      router_->UpdateView(nodes);
    }
  }
}

}  // namespace cumulus
