// HeadServer: starting and stopping the head and its loop (connections, liveness), and the
// cluster token files.
#include "runtime/head/head_server.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "runtime/base/logging.h"
#include "runtime/head/head_loop.h"
#include "runtime/head/node_codec.h"
#include "runtime/net/tcp.h"

namespace cumulus {

namespace {

constexpr uint32_t kUnauthenticatedFrameLimit = 4096;
constexpr size_t kMaxQueuedOutput = 64u << 20;

std::string RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  urandom.read(raw.data(), static_cast<std::streamsize>(bytes));
  if (!urandom) {  // no /dev/urandom: fall back to random_device
    std::random_device rd;
    for (auto& c : raw) c = static_cast<char>(rd());
  }
  return internal::ToHex(reinterpret_cast<const uint8_t*>(raw.data()), bytes);
}

}  // namespace

bool TokensEqual(const std::string& a, const std::string& b) {
  if (a.empty() || a.size() != b.size()) return false;  // token length is not a secret
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

Result<std::string> LoadToken(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return Status::Unauthenticated("cannot read the cluster token file " + path + ": " +
                                   std::strerror(errno));
  }
  if (st.st_uid != getuid() || (st.st_mode & 077) != 0) {
    return Status::Unauthenticated(
        "the cluster token file " + path +
        " must belong to you and be private (chmod 600 it): others could read or "
        "have planted it");
  }
  std::ifstream in(path);
  if (!in) return Status::Unauthenticated("cannot read the cluster token file " + path);
  std::string token;
  std::getline(in, token);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.empty()) return Status::Unauthenticated("the cluster token file " + path + " is empty");
  return token;
}

Result<std::string> CreateOrLoadToken(const std::string& path) {
  if (std::filesystem::exists(path)) return LoadToken(path);
  std::string token = RandomHex(32);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::Unavailable("cannot create the cluster token file " + path + ": " +
                               std::strerror(errno));
  }
  std::string line = token + "\n";
  bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  if (!ok) return Status::Unavailable("cannot write the cluster token file " + path);
  return token;
}

HeadServer::Loop::Loop(HeadOptions options, HeadCounters& counters,
                       std::unique_ptr<ControlStore> store, int listen_fd, std::string cluster_id)
    : options_(std::move(options)),
      counters_(counters),
      store_(std::move(store)),
      membership_(options_.membership, SystemClock::Get()),
      listen_fd_(listen_fd),
      cluster_id_(std::move(cluster_id)) {
  started_micros_ = SystemClock::Get().WallMicros();
}

HeadServer::Loop::~Loop() {
  if (!loop_ && listen_fd_ >= 0) close(listen_fd_);  // (the event loop closes it otherwise)
}

// Makes the event loop and listens (the loop owns the socket from here on).
Status HeadServer::Loop::Start() {
  EventLoop::Handlers h;
  h.on_accept = [this](uint64_t id, bool) {
    Conn& c = conns_[id];
    c.id = id;
    c.peer = loop_->PeerAddress(id);
    counters_.connections++;
  };
  h.on_frame = [this](uint64_t id, FrameWords words) {
    auto it = conns_.find(id);
    if (it != conns_.end()) Handle(it->second, words);
  };
  h.on_close = [this](uint64_t id, const std::string& why) { Closed(id, why); };
  h.on_warning = [this](const std::string& what) { Complain(what); };
  CUMULUS_ASSIGN_OR_RETURN(loop_, EventLoop::Create(std::move(h)));
  // Until its hello: one small frame, `auth_timeout`, and at most `max_unauthenticated` waiting.
  EventLoop::ListenRules rules;
  rules.max_frame_bytes = kUnauthenticatedFrameLimit;
  rules.auth_deadline = options_.auth_timeout;
  rules.max_unauthenticated = options_.max_unauthenticated;
  rules.max_queued_output = kMaxQueuedOutput;
  rules.require_auth = true;
  {
    capnp::MallocMessageBuilder message;
    auto reply = message.initRoot<proto::ControlReply>();  // request 0: whatever was asked
    reply.setCode(static_cast<uint16_t>(StatusCode::kResourceExhausted));
    reply.setMessage(
        "the head refused the connection: " + std::to_string(options_.max_unauthenticated) +
        " connections are already waiting to authenticate; try again shortly");
    rules.refusal = EncodeFrame(message);
  }
  loop_->Listen(listen_fd_, /*tcp=*/true, rules);
  return Status();
}

