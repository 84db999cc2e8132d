#include "runtime/object_store/store_client.h"

#include <capnp/serialize.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>

#include "runtime/base/numeric.h"
#include "runtime/net/first_segment.h"
#include "runtime/object_store/store_protocol.h"
#include "runtime/proto/store.capnp.h"

namespace cumulus {

namespace sp = store_protocol;

struct StoreClient::PendingReply {
  bool done = false;
  kj::Array<capnp::word> words;  // the reply, when handed over by another caller
  int fd = -1;                   // a descriptor that came with it
};

// One request/reply exchange. Any number may run at once on one client.
class StoreClientCall {
 public:
  explicit StoreClientCall(StoreClient* c) : client_(c) {
    request_ = message_.initRoot<proto::StoreRequest>();
  }
  proto::StoreRequest::Builder request() { return request_; }

  // Sends the request and waits for its reply, up to the client's request timeout plus
  // `extra_wait`; `on_reply` runs on an OK reply.
  Status Run(const std::function<Status(proto::StoreReply::Reader, int fd)>& on_reply,
             Duration extra_wait = Duration::zero()) {
    StoreClient* c = client_;
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(c->request_timeout_ms_) + extra_wait;
    StoreClient::PendingReply mine;
    std::unique_lock<std::mutex> lock(c->mu_);
    uint64_t id = c->next_request_++;
    request_.setRequestId(id);
    c->pending_[id] = &mine;
    lock.unlock();
    // A packet goes out whole (SOCK_SEQPACKET): callers need not take turns to send.
    Status sent = sp::Send(c->sock_, message_).WithContext(c->socket_path_);
    lock.lock();
    if (!sent.ok()) {
      c->pending_.erase(id);
      if (sent.code() == StatusCode::kUnavailable) c->broken_ = true;  // the socket failed
      return sent;
    }
    kj::Array<capnp::word> buffer;
    size_t bytes = 0;
    while (!mine.done) {
      if (c->reading_) {
        if (c->replied_.wait_until(lock, deadline) == std::cv_status::timeout && !mine.done) {
          c->pending_.erase(id);
          return Status::TimedOut("the object store did not answer in time")
              .WithContext("object store at " + c->socket_path_);
        }
        continue;
      }
      // Nobody reads the socket: this caller does, for everyone, until its own reply comes.
      c->reading_ = true;
      lock.unlock();
      if (buffer.size() == 0) {
        buffer = kj::heapArray<capnp::word>(sp::kMaxMessageBytes / sizeof(capnp::word));
      }
      auto packet = ReadOne(buffer, deadline);
      lock.lock();
      c->reading_ = false;
      c->replied_.notify_all();  // another caller may read now
      if (!packet.ok() || packet->bytes == 0) {
        c->pending_.erase(id);
        // The socket failed, or the store closed it: not a request that took too long.
        if (packet.ok() || packet.status().code() == StatusCode::kUnavailable) c->broken_ = true;
        if (!packet.ok()) return packet.status().WithContext("object store at " + c->socket_path_);
        return Status::Unavailable("the object store at " + c->socket_path_ +
                                   " closed the connection (did it exit?)");
      }
      auto to = ReplyRequestId(buffer, packet->bytes);
      if (!to || *to == id) {  // one that cannot be read fails the reader's own request
        mine.done = true;
        mine.fd = packet->fd;
        bytes = packet->bytes;
        break;
      }
      auto other = to ? c->pending_.find(*to) : c->pending_.end();
      if (other == c->pending_.end()) {
        // A late reply to a request that timed out: skip it.
        if (packet->fd >= 0) close(packet->fd);
        continue;
      }
      other->second->words = kj::heapArray<capnp::word>(
          buffer.slice(0, packet->bytes / sizeof(capnp::word)).asConst());
      other->second->fd = packet->fd;
      other->second->done = true;
      c->pending_.erase(other);
    }
    c->pending_.erase(id);
    lock.unlock();
    if (bytes > 0) return Parse(buffer.slice(0, bytes / sizeof(capnp::word)), mine.fd, on_reply);
    return Parse(mine.words, mine.fd, on_reply);
  }

