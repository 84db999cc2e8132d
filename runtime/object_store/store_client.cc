#include "runtime/object_store/store_client.h"

#include <capnp/serialize.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "runtime/object_store/store_protocol.h"
#include "runtime/proto/store.capnp.h"

namespace cumulus {

namespace sp = store_protocol;

// One request/reply exchange. REQUIRES: the client's mutex is held.
class StoreClientCall {
 public:
  explicit StoreClientCall(StoreClient* c) : client_(c) {
    request_ = message_.initRoot<proto::StoreRequest>();
    request_.setRequestId(c->next_request_++);
  }
  proto::StoreRequest::Builder request() { return request_; }

  // Sends the request and reads the reply; `on_reply` runs on an OK reply.
  Status Run(const std::function<Status(proto::StoreReply::Reader, int fd)>& on_reply) {
    CUMULUS_RETURN_IF_ERROR(sp::Send(client_->sock_, message_).WithContext(client_->socket_path_));
    kj::Array<capnp::word> buffer =
        kj::heapArray<capnp::word>(sp::kMaxMessageBytes / sizeof(capnp::word));
    while (true) {
      auto packet = sp::Receive(client_->sock_, buffer);
      if (!packet.ok()) {
        return packet.status().WithContext("object store at " + client_->socket_path_);
      }
      if (packet->bytes == 0) {
        return Status::Unavailable("the object store at " + client_->socket_path_ +
                                   " closed the connection (did it exit?)");
      }
      bool stale = false;
      Status st = Parse(buffer, packet->bytes, packet->fd, on_reply, &stale);
      if (!stale) return st;
      // A late reply to an earlier request that timed out: skip it.
    }
  }

 private:
  Status Parse(kj::ArrayPtr<capnp::word> buffer, size_t bytes, int fd,
               const std::function<Status(proto::StoreReply::Reader, int fd)>& on_reply,
               bool* stale) {
    try {
      capnp::FlatArrayMessageReader reader(buffer.slice(0, bytes / sizeof(capnp::word)));
      auto reply = reader.getRoot<proto::StoreReply>();
      if (reply.getRequestId() != request_.getRequestId()) {
        if (fd >= 0) close(fd);
        *stale = true;
        return Status();
      }
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
  capnp::MallocMessageBuilder message_;
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
  std::unique_ptr<StoreClient> client(new StoreClient(sock, socket_path));
  std::lock_guard<std::mutex> lock(client->mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
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
    if (offset + size > region_->size()) {
      return Status::Internal("the object store returned a location outside its region");
    }
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
  std::lock_guard<std::mutex> lock(mu_);
  StoreClientCall call(this);
  call.request().setSeal(sp::IdBytes(id));
  return call.Run(NoReplyBody);
}

Status StoreClient::Abort(const ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  StoreClientCall call(this);
  call.request().setAbort(sp::IdBytes(id));
  return call.Run(NoReplyBody);
}

Status StoreClient::Put(const ObjectId& id, const void* data, uint64_t size, bool durable) {
  return PutBytes(*this, id, data, size, durable);
}

Result<ObjectBuffer> StoreClient::Get(const ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  StoreClientCall call(this);
  call.request().setGet(sp::IdBytes(id));
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  CUMULUS_RETURN_IF_ERROR(call.Run([&](proto::StoreReply::Reader reply, int fd) -> Status {
    if (fd >= 0) close(fd);
    auto loc = reply.getLocation();
    if (loc.getOffset() + loc.getSize() > region_->size()) {
      return Status::Internal("the object store returned a location outside its region");
    }
    data = region_->data() + loc.getOffset();
    size = loc.getSize();
    return Status();
  }));
  return ObjectBuffer(data, size, [this, id] {
    Status ignored = Release(id);
    (void)ignored;
  });
}

Status StoreClient::Release(const ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  StoreClientCall call(this);
  call.request().setRelease(sp::IdBytes(id));
  return call.Run(NoReplyBody);
}

Status StoreClient::Delete(const ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  StoreClientCall call(this);
  call.request().setDelete(sp::IdBytes(id));
  return call.Run(NoReplyBody);
}

Result<bool> StoreClient::Contains(const ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
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
