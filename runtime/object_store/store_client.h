// StoreClient: how a worker or driver process uses its node's object store (see StoreServer).
//
// Get returns a view straight into the store's shared memory, mapped read-only into this process:
// no bytes are copied. Create returns a writable view of the new object's space (through a
// writable mapping of the region made on the first Create); Seal publishes it. The read-only
// mapping guards readers against stray writes through a view; it is not a security boundary
// between processes of the same user (the socket's 0600 mode is).
// The client must outlive the ObjectBuffers it returns. Thread-safe: threads share the connection,
// each request waits for its own reply (a get waiting for a seal holds up no other request).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/object_store/object_store.h"
#include "runtime/object_store/shared_region.h"

namespace cumulus {

struct StoreClientOptions {
  std::string name = "client";      // shows in the store's logs
  int request_timeout_ms = 30'000;  // a request unanswered this long fails with TimedOut
};

class StoreClient {
 public:
  static Result<std::unique_ptr<StoreClient>> Connect(const std::string& socket_path,
                                                      const StoreClientOptions& options = {});
  ~StoreClient();

  Result<MutableBuffer> Create(const ObjectId& id, uint64_t size, bool durable = false);
  Status Seal(const ObjectId& id);
  Status Abort(const ObjectId& id);
  Status Put(const ObjectId& id, const void* data, uint64_t size, bool durable = false);

  // A pinned, zero-copy view of a sealed object (restored from disk first if it was spilled).
  Result<ObjectBuffer> Get(const ObjectId& id);
  // As Get, but an object that exists and is still being written (by another thread or process)
  // is waited for, up to `wait` (whole milliseconds): it is returned once sealed; NotFound if it is
  // aborted or its creator goes away first; Unavailable if it is still unsealed when the wait is
  // over. The store answers as it happens (no polling). ResourceExhausted if this client already
  // has the most gets waiting that the store allows (1,024 by default).
  Result<ObjectBuffer> Get(const ObjectId& id, Duration wait);
  Status Delete(const ObjectId& id);
  Result<bool> Contains(const ObjectId& id);
  Result<ObjectStoreStats> Stats();

  // True once the connection to the store has broken (the store, or its node, exited): no request
  // on this client succeeds any more, and what it held can no longer be read through it.
  bool broken() const { return broken_.load(std::memory_order_relaxed); }

  // The store's memory, mapped read-only.
  const SharedRegion& region() const { return *region_; }
  const std::string& store_incarnation() const { return incarnation_; }

 private:
  struct PendingReply;  // a request sent and not yet answered

  StoreClient(int sock, std::string socket_path, int request_timeout_ms)
      : sock_(sock),
        socket_path_(std::move(socket_path)),
        request_timeout_ms_(request_timeout_ms) {}
  Status Release(const ObjectId& id);

  const int sock_;
  const std::string socket_path_;
  const int request_timeout_ms_;
  std::unique_ptr<SharedRegion> region_;  // set by Connect, then never changed
  std::string incarnation_;               // set by Connect, then never changed

  // Replies are read by one waiting caller at a time (the reader), who hands each to the caller
  // whose request it answers: replies to waiting gets come out of order.
  std::mutex mu_;
  std::condition_variable replied_;  // a reply was handed over, or the reader stepped down
  uint64_t next_request_ = 1;        // guarded by mu_
  std::unordered_map<uint64_t, PendingReply*> pending_;  // guarded by mu_
  bool reading_ = false;                                 // guarded by mu_
  std::atomic<bool> broken_{false};

  std::mutex map_mu_;
  uint8_t* writable_base_ = nullptr;  // the region mapped writable, once this client writes
  friend class StoreClientCall;
};

}  // namespace cumulus
