#include "runtime/transfer/object_transfer.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "runtime/base/logging.h"
#include "runtime/head/head_server.h"
#include "runtime/net/frame.h"
#include "runtime/object_store/store_protocol.h"
#include "runtime/proto/transfer.capnp.h"

namespace cumulus {

namespace {

constexpr size_t kMaxConnections = 64;
constexpr int kMaxUnauthenticated = 16;  // of those, still owing their hello
constexpr uint64_t kSendChunk = 64u << 20;
constexpr uint32_t kMaxRequestBytes = 4096;

Status Reply(int fd, const Status& st, uint64_t size) {
  capnp::MallocMessageBuilder m;
  auto r = m.initRoot<proto::TransferReply>();
  r.setCode(static_cast<uint16_t>(st.code()));
  r.setMessage(st.message());
  r.setSize(size);
  return WriteFrame(fd, m, SystemClock::Get().Now() + std::chrono::seconds(10));
}

}  // namespace

Result<std::unique_ptr<ObjectTransferServer>> ObjectTransferServer::Start(
    ObjectStore* store, const std::string& bind_host, uint16_t port, const std::string& token) {
  if (token.empty())
    return Status::InvalidArgument("the object transfer server needs the cluster token");
  std::unique_ptr<ObjectTransferServer> s(new ObjectTransferServer());
  s->store_ = store;
  s->token_ = token;
  CUMULUS_ASSIGN_OR_RETURN(s->listen_fd_, ListenTcp(bind_host, port, &s->port_));
  if (pipe2(s->wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Unavailable(std::string("pipe: ") +
                               std::strerror(errno));  // ~ closes listen_fd_
  }
  s->accept_thread_ = std::thread([p = s.get()] { p->AcceptLoop(); });
  return s;
}

ObjectTransferServer::~ObjectTransferServer() {
  stopping_ = true;
  char c = 'x';
  if (wake_[1] >= 0) {
    ssize_t ignored = write(wake_[1], &c, 1);
    (void)ignored;
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : conn_fds_) shutdown(fd, SHUT_RDWR);  // ends transfers in flight
  }
  for (auto& t : conn_threads_) {
    if (t.joinable()) t.join();
  }
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_[0] >= 0) close(wake_[0]);
  if (wake_[1] >= 0) close(wake_[1]);
}

