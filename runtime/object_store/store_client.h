// StoreClient: how a worker or driver process uses its node's object store (see StoreServer).
//
// Get returns a view straight into the store's shared memory, mapped read-only into this process:
// no bytes are copied. Create returns a writable view of the new object's space (through a
// writable mapping of the region made on the first Create); Seal publishes it. The read-only
// mapping guards readers against stray writes through a view; it is not a security boundary
// between processes of the same user (the socket's 0600 mode is).
// The client must outlive the ObjectBuffers it returns. Thread-safe (requests are serialized).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cumulus/ids.h"
#include "cumulus/status.h"
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
  Status Delete(const ObjectId& id);
  Result<bool> Contains(const ObjectId& id);
  Result<ObjectStoreStats> Stats();

  // The store's memory, mapped read-only.
  const SharedRegion& region() const { return *region_; }
  const std::string& store_incarnation() const { return incarnation_; }

 private:
  StoreClient(int sock, std::string socket_path)
      : sock_(sock), socket_path_(std::move(socket_path)) {}
  Status Release(const ObjectId& id);

  int sock_;
  std::string socket_path_;
  std::unique_ptr<SharedRegion> region_;
  std::string incarnation_;
  std::mutex mu_;
  uint64_t next_request_ = 1;
  uint8_t* writable_base_ = nullptr;  // the region mapped writable, once this client writes
  friend class StoreClientCall;
};

}  // namespace cumulus