Status HeadServer::Loop::Recover() {
  size_t alive = 0, dead = 0;
  Status st = store_->Scan(ControlTable::kNodes, [&](const std::string&, const std::string& value) {
    auto node = NodeFromBytes(value);
    if (!node.ok()) {
      CUMULUS_LOG(WARN) << "skipping an unreadable node record: " << node.status();
      return;
    }
    (node->state == NodeState::kDead ? dead : alive)++;
    membership_.Recover(std::move(*node));
  });
  if (alive + dead > 0) {
    CUMULUS_LOG(INFO) << "recovered " << alive << " alive and " << dead
                      << " dead node records; alive nodes have "
                      << std::chrono::duration_cast<std::chrono::seconds>(
                             options_.membership.heartbeat_timeout)
                             .count()
                      << " s to re-register";
  }
  return st;
}

void HeadServer::Loop::Stop() {
  stop_ = true;
  if (loop_) loop_->Wake();  // (none if starting failed)
}

void HeadServer::Loop::Run() {
  while (!stop_) {
    int n = loop_->Poll(std::chrono::milliseconds(100));
    loop_->Flush();
    if (stop_) return;
    // Liveness and timeouts scan every node and connection: do it on a fixed cadence, not per
    // wakeup (with thousands of nodes the loop wakes thousands of times a second). With a full
    // batch more events are waiting (heartbeats among them): read those first.
    TimePoint now = SystemClock::Get().Now();
    if (n < 256 && now - last_housekeeping_ >= std::chrono::milliseconds(50)) {
      // If the loop itself stalled (a paused VM, a slow disk), the silence was ours, not the
      // nodes': do not count it against them.
      if (last_housekeeping_ != TimePoint{} && now - last_housekeeping_ > std::chrono::seconds(1)) {
        membership_.ForgiveStall(now - last_housekeeping_ - std::chrono::milliseconds(50));
      }
      last_housekeeping_ = now;
      Housekeeping();
      loop_->Flush();
    }
  }
}

// Logs refusals and garbage at most once a second, so a hostile peer cannot fill the disk.
void HeadServer::Loop::Complain(const std::string& what) {
  TimePoint now = SystemClock::Get().Now();
  if (now - last_complaint_ < std::chrono::seconds(1)) {
    suppressed_complaints_++;
    return;
  }
  CUMULUS_LOG(WARN) << "head: " << what
                    << (suppressed_complaints_ ? " (and " + std::to_string(suppressed_complaints_) +
                                                     " similar messages suppressed)"
                                               : std::string());
  last_complaint_ = now;
  suppressed_complaints_ = 0;
}

// The event loop closed connection `id` (`why`).
void HeadServer::Loop::Closed(uint64_t id, const std::string& why) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  if (why == "did not authenticate in time") counters_.auth_failures++;
  if (why == "it does not read what it is sent") {
    CUMULUS_LOG(WARN) << "head: " << it->second.peer << " does not read its replies; closed it";
  }
  if (why.rfind("sent a malformed frame", 0) == 0) {
    counters_.protocol_errors++;
    Complain("closing the connection from " + it->second.peer + ": " + why);
  }
  if (it->second.node) {
    // Only the connection a node registered on speaks for it: an old one closing late must
    // not mark a reconnected node as gone.
    auto owner = node_conn_.find(*it->second.node);
    if (owner != node_conn_.end() && owner->second == id) {
      membership_.Disconnected(*it->second.node);
      node_conn_.erase(owner);
    }
  }
  for (auto w = waiters_.begin(); w != waiters_.end();) {
    w = w->second.conn == id ? waiters_.erase(w) : std::next(w);
  }
  conns_.erase(it);
}