void ObjectTransferServer::AcceptLoop() {
  while (!stopping_) {
    pollfd fds[2] = {{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) {
      CUMULUS_LOG(ERROR) << "object transfer server: poll failed (" << std::strerror(errno)
                         << "); no longer accepting pulls";
      return;
    }
    if (fds[0].revents) return;
    if (!(fds[1].revents & POLLIN)) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) {
        // Out of descriptors: the connection stays queued, so wait instead of spinning on it.
        pollfd wake{wake_[0], POLLIN, 0};
        poll(&wake, 1, 100);
      }
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    // Reap finished connections (their fd slot is -1).
    for (size_t i = 0; i < conn_threads_.size();) {
      if (conn_fds_[i] < 0) {
        conn_threads_[i].join();
        conn_threads_.erase(conn_threads_.begin() + static_cast<long>(i));
        conn_fds_.erase(conn_fds_.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
    if (conn_fds_.size() >= kMaxConnections) {
      close(fd);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    try {
      std::thread t([this, fd] { Serve(fd); });
      conn_fds_.push_back(fd);
      conn_threads_.push_back(std::move(t));
    } catch (const std::system_error&) {
      close(fd);  // no thread to serve it (thread limit): refuse this one
    }
  }
}

void ObjectTransferServer::Serve(int fd) {
  FrameDecoder decoder(kMaxRequestBytes);
  bool authed = false;
  if (unauthenticated_++ >= kMaxUnauthenticated) {
    // Slots are for transfers: a crowd of connections that never authenticate cannot hold them.
    unauthenticated_--;
    FinishConnection(fd);
    return;
  }
  ClientId client = next_client_++;
  while (!stopping_) {
    // Unauthenticated peers get 5 s to say hello; authenticated ones may idle for a while.
    auto deadline =
        SystemClock::Get().Now() + (authed ? std::chrono::seconds(300) : std::chrono::seconds(5));
    auto words = ReadFrame(fd, decoder, deadline);
    if (!words.ok()) break;
    try {
      capnp::ReaderOptions limits;
      limits.traversalLimitInWords = words->size() + 64;
      capnp::FlatArrayMessageReader reader(*words, limits);
      auto req = reader.getRoot<proto::TransferRequest>();
      if (!authed) {
        if (req.which() != proto::TransferRequest::HELLO || !TokensEqual(req.getHello(), token_)) {
          Status ignored =
              Reply(fd, Status::Unauthenticated("the cluster token is wrong or missing"), 0);
          (void)ignored;
          break;
        }
        authed = true;
        unauthenticated_--;
        if (!Reply(fd, Status(), 0).ok()) break;
        continue;
      }
      if (req.which() == proto::TransferRequest::FETCH) {
        if (!ServeFetch(fd, req.getFetch()).ok()) break;
        continue;
      }
      if (req.which() != proto::TransferRequest::PULL) {
        Status ignored = Reply(fd, Status::InvalidArgument("unknown transfer request"), 0);
        (void)ignored;
        break;
      }
      auto id = store_protocol::ParseObjectId(req.getPull());
      if (!id.ok()) {
        if (!Reply(fd, id.status(), 0).ok()) break;
        continue;
      }
      auto view = store_->Pin(*id, client);  // held until the bytes are sent
      if (!view.ok()) {
        if (!Reply(fd, view.status(), 0).ok()) break;
        continue;
      }
      Status st = Reply(fd, Status(), view->size);
      // A reader that trickles cannot keep the object pinned forever: the whole transfer must
      // go at 10 MB/s or better (plus 30 s), whatever the per-chunk progress.
      TimePoint end = SystemClock::Get().Now() + std::chrono::seconds(30) +
                      std::chrono::milliseconds(view->size / 10'000);
      for (uint64_t off = 0; st.ok() && off < view->size; off += kSendChunk) {
        if (SystemClock::Get().Now() > end) {
          st = Status::TimedOut("the puller reads too slowly");
          break;
        }
        st = SendAll(fd, view->data + off, std::min<uint64_t>(kSendChunk, view->size - off),
                     std::chrono::seconds(30));
      }
      Status ignored = store_->Unpin(*id, client);
      (void)ignored;
      if (!st.ok()) break;
      bytes_sent_ += view->size;
    } catch (const kj::Exception& e) {
      Status ignored = Reply(fd,
                             Status::InvalidArgument(std::string("malformed transfer request: ") +
                                                     e.getDescription().cStr()),
                             0);
      (void)ignored;
      break;
    }
  }
  if (!authed) unauthenticated_--;
  store_->ReleaseClient(client);
  FinishConnection(fd);
}

// A draining node asks this one to take an object: pull it from that node (the ordinary pull,
// restored there first if it was spilled) into this store, then answer. A copy already here is
// success. The reply says what happened; only a broken connection ends the conversation.
Status ObjectTransferServer::ServeFetch(int fd, proto::Fetch::Reader fetch) {
  auto id = store_protocol::ParseObjectId(fetch.getObject());
  if (!id.ok()) return Reply(fd, id.status(), 0);
  std::string source = fetch.getFrom().cStr();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!fetch_sources_.count(source)) {
      return Reply(fd,
                   Status::InvalidArgument("asked to take an object from " + source +
                                           ", which is not the object channel of an alive node "
                                           "of this cluster"),
                   0);
    }
  }
  auto from = ParseHostPort(source);
  if (!from.ok()) return Reply(fd, from.status(), 0);
  Status st = store_->Contains(*id) ? Status() : PullObject(*from, token_, *id, PullInto(*store_));
  if (st.code() == StatusCode::kAlreadyExists) st = Status();  // another pull brought it meanwhile
  if (st.ok()) fetched_++;
  return Reply(fd, st, 0);
}

void ObjectTransferServer::SetFetchSources(std::set<std::string> sources) {
  std::lock_guard<std::mutex> lock(mu_);
  fetch_sources_ = std::move(sources);
}

void ObjectTransferServer::FinishConnection(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int& f : conn_fds_) {
    if (f == fd) f = -1;  // the accept loop joins this thread later
  }
  close(fd);
}

namespace {
// Reads one reply frame; returns its status, and the size it announces.
Status ReadReply(int fd, FrameDecoder& decoder, Duration timeout, uint64_t* size) {
  CUMULUS_ASSIGN_OR_RETURN(auto words, ReadFrame(fd, decoder, SystemClock::Get().Now() + timeout));
  try {
    capnp::FlatArrayMessageReader reader(words);
    auto r = reader.getRoot<proto::TransferReply>();
    if (size) *size = r.getSize();
    return Status(static_cast<StatusCode>(r.getCode()), r.getMessage().cStr());
  } catch (const kj::Exception& e) {
    return Status::Internal(std::string("malformed transfer reply: ") + e.getDescription().cStr());
  }
}

// A connection to a node's object channel that has said hello with the cluster token (and had
// it accepted); closed when it goes.
struct TransferConnection {
  int fd = -1;
  FrameDecoder decoder{64u << 10};
  TransferConnection() = default;
  TransferConnection(const TransferConnection&) = delete;
  TransferConnection& operator=(const TransferConnection&) = delete;
  ~TransferConnection() {
    if (fd >= 0) close(fd);
  }
};

// Detaches a connection from its canceller (if any) when the call that attached it returns;
// declared after the connection, so that it runs before the descriptor is closed.
struct DetachOnExit {
  FetchCanceller* canceller;
  ~DetachOnExit() {
    if (canceller) canceller->Detach();
  }
};

// With `canceller`, the connection is attached to it as soon as it is made (so that a cancel
// also ends the hello); Cancelled if it was cancelled already.
Status OpenTransfer(const HostPort& to, const std::string& token, Duration timeout,
                    const std::string& where, TransferConnection* c,
                    FetchCanceller* canceller = nullptr) {
  auto fd = ConnectTcp(to, timeout);
  if (!fd.ok()) return fd.status().WithContext(where);
  c->fd = *fd;
  if (canceller && !canceller->Attach(c->fd)) return Status::Cancelled(where);
  capnp::MallocMessageBuilder m;
  m.initRoot<proto::TransferRequest>().setHello(token);
  CUMULUS_RETURN_IF_ERROR(
      WriteFrame(c->fd, m, SystemClock::Get().Now() + timeout).WithContext(where));
  return ReadReply(c->fd, c->decoder, timeout, nullptr).WithContext(where);
}

}  // namespace

Status PullObject(const HostPort& from, const std::string& token, const ObjectId& id,
                  const PullTarget& target, const PullOptions& options) {
  std::string where = "pulling object " + id.Hex() + " from " + from.ToString();
  FetchCanceller* canceller = options.canceller;
  const Status cancelled = Status::Cancelled(where + ": cancelled");
  if (canceller && canceller->cancelled()) return cancelled;
  TransferConnection c;
  DetachOnExit detach{canceller};  // before `c` closes the descriptor
  // What failed, or Cancelled where the failure came from a Cancel() shutting the connection.
  auto failed = [&](Status st) {
    return canceller && canceller->cancelled() ? cancelled : st.WithContext(where);
  };
  Status open = OpenTransfer(from, token, options.connect_timeout, where, &c, canceller);
  if (!open.ok()) return canceller && canceller->cancelled() ? cancelled : open;
  {
    capnp::MallocMessageBuilder m;
    m.initRoot<proto::TransferRequest>().setPull(store_protocol::IdBytes(id));
    Status sent = WriteFrame(c.fd, m, SystemClock::Get().Now() + options.idle_timeout);
    if (!sent.ok()) return failed(sent);
  }
  uint64_t size = 0;
  Status reply = ReadReply(c.fd, c.decoder, options.idle_timeout, &size);
  if (!reply.ok()) return failed(reply);
  CUMULUS_ASSIGN_OR_RETURN(MutableBuffer buf, target.create(id, size));
  // Bytes that arrived with the reply frame, then the rest straight into shared memory.
  size_t early = c.decoder.Take(reinterpret_cast<char*>(buf.data), size);
  Status st = RecvAll(c.fd, buf.data, size, options.idle_timeout, early);
  if (st.ok()) st = target.seal(id);
  if (!st.ok()) {
    Status ignored = target.abort(id);
    (void)ignored;
    return failed(st);
  }
  return Status();
}

void FetchCanceller::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
}

bool FetchCanceller::cancelled() {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool FetchCanceller::Attach(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return false;
  fd_ = fd;
  return true;
}

void FetchCanceller::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  fd_ = -1;
}

Status FetchObjects(const HostPort& to, const std::string& token, const std::vector<ObjectId>& ids,
                    const std::string& from, const FetchOptions& options,
                    const std::function<void(size_t)>& progress, std::vector<ObjectId>* gone) {
  std::string where = "asking " + to.ToString() + " to take objects from " + from;
  const Status cancelled = Status::Cancelled(where + ": cancelled (this node is stopping)");
  FetchCanceller* canceller = options.canceller;
  if (canceller && canceller->cancelled()) return cancelled;
  TransferConnection c;
  DetachOnExit detach{canceller};  // before `c` closes the descriptor
  Status open = OpenTransfer(to, token, options.connect_timeout, where, &c, canceller);
  if (!open.ok()) return canceller && canceller->cancelled() ? cancelled : open;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (canceller && canceller->cancelled()) return cancelled;
    capnp::MallocMessageBuilder m;
    auto f = m.initRoot<proto::TransferRequest>().initFetch();
    f.setObject(store_protocol::IdBytes(ids[i]));
    f.setFrom(from);
    Status st = WriteFrame(c.fd, m, SystemClock::Get().Now() + options.object_timeout);
    if (st.ok()) st = ReadReply(c.fd, c.decoder, options.object_timeout, nullptr);
    if (!st.ok() && canceller && canceller->cancelled()) return cancelled;
    if (st.code() == StatusCode::kNotFound && gone) {
      gone->push_back(ids[i]);  // freed at the sender meanwhile: nothing to hand over
    } else if (!st.ok()) {
      return st.WithContext("object " + ids[i].Hex() + ": " + where);
    }
    if (progress) progress(i + 1);
  }
  return Status();
}

}  // namespace cumulus
