#include "runtime/head/head_server.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <list>
#include <map>
#include <random>
#include <unordered_map>

#include "runtime/base/logging.h"
#include "runtime/head/control_store.h"
#include "runtime/head/node_codec.h"
#include "runtime/net/event_loop.h"
#include "runtime/net/frame.h"
#include "runtime/net/tcp.h"
#include "runtime/proto/control.capnp.h"

namespace cumulus {

namespace {

constexpr uint32_t kUnauthenticatedFrameLimit = 4096;
constexpr size_t kMaxUnauthenticated = 1024;  // connections still owing their hello
constexpr size_t kMaxQueuedOutput = 64u << 20;

std::string KvKey(const std::string& ns, const std::string& key) { return ns + '\0' + key; }

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

// The head's loop: one thread, an EventLoop over the listening socket and every connection.
class HeadServer::Loop {
 public:
  Loop(HeadOptions options, HeadCounters& counters, std::unique_ptr<ControlStore> store,
       int listen_fd, std::string cluster_id)
      : options_(std::move(options)),
        counters_(counters),
        store_(std::move(store)),
        membership_(options_.membership, SystemClock::Get()),
        listen_fd_(listen_fd),
        cluster_id_(std::move(cluster_id)) {
    started_micros_ = SystemClock::Get().WallMicros();
  }
  ~Loop() {
    if (!loop_ && listen_fd_ >= 0) close(listen_fd_);  // (the event loop closes it otherwise)
  }

  // Makes the event loop and listens (the loop owns the socket from here on).
  Status Start() {
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
    // Until its hello: one small frame, `auth_timeout`, and at most kMaxUnauthenticated waiting.
    EventLoop::ListenRules rules;
    rules.max_frame_bytes = kUnauthenticatedFrameLimit;
    rules.auth_deadline = options_.auth_timeout;
    rules.max_unauthenticated = kMaxUnauthenticated;
    rules.max_queued_output = kMaxQueuedOutput;
    rules.require_auth = true;
    loop_->Listen(listen_fd_, /*tcp=*/true, rules);
    return Status();
  }

