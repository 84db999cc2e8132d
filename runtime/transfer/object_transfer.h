// The bulk byte channel that moves objects between nodes: a Get on one node pulls an object that
// lives in another node's store over TCP, straight from the sender's shared memory into the
// receiver's (no copy in user space on either side, no control-plane messages in the way).
//
// Each node runs an ObjectTransferServer on its --bind address. Connections must authenticate with
// the cluster token first (at most 16 of the 64 connection slots may be waiting to). A pull pins
// the object while its bytes stream, so it cannot be evicted or freed mid-transfer; spilled
// objects are restored first; a puller slower than 10 MB/s is cut off so pins cannot be held
// hostage.
//
// Limits: authentication is one-way (the puller proves the token; the server does not prove
// itself) and the bytes carry no end-to-end checksum beyond TCP's; both belong with TLS.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/net/tcp.h"
#include "runtime/object_store/object_store.h"
#include "runtime/proto/transfer.capnp.h"

namespace cumulus {

class ObjectTransferServer {
 public:
  // Serves `store` (which must outlive the server) on bind_host:port (0 picks a port).
  static Result<std::unique_ptr<ObjectTransferServer>> Start(ObjectStore* store,
                                                             const std::string& bind_host,
                                                             uint16_t port,
                                                             const std::string& token);
  ~ObjectTransferServer();  // stops accepting and ends every transfer in flight

  uint16_t port() const { return port_; }
  uint64_t bytes_sent() const { return bytes_sent_.load(); }
  uint64_t objects_fetched() const { return fetched_.load(); }  // taken from draining nodes
  // The object channels (host:port) a `fetch` may name as its source: those of the alive nodes
  // in the cluster's view, set by the node as its view changes. A fetch naming any other address
  // is refused, so that the token does not make this node connect wherever a request says.
  void SetFetchSources(std::set<std::string> sources);

 private:
  ObjectTransferServer() = default;
  void AcceptLoop();
  void Serve(int fd);
  void FinishConnection(int fd);
  Status ServeFetch(int fd, proto::Fetch::Reader fetch);  // an error: the connection broke

  ObjectStore* store_ = nullptr;
  std::string token_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::atomic<uint64_t> bytes_sent_{0};
  std::atomic<uint64_t> fetched_{0};
  std::atomic<uint64_t> next_client_{1ull << 40};  // pins are held under these client ids
  std::mutex mu_;
  std::set<std::string> fetch_sources_;  // guarded by mu_
  std::vector<int> conn_fds_;
  std::vector<std::thread> conn_threads_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> unauthenticated_{0};
  std::thread accept_thread_;
};

// Where a pulled object goes: anything with the store's Create/Seal/Abort (ObjectStore on the node
// itself, StoreClient from another local process).
struct PullTarget {
  std::function<Result<MutableBuffer>(const ObjectId&, uint64_t)> create;
  std::function<Status(const ObjectId&)> seal;
  std::function<Status(const ObjectId&)> abort;
};
template <typename Store>
PullTarget PullInto(Store& store) {
  return PullTarget{[&store](const ObjectId& id, uint64_t size) { return store.Create(id, size); },
                    [&store](const ObjectId& id) { return store.Seal(id); },
                    [&store](const ObjectId& id) { return store.Abort(id); }};
}

// Lets another thread end a FetchObjects or a PullObject under way (a node that stops in the
// middle of a handoff; Ctrl-C while `cumulus call` reads a large result): Cancel() shuts its
// connection down, so the call returns Cancelled at once instead of waiting for the other side
// (for FetchObjects, what the taker answered before counts, through `progress`; a pull aborts
// its partial object). A connect under way is not interrupted: a Cancel() then ends the call once
// the connect ends, within the options' connect_timeout. Thread-safe. A call started after
// Cancel() returns Cancelled without connecting.
class FetchCanceller {
 public:
  void Cancel();
  bool cancelled();
  // For FetchObjects and PullObject: the connection to shut down on Cancel (false if cancelled
  // already), and its end.
  bool Attach(int fd);
  void Detach();

 private:
  std::mutex mu_;
  int fd_ = -1;
  bool cancelled_ = false;
};

struct PullOptions {
  Duration connect_timeout = std::chrono::seconds(5);
  Duration idle_timeout = std::chrono::seconds(30);  // no byte for this long: TimedOut
  // With one, another thread may end the pull (FetchCanceller::Cancel); must outlive the call.
  FetchCanceller* canceller = nullptr;
};

// Copies object `id` from the node serving at `from` into `target`. On any failure the partial
// object is aborted: the target never holds a sealed, incomplete object.
Status PullObject(const HostPort& from, const std::string& token, const ObjectId& id,
                  const PullTarget& target, const PullOptions& options = {});

struct FetchOptions {
  // With one, another thread may end the call (FetchCanceller::Cancel); must outlive the call.
  FetchCanceller* canceller = nullptr;
  Duration connect_timeout = std::chrono::seconds(5);
  // One object, from the request to the answer: the receiving node pulls it meanwhile (a pull
  // slower than 10 MB/s is cut off by the sender, so this bounds a stuck one).
  Duration object_timeout = std::chrono::minutes(10);
};

// Asks the node whose object channel is `to` to take each of `ids` from the node at `from`
// (host:port of the caller's own channel): it pulls them one after another over the ordinary
// pull and answers each. OK once every one is held there; the first refusal (its store is
// full: ResourceExhausted; the object is gone here: NotFound) or broken connection is the
// error, naming the object. `progress` (optional) is called with how many are done. With
// `gone`, an object the sender no longer has (NotFound: freed meanwhile) is put there instead of
// being an error.
Status FetchObjects(const HostPort& to, const std::string& token, const std::vector<ObjectId>& ids,
                    const std::string& from, const FetchOptions& options = {},
                    const std::function<void(size_t)>& progress = nullptr,
                    std::vector<ObjectId>* gone = nullptr);

}  // namespace cumulus
