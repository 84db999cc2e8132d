// ObjectStore: one per node. Immutable objects in a shared-memory tier, spilled to a RocksDB tier
// on local disk under memory pressure and restored on the next read.
//
// Life of an object: Create (space reserved, invisible to readers) -> write the bytes -> Seal
// (immutable and visible). Get pins a sealed object: a pinned object is never evicted, and the
// pointer stays valid until the pin is released. Delete frees an object once nobody holds a pin.
//
// Every pin and every unsealed object belongs to a client (ClientId); ReleaseClient drops all of
// a client's pins and aborts its unsealed objects, which is what the socket server does when a
// process's connection closes (the process died or exited). In-process callers use kLocalClient.
//
// Thread-safe: one mutex guards the index. Spills and restores run under it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/object_store/region_allocator.h"
#include "runtime/object_store/shared_region.h"
#include "runtime/object_store/spill_store.h"

namespace cumulus {

using ClientId = uint64_t;
constexpr ClientId kLocalClient = 0;

struct ObjectStoreOptions {
  std::string directory;          // required; the RocksDB tier lives in directory/objects.db
  uint64_t memory_capacity = 0;   // bytes of shared memory; 0 means 30% of physical RAM
  bool prefault = false;          // touch every page at start (see SharedRegion::Create)
  uint64_t min_blob_size = 4096;  // RocksDB tier: values this big or bigger go to blob files
  uint64_t min_free_disk_bytes = 256ull << 20;  // disk tier refuses writes that leave less free
  Clock* clock = &SystemClock::Get();
};

struct ObjectStoreStats {
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;         // bytes of the memory tier allocated to objects (exact)
  uint64_t objects_in_memory = 0;  // sealed or being written
  uint64_t objects_on_disk_only = 0;
  uint64_t bytes_on_disk_only = 0;
  uint64_t pinned_objects = 0;
  uint64_t spill_count = 0;        // objects moved from memory to disk since start
  uint64_t restore_count = 0;      // objects read back from disk since start
  uint64_t recovered_durable = 0;  // durable objects found on disk at start
  uint64_t dropped_at_start = 0;   // non-durable spill copies of an earlier run, deleted at start
};

// A writable view of an object being created. Seal or Abort it.
struct MutableBuffer {
  uint8_t* data = nullptr;
  uint64_t size = 0;
  uint64_t offset = 0;  // into the shared region
};

// A pinned, read-only view of a sealed object. Releases its pin when destroyed.
class ObjectBuffer {
 public:
  ObjectBuffer() = default;
  ObjectBuffer(const uint8_t* data, uint64_t size, std::function<void()> release)
      : data_(data), size_(size), release_(std::move(release)) {}
  ObjectBuffer(ObjectBuffer&& o) noexcept { *this = std::move(o); }
  ObjectBuffer& operator=(ObjectBuffer&& o) noexcept {
    if (this != &o) {
      Reset();
      data_ = o.data_;
      size_ = o.size_;
      release_ = std::move(o.release_);
      o.release_ = nullptr;
      o.data_ = nullptr;
      o.size_ = 0;
    }
    return *this;
  }
  ObjectBuffer(const ObjectBuffer&) = delete;
  ObjectBuffer& operator=(const ObjectBuffer&) = delete;
  ~ObjectBuffer() { Reset(); }

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  void Reset() {
    if (release_) release_();
    release_ = nullptr;
    data_ = nullptr;
    size_ = 0;
  }

 private:
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  std::function<void()> release_;
};

// Create + copy + Seal on anything with the store's Create/Seal/Abort (ObjectStore, StoreClient);
// aborts the object if sealing fails.
template <typename Store>
Status PutBytes(Store& store, const ObjectId& id, const void* data, uint64_t size, bool durable) {
  CUMULUS_ASSIGN_OR_RETURN(MutableBuffer buf, store.Create(id, size, durable));
  if (size > 0) std::memcpy(buf.data, data, size);
  Status st = store.Seal(id);
  if (!st.ok()) {
    Status ignored = store.Abort(id);
    (void)ignored;
  }
  return st;
}

class ObjectStore {
 public:
  // The least shared memory a store started by a user may have (below it nothing useful fits,
  // not even a job's program), and the check the command line makes of a capacity a user gave:
  // at least this, at most the machine's memory; 0 is refused (the default is asked for by not
  // giving one). Open itself takes any capacity (unit tests use small ones).
  static constexpr uint64_t kMinMemoryBytes = 16ull << 20;
  static Status CheckMemoryCapacity(uint64_t bytes, const std::string& what);

  // Opens the store: creates the shared region and opens (or creates) the RocksDB tier. Durable
  // objects left by an earlier run are indexed (on disk, restored on first read); non-durable
  // spill copies of an earlier run are deleted.
  static Result<std::unique_ptr<ObjectStore>> Open(const ObjectStoreOptions& options);
  ~ObjectStore();

  // Reserves `size` bytes for a new object. Spills least-recently-used unpinned objects if the
  // memory tier is full. Errors: AlreadyExists; ResourceExhausted if the object is larger than the
  // whole memory tier (it fails: objects must fit in memory) or if everything in memory is pinned
  // or being written, or if spilling failed (disk full).
  Result<MutableBuffer> Create(const ObjectId& id, uint64_t size, bool durable = false,
                               ClientId client = kLocalClient);
  // Makes a created object immutable and visible. A durable object is written to disk first; if
  // that fails the object stays unsealed and the error is returned.
  // Only the client that created the object may seal or abort it (InvalidArgument otherwise).
  Status Seal(const ObjectId& id, ClientId client = kLocalClient);
  // Drops an object that was created but not sealed.
  Status Abort(const ObjectId& id, ClientId client = kLocalClient);
  // Create + copy + Seal.
  Status Put(const ObjectId& id, const void* data, uint64_t size, bool durable = false);

