#include "runtime/node/node_daemon.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "runtime/base/logging.h"
#include "runtime/node/detect_resources.h"

namespace cumulus {

Result<std::unique_ptr<NodeDaemon>> NodeDaemon::Start(const NodeDaemonOptions& options) {
  if (options.data_dir.empty()) return Status::InvalidArgument("the node needs a data dir");
  std::unique_ptr<NodeDaemon> d(new NodeDaemon());
  d->options_ = options;
  DetectedResources detected = DetectResources();
  if (!detected.gpu_note.empty() && !options.declared.Has("GPU")) {
    CUMULUS_LOG(INFO) << "node: " << detected.gpu_note;
  }
  ResourceSet total = detected.resources;

  if (options.declared.GetUnits("GPU") % ResourceSet::kUnit != 0) {
    return Status::InvalidArgument("a node's GPU count must be a whole number (got " +
                                   std::to_string(options.declared.Get("GPU")) + ")");
  }
  d->record_.id = options.node_id.IsNil() ? NodeId::FromRandom() : options.node_id;
  d->record_.labels = options.labels;
  d->record_.pid = getpid();
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  d->record_.hostname = host;

  // The object store lives in a directory of its own per node process.
  std::string store_dir = options.data_dir + "/node-" + std::to_string(getpid());
  ObjectStoreOptions store_options;
  store_options.directory = store_dir;
  store_options.memory_capacity = options.object_store_memory;
  CUMULUS_ASSIGN_OR_RETURN(d->store_, ObjectStore::Open(store_options));
  // Memory for tasks is what the object store does not take; declared resources override all.
  total.SetUnits("memory",
                 std::max<int64_t>(0, total.GetUnits("memory") -
                                          static_cast<int64_t>(d->store_->Stats().capacity_bytes) *
                                              ResourceSet::kUnit));
  total.Override(options.declared);
  d->record_.total = total;
  d->record_.available = total;
  d->store_socket_ = store_dir + "/store.sock";
  CUMULUS_ASSIGN_OR_RETURN(d->store_server_, StoreServer::Start(d->store_.get(), d->store_socket_));
  d->record_.object_store_address = d->store_socket_;

  {
    std::lock_guard<std::mutex> lock(d->mu_);
    CUMULUS_RETURN_IF_ERROR(d->Register());
  }
  d->thread_ = std::thread([p = d.get()] { p->Run(); });
  return d;
}

NodeDaemon::~NodeDaemon() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  store_server_.reset();
  store_.reset();
}

NodeId NodeDaemon::node_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return record_.id;
}

Status NodeDaemon::Register() {
  if (!client_) {
    ControlClientOptions o;
    o.role = "node";
    o.request_timeout = std::chrono::seconds(3);
    CUMULUS_ASSIGN_OR_RETURN(client_, ControlClient::Connect(options_.head, options_.token, o));
  }
  auto interval = client_->RegisterNode(record_);
  if (!interval.ok() && interval.status().code() == StatusCode::kNotFound) {
    // The head declared this node dead while it was away: join again as a new node.
    NodeId old = record_.id;
    record_.id = NodeId::FromRandom();
    CUMULUS_LOG(WARN) << "node " << old << " was declared dead by the head; rejoining as "
                      << record_.id;
    interval = client_->RegisterNode(record_);
  }
  if (!interval.ok()) {
    client_.reset();
    return interval.status();
  }
  heartbeat_interval_ = std::max<Duration>(*interval, std::chrono::milliseconds(10));
  return Status();
}

void NodeDaemon::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  Duration backoff = std::chrono::milliseconds(50);
  while (true) {
    Duration wait = client_ ? heartbeat_interval_ : backoff;
    // A timed wait is the heartbeat schedule; Stop() wakes it at once.
    if (cv_.wait_for(lock, wait, [this] { return stop_; })) return;
    if (!client_) {
      Status st = Register();
      if (!st.ok()) {
        if (st.code() == StatusCode::kUnauthenticated) {
          CUMULUS_LOG(ERROR) << "node: the head refused this node: " << st;
        }
        backoff = std::min<Duration>(backoff * 2, options_.max_reconnect_backoff);
        continue;
      }
      CUMULUS_LOG(INFO) << "node " << record_.id << ": connected to the head at "
                        << options_.head.ToString();
      backoff = std::chrono::milliseconds(50);
      continue;
    }
    auto known = client_->Heartbeat(record_.id, record_.available);
    if (!known.ok()) {
      CUMULUS_LOG(WARN) << "node " << record_.id << ": lost the head (" << known.status()
                        << "); reconnecting";
      client_.reset();
      continue;
    }
    if (!*known) {
      Status st = Register();
      if (!st.ok()) CUMULUS_LOG(WARN) << "node: re-registering failed: " << st;
    }
  }
}

}  // namespace cumulus