  Status Recover() {
    size_t alive = 0, dead = 0;
    Status st =
        store_->Scan(ControlTable::kNodes, [&](const std::string&, const std::string& value) {
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

  void Stop() {
    stop_ = true;
    if (loop_) loop_->Wake();  // (none if starting failed)
  }

  void Run() {
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
        if (last_housekeeping_ != TimePoint{} &&
            now - last_housekeeping_ > std::chrono::seconds(1)) {
          membership_.ForgiveStall(now - last_housekeeping_ - std::chrono::milliseconds(50));
        }
        last_housekeeping_ = now;
        Housekeeping();
        loop_->Flush();
      }
    }
  }

 private:
  // What the head knows of a connection (its socket is the event loop's).
  struct Conn {
    uint64_t id = 0;
    std::optional<NodeId> node;
    std::string peer;
    std::string role;
  };
  struct Waiter {
    uint64_t conn;
    uint64_t request_id;
    std::string kv_key;
    TimePoint deadline;
  };

  // Logs refusals and garbage at most once a second, so a hostile peer cannot fill the disk.
  void Complain(const std::string& what) {
    TimePoint now = SystemClock::Get().Now();
    if (now - last_complaint_ < std::chrono::seconds(1)) {
      suppressed_complaints_++;
      return;
    }
    CUMULUS_LOG(WARN) << "head: " << what
                      << (suppressed_complaints_
                              ? " (and " + std::to_string(suppressed_complaints_) +
                                    " similar messages suppressed)"
                              : std::string());
    last_complaint_ = now;
    suppressed_complaints_ = 0;
  }

  // The event loop closed connection `id` (`why`).
  void Closed(uint64_t id, const std::string& why) {
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

  void Send(Conn& c, capnp::MessageBuilder& message) { loop_->Send(c.id, EncodeFrame(message)); }

  // Sends an error reply; with `fatal` the connection closes after it.
  void SendError(Conn& c, uint64_t request_id, const Status& st, bool fatal) {
    capnp::MallocMessageBuilder message;
    auto reply = message.initRoot<proto::ControlReply>();
    reply.setRequestId(request_id);
    reply.setCode(static_cast<uint16_t>(st.code()));
    reply.setMessage(st.message());
    Send(c, message);
    if (fatal) loop_->CloseAfterFlush(c.id, "closed after an error reply: " + st.message());
  }

  void Handle(Conn& c, const kj::Array<capnp::word>& words) {
    uint64_t request_id = 0;
    try {
      capnp::ReaderOptions limits;
      limits.traversalLimitInWords = words.size() + 64;  // work bounded by the bytes received
      limits.nestingLimit = 16;
      capnp::FlatArrayMessageReader reader(words, limits);
      auto req = reader.getRoot<proto::ControlRequest>();
      request_id = req.getRequestId();
      if (!loop_->IsAuthenticated(c.id)) {
        if (req.which() != proto::ControlRequest::HELLO) {
          counters_.auth_failures++;
          SendError(c, request_id,
                    Status::Unauthenticated(
                        "authenticate first: the first request must carry the cluster token"),
                    true);
          return;
        }
        auto hello = req.getHello();
        if (!TokensEqual(hello.getToken(), options_.token)) {
          counters_.auth_failures++;
          Complain("refused a connection from " + c.peer + ": wrong cluster token");
          SendError(
              c, request_id,
              Status::Unauthenticated("the cluster token is wrong: pass the head's token with "
                                      "--token-file or CUMULUS_TOKEN"),
              true);
          return;
        }
        if (hello.getProtocolVersion() != proto::PROTOCOL_VERSION) {
          SendError(c, request_id,
                    Status::InvalidArgument("protocol version " +
                                            std::to_string(hello.getProtocolVersion()) +
                                            " is not supported by this head (it speaks " +
                                            std::to_string(proto::PROTOCOL_VERSION) + ")"),
                    true);
          return;
        }
        loop_->Authenticated(c.id, options_.max_frame_bytes);
        c.role = hello.getRole();
        ReplyOk(c, request_id);
        return;
      }
      switch (req.which()) {
        case proto::ControlRequest::HELLO:
          ReplyOk(c, request_id);
          return;
        case proto::ControlRequest::REGISTER_NODE:
          return HandleRegister(c, request_id, req.getRegisterNode());
        case proto::ControlRequest::HEARTBEAT:
          return HandleHeartbeat(c, request_id, req.getHeartbeat());
        case proto::ControlRequest::CLUSTER_STATUS:
          return HandleStatus(c, request_id);
        case proto::ControlRequest::KV_PUT:
          return HandleKvPut(c, request_id, req.getKvPut());
        case proto::ControlRequest::KV_GET:
        case proto::ControlRequest::KV_DELETE:
          return HandleKvGetDelete(
              c, request_id, req.which() == proto::ControlRequest::KV_DELETE,
              req.which() == proto::ControlRequest::KV_DELETE ? req.getKvDelete() : req.getKvGet());
        case proto::ControlRequest::KV_WAIT:
          return HandleKvWait(c, request_id, req.getKvWait());
        case proto::ControlRequest::KV_LIST:
          return HandleKvList(c, request_id, req.getKvList());
        default:
          SendError(c, request_id, Status::InvalidArgument("unknown control request"), false);
          return;
      }
    } catch (const kj::Exception& e) {
      counters_.protocol_errors++;
      Complain("malformed request from " + c.peer + " (" + e.getDescription().cStr() +
               "); closing it");
      SendError(
          c, request_id,
          Status::InvalidArgument(std::string("malformed request: ") + e.getDescription().cStr()),
          true);
    }
  }

  void ReplyOk(Conn& c, uint64_t request_id) {
    capnp::MallocMessageBuilder message;
    message.initRoot<proto::ControlReply>().setRequestId(request_id);
    Send(c, message);
  }

  void Persist(const NodeId& id) {
    const NodeRecord* node = membership_.Find(id);
    if (!node) return;
    Status st = store_->Put(ControlTable::kNodes, id.Binary(), NodeToBytes(*node));
    if (!st.ok()) CUMULUS_LOG(ERROR) << "head: cannot persist node " << id << ": " << st;
  }

  void HandleRegister(Conn& c, uint64_t request_id, proto::NodeInfo::Reader info) {
    auto node = DecodeNode(info);
    if (!node.ok()) return SendError(c, request_id, node.status(), false);
    node->address = c.peer;
    bool known = membership_.Find(node->id) != nullptr;
    Status st = membership_.Register(*node);
    if (!st.ok()) return SendError(c, request_id, st, false);
    if (c.node && *c.node != node->id) membership_.Disconnected(*c.node);
    c.node = node->id;
    node_conn_[node->id] = c.id;
    Persist(node->id);
    CUMULUS_LOG(INFO) << "node " << node->id << " " << (known ? "reconnected" : "joined")
                      << " from " << c.peer << " (" << node->total.ToString() << ")";
    capnp::MallocMessageBuilder message;
    auto reply = message.initRoot<proto::ControlReply>();
    reply.setRequestId(request_id);
    auto r = reply.initRegistered();
    r.setHeartbeatIntervalMs(static_cast<uint32_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(options_.heartbeat_interval)
            .count()));
    r.setClusterId(cluster_id_);
    Send(c, message);
  }

  void HandleHeartbeat(Conn& c, uint64_t request_id, proto::Heartbeat::Reader hb) {
    auto raw = hb.getNodeId();
    bool known = false;
    if (raw.size() == NodeId::kSize) {
      NodeId id = NodeId::FromBinary(
          std::string_view(reinterpret_cast<const char*>(raw.begin()), raw.size()));
      known = membership_.Heartbeat(id, DecodeResources(hb.getResourcesAvailable()),
                                    DecodeDemand(hb.getPendingDemand()));
      if (known && !c.node) {
        c.node = id;
        node_conn_[id] = c.id;
      }
    }
    counters_.heartbeats++;
    capnp::MallocMessageBuilder message;
    auto reply = message.initRoot<proto::ControlReply>();
    reply.setRequestId(request_id);
    auto ack = reply.initHeartbeatAck();
    ack.setKnown(known);
    if (known && hb.getWantView()) {
      // Only what changed since the version the node holds: the head's work per heartbeat
      // grows with the changes, not with the cluster.
      bool full = hb.getViewEpoch() != started_micros_ || hb.getViewVersion() == 0 ||
                  hb.getViewVersion() > membership_.version();
      auto view = ack.initView();
      view.setEpoch(started_micros_);
      view.setVersion(membership_.version());
      view.setFull(full);
      if (full) {
        auto nodes = view.initNodes(static_cast<unsigned>(membership_.nodes().size()));
        unsigned i = 0;
        for (auto& [id, node] : membership_.nodes()) EncodeNode(node, nodes[i++]);
      } else {
        auto changed = membership_.ChangedSince(hb.getViewVersion());
        auto nodes = view.initNodes(static_cast<unsigned>(changed.size()));
        for (unsigned i = 0; i < changed.size(); ++i) EncodeNode(*changed[i], nodes[i]);
      }
    }
    Send(c, message);
  }

  void HandleStatus(Conn& c, uint64_t request_id) {
    capnp::MallocMessageBuilder message;
    auto reply = message.initRoot<proto::ControlReply>();
    reply.setRequestId(request_id);
    auto s = reply.initStatus();
    s.setClusterId(cluster_id_);
    s.setHeadStartedMicros(started_micros_);
    s.setHeartbeatsReceived(counters_.heartbeats.load());
    s.setKvWaiters(static_cast<uint32_t>(waiters_.size()));
    s.setViewVersion(membership_.version());
    auto nodes = s.initNodes(static_cast<unsigned>(membership_.nodes().size()));
    unsigned i = 0;
    for (auto& [id, node] : membership_.nodes()) EncodeNode(node, nodes[i++]);
    Send(c, message);
  }

  void HandleKvPut(Conn& c, uint64_t request_id, proto::KvPut::Reader put) {
    std::string key = KvKey(put.getNamespace(), put.getKey());
    auto existing = store_->Get(ControlTable::kKeyValue, key);
    if (!existing.ok()) return SendError(c, request_id, existing.status(), false);
    bool existed = existing->has_value();
    if (!existed || put.getOverwrite()) {
      auto v = put.getValue();
      std::string value(reinterpret_cast<const char*>(v.begin()), v.size());
      Status st = store_->Put(ControlTable::kKeyValue, key, value);
      if (!st.ok()) return SendError(c, request_id, st, false);
      WakeWaiters(key, value);
    }
    capnp::MallocMessageBuilder message;
    auto reply = message.initRoot<proto::ControlReply>();
    reply.setRequestId(request_id);
    reply.setExisted(existed);
    Send(c, message);
  }

  void HandleKvGetDelete(Conn& c, uint64_t request_id, bool is_delete, proto::KvKey::Reader k) {
    std::string key = KvKey(k.getNamespace(), k.getKey());
    auto existing = store_->Get(ControlTable::kKeyValue, key);
    if (!existing.ok()) return SendError(c, request_id, existing.status(), false);
    capnp::MallocMessageBuilder message;
    auto reply = message.initRoot<proto::ControlReply>();
    reply.setRequestId(request_id);
    if (is_delete) {
      if (existing->has_value()) {
        Status st = store_->Delete(ControlTable::kKeyValue, key);
        if (!st.ok()) return SendError(c, request_id, st, false);
      }
      reply.setExisted(existing->has_value());
    } else {
      if (!existing->has_value()) {
        return SendError(c, request_id,
                         Status::NotFound("key '" + std::string(k.getKey().cStr()) +
                                          "' not found in namespace '" +
                                          std::string(k.getNamespace().cStr()) + "'"),
                         false);
      }
      reply.setValue(capnp::Data::Reader(reinterpret_cast<const uint8_t*>((*existing)->data()),
                                         (*existing)->size()));
    }
    Send(c, message);
  }

  void HandleKvList(Conn& c, uint64_t request_id, proto::KvList::Reader l) {
    constexpr uint32_t kMaxEntries = 10000;
    constexpr size_t kMaxBytes = 8u << 20;  // well under a frame
    std::string ns_prefix = KvKey(l.getNamespace(), "");
    std::string prefix = ns_prefix + std::string(l.getPrefix());
    std::string after = l.getStartAfter();
    std::string from = after.empty() ? prefix : std::max(prefix, ns_prefix + after);
    uint32_t limit =
        std::min<uint32_t>(l.getLimit() == 0 ? kMaxEntries : l.getLimit(), kMaxEntries);
    bool keys_only = l.getKeysOnly();
    std::vector<std::pair<std::string, std::string>> found;
    size_t bytes = 0;
    bool more = false;
    Status st = store_->ScanFrom(
        ControlTable::kKeyValue, from, [&](const std::string& key, const std::string& value) {
          if (key.compare(0, prefix.size(), prefix) != 0) return false;
          std::string k = key.substr(ns_prefix.size());
          if (!after.empty() && k <= after) return true;
          if (found.size() >= limit || bytes > kMaxBytes) {
            more = true;
            return false;
          }
          bytes += k.size() + (keys_only ? 0 : value.size());
          found.emplace_back(std::move(k), keys_only ? std::string() : value);
          return true;
        });
    if (!st.ok()) return SendError(c, request_id, st, false);
    capnp::MallocMessageBuilder message;
    auto reply = message.initRoot<proto::ControlReply>();
    reply.setRequestId(request_id);
    auto e = reply.initEntries();
    e.setMore(more);
    auto list = e.initEntries(static_cast<unsigned>(found.size()));
    for (unsigned i = 0; i < found.size(); ++i) {
      list[i].setKey(found[i].first);
      list[i].setValue(capnp::Data::Reader(reinterpret_cast<const uint8_t*>(found[i].second.data()),
                                           found[i].second.size()));
    }
    Send(c, message);
  }

  void HandleKvWait(Conn& c, uint64_t request_id, proto::KvWait::Reader w) {
    std::string key = KvKey(w.getNamespace(), w.getKey());
    auto existing = store_->Get(ControlTable::kKeyValue, key);
    if (!existing.ok()) return SendError(c, request_id, existing.status(), false);
    if (existing->has_value()) return SendValue(c, request_id, **existing);
    waiters_.emplace(
        key, Waiter{c.id, request_id, key,
                    SystemClock::Get().Now() + std::chrono::milliseconds(w.getTimeoutMs())});
  }

  void SendValue(Conn& c, uint64_t request_id, const std::string& value) {
    capnp::MallocMessageBuilder message;
    auto reply = message.initRoot<proto::ControlReply>();
    reply.setRequestId(request_id);
    reply.setValue(
        capnp::Data::Reader(reinterpret_cast<const uint8_t*>(value.data()), value.size()));
    Send(c, message);
  }

  // Answers the waits for `key` (found by key: a put costs what waits on it, not every wait).
  void WakeWaiters(const std::string& key, const std::string& value) {
    auto [first, last] = waiters_.equal_range(key);
    for (auto it = first; it != last; ++it) {
      auto conn = conns_.find(it->second.conn);
      if (conn != conns_.end()) SendValue(conn->second, it->second.request_id, value);
    }
    waiters_.erase(first, last);
  }

  void Housekeeping() {
    TimePoint now = SystemClock::Get().Now();
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

  HeadOptions options_;
  HeadCounters& counters_;
  std::unique_ptr<ControlStore> store_;
  Membership membership_;
  int listen_fd_;  // the event loop's once it started
  std::unique_ptr<EventLoop> loop_;
  std::atomic<bool> stop_{false};
  std::string cluster_id_;
  int64_t started_micros_ = 0;
  TimePoint last_housekeeping_{};
  TimePoint last_complaint_{};
  uint64_t suppressed_complaints_ = 0;
  std::unordered_map<NodeId, uint64_t> node_conn_;  // the connection each node registered on
  std::unordered_map<uint64_t, Conn> conns_;
  std::unordered_multimap<std::string, Waiter> waiters_;  // by KV key
};

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