 private:
  // Waits until `deadline` (give or take 100 ms) for one packet.
  Result<sp::Packet> ReadOne(kj::ArrayPtr<capnp::word> buffer,
                             std::chrono::steady_clock::time_point deadline) {
    while (true) {
      auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return Status::TimedOut("the object store did not answer in time");
      if (left.count() + 100 >= client_->request_timeout_ms_) {
        // The socket's receive timeout (the request timeout) ends the wait in time: no poll
        // first, one system call less on every request.
        auto packet = sp::Receive(client_->sock_, buffer);
        if (packet.ok() || packet.status().code() != StatusCode::kTimedOut) return packet;
        continue;
      }
      pollfd p{client_->sock_, POLLIN, 0};
      int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 60'000)));
      if (n < 0 && errno != EINTR) {
        return Status::Unavailable(std::string("waiting for the object store socket: ") +
                                   std::strerror(errno));
      }
      if (n > 0) return sp::Receive(client_->sock_, buffer);
    }
  }

  // The request a reply answers, if the reply can be read.
  static std::optional<uint64_t> ReplyRequestId(kj::ArrayPtr<capnp::word> buffer, size_t bytes) {
    try {
      capnp::FlatArrayMessageReader reader(buffer.slice(0, bytes / sizeof(capnp::word)));
      return reader.getRoot<proto::StoreReply>().getRequestId();
    } catch (const kj::Exception&) {
      return std::nullopt;
    }
  }

  static Status Parse(kj::ArrayPtr<const capnp::word> words, int fd,
                      const std::function<Status(proto::StoreReply::Reader, int fd)>& on_reply) {
    try {
      capnp::FlatArrayMessageReader reader(words);
      auto reply = reader.getRoot<proto::StoreReply>();
      if (reply.getCode() != 0) {
        if (fd >= 0) close(fd);
        return Status(static_cast<StatusCode>(reply.getCode()), reply.getMessage().cStr());
      }
      return on_reply(reply, fd);
    } catch (const kj::Exception& e) {
      if (fd >= 0) close(fd);
      return Status::Internal(std::string("malformed reply from the object store: ") +
                              e.getDescription().cStr());
    }
  }

  StoreClient* client_;
  capnp::MallocMessageBuilder message_{kFrameFirstSegmentWords};
  proto::StoreRequest::Builder request_{nullptr};
};

namespace {
Status NoReplyBody(proto::StoreReply::Reader, int fd) {
  if (fd >= 0) close(fd);
  return Status();
}
}  // namespace

Result<std::unique_ptr<StoreClient>> StoreClient::Connect(const std::string& socket_path,
                                                          const StoreClientOptions& options) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof(addr.sun_path)) {
    return Status::InvalidArgument("object store socket path '" + socket_path +
                                   "' is too long or empty");
  }
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (sock < 0) return Status::Unavailable(std::string("socket: ") + std::strerror(errno));
  if (connect(sock, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    Status st = Status::Unavailable("cannot connect to the object store at " + socket_path + ": " +
                                    std::strerror(errno) + " (is the store running?)");
    close(sock);
    return st;
  }
  timeval tv{options.request_timeout_ms / 1000, (options.request_timeout_ms % 1000) * 1000};
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::unique_ptr<StoreClient> client(
      new StoreClient(sock, socket_path, options.request_timeout_ms));
  StoreClientCall call(client.get());
  call.request().setConnect(options.name);
  CUMULUS_RETURN_IF_ERROR(call.Run([&](proto::StoreReply::Reader reply, int fd) -> Status {
    if (reply.which() != proto::StoreReply::CONNECTED || fd < 0) {
      if (fd >= 0) close(fd);
      return Status::Internal(
          "the object store's connect reply carried no shared-memory descriptor");
    }
    auto c = reply.getConnected();
    auto inc = c.getStoreIncarnation();
    client->incarnation_.assign(reinterpret_cast<const char*>(inc.begin()), inc.size());
    CUMULUS_ASSIGN_OR_RETURN(client->region_, SharedRegion::MapReadOnly(fd, c.getRegionSize()));
    return Status();
  }));
  return client;
}

StoreClient::~StoreClient() {
  if (writable_base_) munmap(writable_base_, region_->size());
  close(sock_);  // the store releases our pins and aborts our unsealed objects
}

