#include "runtime/object_store/store_server.h"

#include <capnp/serialize.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "runtime/base/logging.h"
#include "runtime/net/first_segment.h"
#include "runtime/object_store/store_protocol.h"
#include "runtime/proto/store.capnp.h"

namespace cumulus {

namespace sp = store_protocol;

namespace {

constexpr int kReleaseEveryMs = 1000;  // how often free memory may go back to the system

Result<sockaddr_un> SocketAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return Status::InvalidArgument("object store socket path '" + path + "' must be 1-" +
                                   std::to_string(sizeof(addr.sun_path) - 1) + " characters");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

bool SomeoneListens(const sockaddr_un& addr) {
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool live = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return live;
}

void FillStats(const ObjectStoreStats& s, size_t clients, proto::StoreStats::Builder out) {
  out.setCapacityBytes(s.capacity_bytes);
  out.setUsedBytes(s.used_bytes);
  out.setObjectsInMemory(s.objects_in_memory);
  out.setObjectsSpilled(s.objects_on_disk_only);
  out.setBytesSpilled(s.bytes_on_disk_only);
  out.setPinnedObjects(s.pinned_objects);
  out.setSpillCount(s.spill_count);
  out.setRestoreCount(s.restore_count);
  out.setClients(static_cast<uint32_t>(clients));
}

// A reply to get (or getWait): the pinned object's location, or the error.
Status SendGetReply(int fd, uint64_t request_id, const Result<MutableBuffer>& view) {
  capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
  auto reply = message.initRoot<proto::StoreReply>();
  reply.setRequestId(request_id);
  if (view.ok()) {
    auto loc = reply.initLocation();
    loc.setOffset(view->offset);
    loc.setSize(view->size);
  } else {
    reply.setCode(static_cast<uint16_t>(view.status().code()));
    reply.setMessage(view.status().message());
  }
  return sp::Send(fd, message);
}

TimePoint Now() { return SystemClock::Get().Now(); }

}  // namespace

Result<std::unique_ptr<StoreServer>> StoreServer::Start(ObjectStore* store,
                                                        const std::string& socket_path,
                                                        const StoreServerOptions& options) {
  CUMULUS_ASSIGN_OR_RETURN(sockaddr_un addr, SocketAddress(socket_path));
  if (SomeoneListens(addr)) {
    return Status::AlreadyExists("an object store is already serving at " + socket_path +
                                 "; stop it or choose another socket path");
  }
  unlink(socket_path.c_str());  // a stale file from a dead server
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable(std::string("socket: ") + std::strerror(errno));
  // Nobody can connect before listen(), so making the file 0600 in between leaves no window.
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      chmod(socket_path.c_str(), 0600) != 0 || listen(fd, 128) != 0) {
    Status st =
        Status::Unavailable("cannot listen on " + socket_path + ": " + std::strerror(errno));
    close(fd);
    return st;
  }
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(fd);
    return Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
  }
  std::unique_ptr<StoreServer> server(new StoreServer(store, socket_path, fd, wake, options));
  store->SetChangeListener([s = server.get()](const ObjectId& id) { s->OnStoreChange(id); });
  server->thread_ = std::thread([s = server.get()] { s->Run(); });
  return server;
}

StoreServer::StoreServer(ObjectStore* store, std::string socket_path, int listen_fd, int wake_fd[2],
                         const StoreServerOptions& options)
    : store_(store),
      socket_path_(std::move(socket_path)),
      listen_fd_(listen_fd),
      wake_read_(wake_fd[0]),
      wake_write_(wake_fd[1]),
      options_(options) {}

StoreServer::~StoreServer() {
  store_->SetChangeListener(nullptr);  // after this, no thread is in OnStoreChange
  stopping_.store(true);
  char c = 'x';
  ssize_t ignored = write(wake_write_, &c, 1);
  (void)ignored;
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
  close(wake_read_);
  close(wake_write_);
  unlink(socket_path_.c_str());
}

