// The object channel between nodes (runtime/proto/transfer.capnp, runtime/transfer/): both ends.
//   server: a real ObjectTransferServer in this process, sent an authenticated connection's worth
//           of arbitrary bytes (frames of TransferRequest, or anything else);
//   client: PullObject against a fake sender that answers with arbitrary bytes (the reply frame and
//           the object's bytes), into a real ObjectStore: it must fail cleanly or store exactly
//           what was announced, never a partial object.
//
// Input: byte 0 picks the end (even: server, odd: client), the rest is what the peer sends.
#include <capnp/message.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <memory>
#include <mutex>
#include <thread>

#include "runtime/base/logging.h"
#include "runtime/base/temp_dir.h"
#include "runtime/head/head_server.h"
#include "runtime/net/tcp.h"
#include "runtime/object_store/object_store.h"
#include "runtime/object_store/store_protocol.h"
#include "runtime/proto/transfer.capnp.h"
#include "runtime/transfer/object_transfer.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

using namespace cumulus;

constexpr char kToken[] = "fuzz-token";
ObjectId Known() { return ObjectId::FromBinary(std::string(ObjectId::kSize, '\x01')); }
ObjectId Pulled() { return ObjectId::FromBinary(std::string(ObjectId::kSize, '\x03')); }

std::string HelloFrame() {
  capnp::MallocMessageBuilder m;
  m.initRoot<proto::TransferRequest>().setHello(kToken);
  return EncodeFrame(m);
}

std::vector<std::string> Seeds() {
  std::vector<std::string> out;
  auto pull = [](const ObjectId& id) {
    capnp::MallocMessageBuilder m;
    m.initRoot<proto::TransferRequest>().setPull(store_protocol::IdBytes(id));
    return EncodeFrame(m);
  };
  out.push_back(std::string(1, '\0') + pull(Known()) + pull(Pulled()));
  out.push_back(std::string(1, '\0') + HelloFrame() + pull(Known()));
  auto reply = [](StatusCode code, const char* message, uint64_t size) {
    capnp::MallocMessageBuilder m;
    auto r = m.initRoot<proto::TransferReply>();
    r.setCode(static_cast<uint16_t>(code));
    r.setMessage(message);
    r.setSize(size);
    return EncodeFrame(m);
  };
  out.push_back(std::string(1, '\1') + reply(StatusCode::kOk, "", 0) +
                reply(StatusCode::kOk, "", 5) + "hello");
  out.push_back(std::string(1, '\1') + reply(StatusCode::kOk, "", 0) +
                reply(StatusCode::kOk, "", 100) + "short");
  out.push_back(std::string(1, '\1') + reply(StatusCode::kUnauthenticated, "no", 0));
  out.push_back(std::string(1, '\1') + reply(StatusCode::kOk, "", 0) +
                reply(StatusCode::kNotFound, "not here", 0));
  return out;
}

struct World {
  TempDir dir{"cumulus-fuzz-transfer"};
  std::unique_ptr<ObjectStore> store;
  std::unique_ptr<ObjectTransferServer> server;
  // The fake sender for the client end: one connection at a time.
  int listen_fd = -1;
  uint16_t fake_port = 0;
  std::mutex mu;
  std::string answer;  // what the fake sender writes to the next connection
  std::thread fake;
};

void FakeSender(World* w) {
  while (true) {
    int fd = accept4(w->listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::string answer;
    {
      std::lock_guard<std::mutex> lock(w->mu);
      answer = w->answer;
    }
    // Write everything, then read until the puller closes (closing first could reset the
    // connection and drop bytes the puller has not read yet).
    fuzz::SendAllThenShutdown(fd, answer);
    char buf[4096];
    while (recv(fd, buf, sizeof(buf), 0) > 0) {
    }
    close(fd);
  }
}

World& TheWorld() {
  // Stopped by an exit handler registered after RocksDB's own statics exist, so that it runs
  // before they are destroyed (a static World would be destroyed after them). The fake sender's
  // thread is left blocked in accept.
  static World& w = *new World;
  static bool started = [] {
    ObjectStoreOptions o;
    o.directory = w.dir.path();
    o.memory_capacity = 1 << 20;
    o.min_free_disk_bytes = 0;
    auto store = ObjectStore::Open(o);
    if (!store.ok()) std::abort();
    w.store = std::move(*store);
    if (!w.store->Put(Known(), "known bytes", 11).ok()) std::abort();
    auto server = ObjectTransferServer::Start(w.store.get(), "127.0.0.1", 0, kToken);
    if (!server.ok()) std::abort();
    w.server = std::move(*server);
    w.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(w.listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(w.listen_fd, 4) != 0 ||
        getsockname(w.listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      std::abort();
    }
    w.fake_port = ntohs(addr.sin_port);
    w.fake = std::thread(FakeSender, &w);
    w.fake.detach();
    std::atexit([] {
      w.server.reset();
      w.store.reset();
      std::error_code ec;
      std::filesystem::remove_all(w.dir.path(), ec);
    });
    return true;
  }();
  (void)started;
  return w;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  cumulus::fuzz::MaybeMakeSeeds(argc, argv, Seeds);
  cumulus::SetLogLevel(cumulus::LogLevel::kError);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  World& w = TheWorld();
  std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 0) {
    auto fd = ConnectTcp(HostPort{"127.0.0.1", w.server->port()}, std::chrono::seconds(5));
    if (!fd.ok()) std::abort();
    fuzz::SendAllThenShutdown(*fd, HelloFrame() + bytes);
    fuzz::DrainUntilClosed(*fd);
    close(*fd);
    return 0;
  }
  {
    std::lock_guard<std::mutex> lock(w.mu);
    w.answer = bytes;
  }
  PullOptions options;
  options.connect_timeout = std::chrono::seconds(5);
  options.idle_timeout = std::chrono::seconds(5);
  Status st =
      PullObject(HostPort{"127.0.0.1", w.fake_port}, kToken, Pulled(), PullInto(*w.store), options);
  if (st.ok()) {
    // Sealed: it must hold what the reply announced; then make room for the next input.
    if (!w.store->Contains(Pulled())) __builtin_trap();
    if (!w.store->Delete(Pulled()).ok()) __builtin_trap();
  } else if (w.store->Contains(Pulled())) {
    __builtin_trap();  // a failed pull left a sealed object behind
  }
  return 0;
}