Result<MutableBuffer> StoreClient::Create(const ObjectId& id, uint64_t size, bool durable) {
  StoreClientCall call(this);
  auto c = call.request().initCreate();
  c.setObjectId(sp::IdBytes(id));
  c.setSize(size);
  c.setDurable(durable);
  MutableBuffer out;
  bool created = false;
  Status st = call.Run([&](proto::StoreReply::Reader reply, int fd) -> Status {
    if (fd >= 0) close(fd);
    created = true;
    uint64_t offset = reply.getLocation().getOffset();
    auto end = CheckedAdd<uint64_t>(offset, size);  // a wrapped sum would pass the check below
    if (!end || *end > region_->size()) {
      return Status::Internal("the object store returned a location outside its region");
    }
    std::lock_guard<std::mutex> lock(map_mu_);
    if (!writable_base_) {
      // One writable mapping of the whole region, made on first use and kept: pages a writer has
      // touched stay mapped, so writing a large object costs no page faults the second time.
      void* base =
          mmap(nullptr, region_->size(), PROT_READ | PROT_WRITE, MAP_SHARED, region_->fd(), 0);
      if (base == MAP_FAILED) {
        return Status::Unavailable(std::string("mapping the object store writable: ") +
                                   std::strerror(errno));
      }
      writable_base_ = static_cast<uint8_t*>(base);
    }
    out = MutableBuffer{writable_base_ + offset, size, offset};
    return Status();
  });
  if (!st.ok() && created) {
    // The store made the object but this process cannot write it: give the space back.
    StoreClientCall abort(this);
    abort.request().setAbort(sp::IdBytes(id));
    Status ignored = abort.Run(NoReplyBody);
    (void)ignored;
  }
  if (!st.ok()) return st;
  return out;
}

Status StoreClient::Seal(const ObjectId& id) {
  StoreClientCall call(this);
  call.request().setSeal(sp::IdBytes(id));
  return call.Run(NoReplyBody);
}

Status StoreClient::Abort(const ObjectId& id) {
  StoreClientCall call(this);
  call.request().setAbort(sp::IdBytes(id));
  return call.Run(NoReplyBody);
}

Status StoreClient::Put(const ObjectId& id, const void* data, uint64_t size, bool durable) {
  return PutBytes(*this, id, data, size, durable);
}

Result<ObjectBuffer> StoreClient::Get(const ObjectId& id) { return Get(id, Duration::zero()); }

Result<ObjectBuffer> StoreClient::Get(const ObjectId& id, Duration wait) {
  StoreClientCall call(this);
  auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(wait).count();
  if (wait_ms <= 0) {
    call.request().setGet(sp::IdBytes(id));
  } else {
    wait_ms = std::min<int64_t>(wait_ms, std::numeric_limits<uint32_t>::max());
    auto g = call.request().initGetWait();
    g.setObjectId(sp::IdBytes(id));
    g.setWaitMillis(static_cast<uint32_t>(wait_ms));
  }
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  CUMULUS_RETURN_IF_ERROR(call.Run(
      [&](proto::StoreReply::Reader reply, int fd) -> Status {
        if (fd >= 0) close(fd);
        auto loc = reply.getLocation();
        auto end = CheckedAdd<uint64_t>(loc.getOffset(), loc.getSize());
        if (!end || *end > region_->size()) {
          return Status::Internal("the object store returned a location outside its region");
        }
        data = region_->data() + loc.getOffset();
        size = loc.getSize();
        return Status();
      },
      std::chrono::milliseconds(std::max<int64_t>(wait_ms, 0))));
  return ObjectBuffer(data, size, [this, id] {
    Status ignored = Release(id);
    (void)ignored;
  });
}

Status StoreClient::Release(const ObjectId& id) {
  StoreClientCall call(this);
  call.request().setRelease(sp::IdBytes(id));
  return call.Run(NoReplyBody);
}

Status StoreClient::Delete(const ObjectId& id) {
  StoreClientCall call(this);
  call.request().setDelete(sp::IdBytes(id));
  return call.Run(NoReplyBody);
}

Result<bool> StoreClient::Contains(const ObjectId& id) {
  StoreClientCall call(this);
  call.request().setContains(sp::IdBytes(id));
  bool contains = false;
  CUMULUS_RETURN_IF_ERROR(call.Run([&](proto::StoreReply::Reader reply, int fd) -> Status {
    if (fd >= 0) close(fd);
    contains = reply.getContains();
    return Status();
  }));
  return contains;
}

Result<ObjectStoreStats> StoreClient::Stats() {
  StoreClientCall call(this);
  call.request().setStats();
  ObjectStoreStats out;
  CUMULUS_RETURN_IF_ERROR(call.Run([&](proto::StoreReply::Reader reply, int fd) -> Status {
    if (fd >= 0) close(fd);
    auto s = reply.getStats();
    out.capacity_bytes = s.getCapacityBytes();
    out.used_bytes = s.getUsedBytes();
    out.objects_in_memory = s.getObjectsInMemory();
    out.objects_on_disk_only = s.getObjectsSpilled();
    out.bytes_on_disk_only = s.getBytesSpilled();
    out.pinned_objects = s.getPinnedObjects();
    out.spill_count = s.getSpillCount();
    out.restore_count = s.getRestoreCount();
    return Status();
  }));
  return out;
}

}  // namespace cumulus