void StoreServer::Run() {
  std::map<int, ClientId> conns;  // fd -> client id
  ClientId next_client = 1;
  kj::Array<capnp::word> buffer =
      kj::heapArray<capnp::word>(sp::kMaxMessageBytes / sizeof(capnp::word));
  auto drop = [&](int fd) {
    DropWaiting(conns[fd]);
    store_->ReleaseClient(conns[fd]);
    close(fd);
    conns.erase(fd);
    clients_.store(conns.size());
  };
  std::vector<pollfd> fds;
  TimePoint next_release = Now();
  while (true) {
    fds.clear();
    fds.push_back({wake_read_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (auto& [fd, id] : conns) fds.push_back({fd, POLLIN, 0});
    int timeout = PollTimeoutMs(Now());
    timeout = timeout < 0 ? kReleaseEveryMs : std::min(timeout, kReleaseEveryMs);
    if (poll(fds.data(), fds.size(), timeout) < 0) {
      if (errno == EINTR) continue;
      CUMULUS_LOG(ERROR) << "object store server: poll failed: " << std::strerror(errno);
      break;
    }
    if (fds[0].revents) {
      char drain[64];
      while (read(wake_read_, drain, sizeof(drain)) > 0) {
      }
      if (stopping_.load()) break;
    }
    if (fds[1].revents & POLLIN) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        conns[fd] = next_client++;
        clients_.store(conns.size());
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      int fd = fds[i].fd;
      auto packet = sp::Receive(fd, buffer);
      if (!packet.ok() || packet->bytes == 0) {
        if (!packet.ok()) {
          rejected_++;
          CUMULUS_LOG(WARN) << "object store: closing client " << conns[fd] << ": "
                            << packet.status();
        }
        drop(fd);
        continue;
      }
      if (packet->fd >= 0) close(packet->fd);  // clients never send descriptors
      if (!Handle(fd, conns[fd], reinterpret_cast<const uint8_t*>(buffer.begin()), packet->bytes)) {
        drop(fd);
      }
    }
    AnswerChanged();
    AnswerExpired(Now());
    if (Now() >= next_release) {
      // Free memory goes back to the system once the store has been quiet for a second.
      store_->ReleaseFreeMemory(std::chrono::seconds(1));
      next_release = Now() + std::chrono::milliseconds(kReleaseEveryMs);
    }
  }
  for (auto& [fd, id] : conns) {
    DropWaiting(id);
    store_->ReleaseClient(id);
    close(fd);
  }
  clients_.store(0);
}

bool StoreServer::Handle(int fd, ClientId client, const uint8_t* bytes, size_t n) {
  capnp::MallocMessageBuilder reply_message(kFrameFirstSegmentWords);
  auto reply = reply_message.initRoot<proto::StoreReply>();
  int pass_fd = -1;
  bool keep = true;
  auto fail = [&](const Status& st) {
    reply.setCode(static_cast<uint16_t>(st.code()));
    reply.setMessage(st.message());
  };
  try {
    if (n % sizeof(capnp::word) != 0) {
      KJ_FAIL_REQUIRE("message length is not a multiple of 8 bytes", n);
    }
    kj::ArrayPtr<const capnp::word> words(reinterpret_cast<const capnp::word*>(bytes),
                                          n / sizeof(capnp::word));
    capnp::ReaderOptions limits;
    limits.traversalLimitInWords = sp::kMaxMessageBytes / sizeof(capnp::word);
    limits.nestingLimit = 8;
    capnp::FlatArrayMessageReader reader(words, limits);
    auto req = reader.getRoot<proto::StoreRequest>();
    reply.setRequestId(req.getRequestId());
    switch (req.which()) {
      case proto::StoreRequest::CONNECT: {
        auto c = reply.initConnected();
        c.setRegionSize(store_->region().size());
        const std::string& inc = store_->incarnation();
        c.setStoreIncarnation(
            capnp::Data::Reader(reinterpret_cast<const uint8_t*>(inc.data()), inc.size()));
        pass_fd = store_->region().fd();
        break;
      }
      case proto::StoreRequest::CREATE: {
        auto c = req.getCreate();
        auto id = sp::ParseObjectId(c.getObjectId());
        if (!id.ok()) {
          fail(id.status());
          break;
        }
        auto buf = store_->Create(*id, c.getSize(), c.getDurable(), client);
        if (!buf.ok()) {
          fail(buf.status());
          break;
        }
        auto loc = reply.initLocation();
        loc.setOffset(buf->offset);
        loc.setSize(buf->size);
        break;
      }
      case proto::StoreRequest::SEAL:
      case proto::StoreRequest::ABORT:
      case proto::StoreRequest::RELEASE:
      case proto::StoreRequest::DELETE:
      case proto::StoreRequest::CONTAINS:
      case proto::StoreRequest::GET: {
        auto which = req.which();
        capnp::Data::Reader raw = which == proto::StoreRequest::SEAL       ? req.getSeal()
                                  : which == proto::StoreRequest::ABORT    ? req.getAbort()
                                  : which == proto::StoreRequest::RELEASE  ? req.getRelease()
                                  : which == proto::StoreRequest::DELETE   ? req.getDelete()
                                  : which == proto::StoreRequest::CONTAINS ? req.getContains()
                                                                           : req.getGet();
        auto id = sp::ParseObjectId(raw);
        if (!id.ok()) {
          fail(id.status());
          break;
        }
        Status st;
        switch (which) {
          case proto::StoreRequest::SEAL:
            st = store_->Seal(*id, client);
            break;
          case proto::StoreRequest::ABORT:
            st = store_->Abort(*id, client);
            break;
          case proto::StoreRequest::RELEASE:
            st = store_->Unpin(*id, client);
            break;
          case proto::StoreRequest::DELETE:
            st = store_->Delete(*id);
            break;
          case proto::StoreRequest::CONTAINS:
            reply.setContains(store_->Contains(*id));
            break;
          default: {
            auto view = store_->Pin(*id, client);
            if (!view.ok()) {
              st = view.status();
              break;
            }
            auto loc = reply.initLocation();
            loc.setOffset(view->offset);
            loc.setSize(view->size);
          }
        }
        if (!st.ok()) fail(st);
        break;
      }
      case proto::StoreRequest::GET_WAIT: {
        auto g = req.getGetWait();
        auto id = sp::ParseObjectId(g.getObjectId());
        if (!id.ok()) {
          fail(id.status());
          break;
        }
        auto parked = waiting_per_client_.find(client);
        if (parked != waiting_per_client_.end() &&
            parked->second >= options_.max_waiting_gets_per_client) {
          fail(Status::ResourceExhausted(
              "cannot wait for object " + id->Hex() + ": this client already has " +
              std::to_string(parked->second) +
              " gets waiting, the most allowed; wait for some to be answered"));
          break;
        }
        // Watch before looking, so that a seal between the look and the parking is not missed.
        watching_++;
        auto view = store_->Pin(*id, client);
        if (!view.ok() && view.status().code() == StatusCode::kUnavailable &&
            g.getWaitMillis() > 0 && options_.max_waiting_gets_per_client > 0) {
          waiting_per_client_[client]++;
          waiting_.emplace(*id, WaitingGet{fd, client, req.getRequestId(), g.getWaitMillis(),
                                           Now() + std::chrono::milliseconds(g.getWaitMillis())});
          waiting_count_.store(waiting_.size());
          return true;  // answered later, by AnswerChanged or AnswerExpired
        }
        watching_--;
        if (!view.ok()) {
          fail(view.status());
          break;
        }
        auto loc = reply.initLocation();
        loc.setOffset(view->offset);
        loc.setSize(view->size);
        break;
      }
      case proto::StoreRequest::STATS:
        FillStats(store_->Stats(), clients_.load(), reply.initStats());
        break;
      default:
        fail(Status::InvalidArgument("unknown object store request (tag " +
                                     std::to_string(static_cast<int>(req.which())) + ")"));
        keep = false;
    }
  } catch (const kj::Exception& e) {
    rejected_++;
    CUMULUS_LOG(WARN) << "object store: malformed message from client " << client << " ("
                      << e.getDescription().cStr() << "); closing its connection";
    fail(Status::InvalidArgument(std::string("malformed object store message: ") +
                                 e.getDescription().cStr()));
    keep = false;
  }
  Status st = sp::Send(fd, reply_message, pass_fd);
  return keep && st.ok();
}

void StoreServer::OnStoreChange(const ObjectId& id) {
  if (watching_.load() == 0) return;
  std::lock_guard<std::mutex> lock(changed_mu_);
  changed_.push_back(id);
  if (!wake_written_) {
    wake_written_ = true;
    char c = 'c';
    ssize_t ignored = write(wake_write_, &c, 1);  // non-blocking; a full pipe wakes the server too
    (void)ignored;
  }
}

void StoreServer::Unpark(std::unordered_multimap<ObjectId, WaitingGet>::iterator it) {
  auto count = waiting_per_client_.find(it->second.client);
  if (count != waiting_per_client_.end() && --count->second == 0) waiting_per_client_.erase(count);
  waiting_.erase(it);
  watching_--;
  waiting_count_.store(waiting_.size());
}

void StoreServer::AnswerChanged() {
  std::vector<ObjectId> changed;
  {
    std::lock_guard<std::mutex> lock(changed_mu_);
    changed.swap(changed_);
    wake_written_ = false;
  }
  for (const ObjectId& id : changed) {
    auto [begin, end] = waiting_.equal_range(id);
    for (auto it = begin; it != end;) {
      auto view = store_->Pin(id, it->second.client);
      if (!view.ok() && view.status().code() == StatusCode::kUnavailable) {
        ++it;  // freed and created again, still unsealed: keep waiting
        continue;
      }
      WaitingGet answered = it->second;
      auto next = std::next(it);
      Unpark(it);
      it = next;
      // A failed send means the client went away: poll reports it and the connection is dropped.
      Status ignored = SendGetReply(answered.fd, answered.request_id, view);
      (void)ignored;
    }
  }
}

void StoreServer::AnswerExpired(TimePoint now) {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->second.deadline > now) {
      ++it;
      continue;
    }
    auto view = store_->Pin(it->first, it->second.client);
    if (!view.ok() && view.status().code() == StatusCode::kUnavailable) {
      view = Status::Unavailable("object " + it->first.Hex() +
                                 " is still being written (not sealed) after waiting " +
                                 std::to_string(it->second.wait_ms) + " ms");
    }
    WaitingGet answered = it->second;
    auto next = std::next(it);
    Unpark(it);
    it = next;
    Status ignored = SendGetReply(answered.fd, answered.request_id, view);
    (void)ignored;
  }
}

int StoreServer::PollTimeoutMs(TimePoint now) const {
  if (waiting_.empty()) return -1;
  TimePoint nearest = TimePoint::max();
  for (auto& [id, w] : waiting_) nearest = std::min(nearest, w.deadline);
  if (nearest <= now) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(nearest - now).count();
  return static_cast<int>(std::min<int64_t>(ms, 60'000));
}

void StoreServer::DropWaiting(ClientId client) {
  if (waiting_per_client_.count(client) == 0) return;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    auto next = std::next(it);
    if (it->second.client == client) Unpark(it);
    it = next;
  }
}

}  // namespace cumulus