void HeadServer::Loop::Housekeeping() {
  TimePoint now = SystemClock::Get().Now();
  if (options_.publish_nodes && now >= next_publish_) {
    next_publish_ = now + std::chrono::seconds(1);
    std::vector<NodeRecord> nodes;
    nodes.reserve(membership_.nodes().size());
    for (auto& [id, n] : membership_.nodes()) nodes.push_back(n);
    std::lock_guard<std::mutex> lock(published_mu_);
    published_nodes_.swap(nodes);
  }
  for (const NodeId& id : membership_.Tick()) {
    const NodeRecord* node = membership_.Find(id);
    CUMULUS_LOG(WARN) << "node " << id << " (" << node->address
                      << ") is DEAD: " << node->death_reason;
    Persist(id);
  }
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    const Waiter& w = it->second;
    if (w.deadline > now) {
      ++it;
      continue;
    }
    auto conn = conns_.find(w.conn);
    std::string key = w.kv_key.substr(w.kv_key.find('\0') + 1);
    if (conn != conns_.end()) {
      SendError(conn->second, w.request_id,
                Status::TimedOut("key '" + key + "' did not appear in time"), false);
    }
    it = waiters_.erase(it);
  }
}

std::vector<NodeRecord> HeadServer::Loop::PublishedNodes() const {
  std::lock_guard<std::mutex> lock(published_mu_);
  return published_nodes_;
}

std::vector<NodeRecord> HeadServer::PublishedNodes() const { return loop_->PublishedNodes(); }

Status HeadServer::ScanKv(
    const std::string& ns, const std::string& from,
    const std::function<bool(const std::string&, const std::string&)>& fn) const {
  std::string prefix = ns + '\0';
  return loop_->store().ScanFrom(ControlTable::kKeyValue, prefix + from,
                                 [&](const std::string& key, const std::string& value) {
                                   if (key.compare(0, prefix.size(), prefix) != 0) return false;
                                   return fn(key.substr(prefix.size()), value);
                                 });
}

Result<std::unique_ptr<HeadServer>> HeadServer::Start(const HeadOptions& options) {
  if (options.data_dir.empty()) return Status::InvalidArgument("the head needs a data dir");
  if (options.token.empty()) return Status::InvalidArgument("the head needs a cluster token");
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;  // one descriptor per node: thousands of nodes need it
    setrlimit(RLIMIT_NOFILE, &files);
  }
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec || access(options.data_dir.c_str(), W_OK) != 0) {
    return Status::InvalidArgument("data dir " + options.data_dir + " is not writable" +
                                   (ec ? " (" + ec.message() + ")" : "") +
                                   "; choose another with --data-dir");
  }
  // Listen first: a port in use or a bad --bind must not leave a new control store behind.
  uint16_t port = 0;
  CUMULUS_ASSIGN_OR_RETURN(int listen_fd, ListenTcp(options.bind_host, options.port, &port));
  auto opened = ControlStore::Open(options.data_dir + "/control.db");
  if (!opened.ok()) {
    close(listen_fd);
    return opened.status();
  }
  auto store = std::move(*opened);
  auto cluster_id = store->Get(ControlTable::kMeta, "cluster_id");
  Status st = cluster_id.status();
  if (st.ok() && !*cluster_id) {
    *cluster_id = RandomHex(8);
    st = store->Put(ControlTable::kMeta, "cluster_id", **cluster_id);
  }
  if (!st.ok()) {
    close(listen_fd);
    return st;
  }
  std::unique_ptr<HeadServer> head(new HeadServer());
  head->port_ = port;
  head->cluster_id_ = **cluster_id;
  head->loop_ =
      std::make_unique<Loop>(options, head->counters_, std::move(store), listen_fd, **cluster_id);
  CUMULUS_RETURN_IF_ERROR(head->loop_->Recover());
  CUMULUS_RETURN_IF_ERROR(head->loop_->Start());
  head->thread_ = std::thread([loop = head->loop_.get()] { loop->Run(); });
  return head;
}

HeadServer::~HeadServer() {
  if (loop_) loop_->Stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace cumulus