  // Pins a sealed object and returns a view of it, restoring it from disk if it was spilled.
  // NotFound if unknown; Unavailable if still being written; ObjectLost if the disk copy is
  // missing or fails its checksum; ResourceExhausted if it cannot be brought back into memory.
  Result<ObjectBuffer> Get(const ObjectId& id);
  // The pinning Get used by the socket server: returns the object's offset in the region.
  Result<MutableBuffer> Pin(const ObjectId& id, ClientId client);
  // Drops one pin `client` holds on `id`.
  Status Unpin(const ObjectId& id, ClientId client);
  // Drops every pin of `client` and aborts its unsealed objects.
  void ReleaseClient(ClientId client);

  // Frees a sealed object now, or when its last pin is released. NotFound if unknown.
  Status Delete(const ObjectId& id);
  // Deletes every sealed, non-durable object `match` accepts (pinned ones when their last pin
  // goes), as when a job ends. Returns how many.
  size_t DeleteIf(const std::function<bool(const ObjectId&)>& match);
  struct Listed {
    ObjectId id;
    uint64_t size = 0;
    bool in_memory = false, on_disk = false;
    int pins = 0;
  };
  // Up to `limit` sealed objects (in no particular order) and how many there are in all.
  std::vector<Listed> List(size_t limit, size_t* total);
  // Calls `fn` with every sealed object, under the store's lock: `fn` must be quick and must not
  // call the store.
  void ForEachSealed(const std::function<void(const Listed&)>& fn);
  // Moves a sealed, unpinned object to disk now and frees its memory.
  Status Spill(const ObjectId& id);
  // True if `id` is sealed here (in memory or on disk).
  bool Contains(const ObjectId& id);

  // `listener` is called with an object's id whenever the object is sealed or freed (aborted,
  // deleted, dropped with its creator), so that a waiter (StoreServer's waiting gets) can look
  // again. It runs on the thread that made the change, under the store's lock: it must be quick
  // and must not call the store. One listener at a time; nullptr removes it. Once this returns,
  // the previous listener is not running and will not be called again.
  void SetChangeListener(std::function<void(const ObjectId&)> listener);

  ObjectStoreStats Stats();
  // Gives the memory of free blocks back to the system, once the store has freed nothing for
  // `idle` (a burst is over), so that RSS and Shmem fall back; objects written there later fault
  // their pages in again. Nothing with `prefault` (memory committed on purpose). Returns the
  // bytes of the region resident afterwards. Thread-safe; the store server calls it every second.
  uint64_t ReleaseFreeMemory(Duration idle);
  const SharedRegion& region() const { return *region_; }
  const std::string& incarnation() const { return incarnation_; }
  SpillStore& spill_store() { return *spill_; }

 private:
  struct Entry {
    uint64_t size = 0;
    bool sealed = false;
    bool durable = false;
    bool in_memory = false;
    uint64_t offset = 0;   // valid when in_memory
    bool on_disk = false;  // a verified-at-write copy is in the RocksDB tier
    bool delete_pending = false;
    ClientId creator = kLocalClient;
    int pins = 0;
    std::list<ObjectId>::iterator lru;  // valid when evictable (sealed, in memory, unpinned)
    bool in_lru = false;
  };

  ObjectStore(ObjectStoreOptions options, std::unique_ptr<SharedRegion> region,
              std::unique_ptr<SpillStore> spill);
  Status RecoverFromDisk();
  // Finds room for `size` bytes, spilling LRU objects as needed. REQUIRES: mu_ held.
  Result<uint64_t> AllocateLocked(const ObjectId& for_id, uint64_t size);
  Status SpillLocked(const ObjectId& id, Entry& e);
  void FreeLocked(std::unordered_map<ObjectId, Entry>::iterator it);
  void ForgetCreatingLocked(const ObjectId& id, ClientId creator);
  // Gives a block back to the allocator (its pages are released later, when idle).
  void FreeBlockLocked(uint64_t offset, uint64_t size);
  void TouchLocked(const ObjectId& id, Entry& e);
  void PinLocked(const ObjectId& id, Entry& e, ClientId client);
  Status UnpinLocked(const ObjectId& id, ClientId client);

  ObjectStoreOptions options_;
  std::unique_ptr<SharedRegion> region_;
  std::unique_ptr<SpillStore> spill_;
  std::string incarnation_;

  std::mutex mu_;
  RegionAllocator allocator_;
  std::unordered_map<ObjectId, Entry> objects_;
  std::list<ObjectId> lru_;  // front: least recently used
  std::unordered_map<ClientId, std::unordered_map<ObjectId, int>> client_pins_;
  std::unordered_map<ClientId, std::unordered_set<ObjectId>>
      client_creating_;  // unsealed, by creator
  ObjectStoreStats counters_;
  TimePoint last_free_{};             // when a block was last freed
  bool freed_since_release_ = false;  // pages to give back at the next quiet moment
  std::function<void(const ObjectId&)> change_listener_;  // guarded by mu_
};

}  // namespace cumulus
