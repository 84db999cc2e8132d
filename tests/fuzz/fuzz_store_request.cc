// The object store's local protocol (runtime/proto/store.capnp): a real StoreServer over a real
// ObjectStore in this process, sent arbitrary packets on a SOCK_SEQPACKET connection, as a local
// process could. It must answer or close the connection, never crash, hang or leak pins (each
// input's connection closes at its end, which releases what it held).
//
// Input: packets, each a little-endian u16 length and that many bytes.
#include <capnp/message.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <memory>

#include "runtime/base/logging.h"
#include "runtime/base/temp_dir.h"
#include "runtime/object_store/object_store.h"
#include "runtime/object_store/store_protocol.h"
#include "runtime/object_store/store_server.h"
#include "runtime/proto/store.capnp.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

using namespace cumulus;

// Sealed in the store before the first input, so that gets and releases find something.
ObjectId Known() { return ObjectId::FromBinary(std::string(ObjectId::kSize, '\x01')); }
ObjectId Fresh() { return ObjectId::FromBinary(std::string(ObjectId::kSize, '\x02')); }

std::string Packet(capnp::MessageBuilder& m) {
  std::string bytes = fuzz::MessageBytes(m);
  std::string out(2, '\0');
  out[0] = static_cast<char>(bytes.size() & 0xff);
  out[1] = static_cast<char>(bytes.size() >> 8);
  return out + bytes;
}

template <typename F>
std::string Request(uint64_t id, F fill) {
  capnp::MallocMessageBuilder m;
  auto req = m.initRoot<proto::StoreRequest>();
  req.setRequestId(id);
  fill(req);
  return Packet(m);
}

std::vector<std::string> Seeds() {
  ObjectId known_id = Known(), fresh_id = Fresh();
  auto known = store_protocol::IdBytes(known_id);
  auto fresh = store_protocol::IdBytes(fresh_id);
  std::string connect = Request(1, [](auto r) { r.setConnect("fuzz"); });
  std::vector<std::string> out;
  out.push_back(connect + Request(2, [&](auto r) { r.setGet(known); }) +
                Request(3, [&](auto r) { r.setRelease(known); }) +
                Request(4, [&](auto r) { r.setContains(known); }) +
                Request(5, [](auto r) { r.setStats(); }));
  out.push_back(connect +
                Request(2,
                        [&](auto r) {
                          auto c = r.initCreate();
                          c.setObjectId(fresh);
                          c.setSize(100);
                        }) +
                Request(3, [&](auto r) { r.setSeal(fresh); }) +
                Request(4, [&](auto r) { r.setDelete(fresh); }));
  out.push_back(connect +
                Request(2,
                        [&](auto r) {
                          auto c = r.initCreate();
                          c.setObjectId(fresh);
                          c.setSize(10);
                        }) +
                Request(3,
                        [&](auto r) {
                          auto g = r.initGetWait();
                          g.setObjectId(fresh);
                          g.setWaitMillis(50);
                        }) +
                Request(4, [&](auto r) { r.setAbort(fresh); }));
  out.push_back(Request(9, [&](auto r) {
    auto g = r.initGetWait();
    g.setObjectId(known);
    g.setWaitMillis(10);
  }));
  return out;
}

struct Server {
  TempDir dir{"cumulus-fuzz-store"};
  std::unique_ptr<ObjectStore> store;
  std::unique_ptr<StoreServer> server;
};

Server& TheServer() {
  // Stopped by an exit handler registered after RocksDB's own statics exist, so that it runs
  // before they are destroyed (a static Server would be destroyed after them).
  static Server& s = *new Server;
  static bool started = [] {
    ObjectStoreOptions o;
    o.directory = s.dir.path();
    o.memory_capacity = 1 << 20;
    o.min_free_disk_bytes = 0;
    auto store = ObjectStore::Open(o);
    if (!store.ok()) {
      std::fprintf(stderr, "cannot open a store: %s\n", store.status().ToString().c_str());
      std::abort();
    }
    s.store = std::move(*store);
    Status st = s.store->Put(Known(), "known", 5);
    if (!st.ok()) std::abort();
    auto server = StoreServer::Start(s.store.get(), s.dir.path() + "/store.sock");
    if (!server.ok()) {
      std::fprintf(stderr, "cannot start a store server: %s\n", server.status().ToString().c_str());
      std::abort();
    }
    s.server = std::move(*server);
    std::atexit([] {
      s.server.reset();
      s.store.reset();
      std::error_code ec;
      std::filesystem::remove_all(s.dir.path(), ec);
    });
    return true;
  }();
  (void)started;
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  cumulus::fuzz::MaybeMakeSeeds(argc, argv, Seeds);
  cumulus::SetLogLevel(cumulus::LogLevel::kError);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Server& s = TheServer();
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", s.server->socket_path().c_str());
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) std::abort();
  size_t off = 0;
  while (off + 2 <= size) {
    size_t n = data[off] | (static_cast<size_t>(data[off + 1]) << 8);
    off += 2;
    n = std::min(n, size - off);
    // A packet the server closes the connection over fails to send: later ones are moot.
    if (send(fd, data + off, n, MSG_NOSIGNAL) < 0) break;
    off += n;
  }
  shutdown(fd, SHUT_WR);
  // Replies carry the region's descriptor after connect: recv without control data closes it.
  fuzz::DrainUntilClosed(fd);
  close(fd);
  return 0;
}
