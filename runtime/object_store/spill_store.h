// SpillStore: the object store's RocksDB tier on local disk. Holds spilled copies of objects that
// did not fit in memory, and durable objects. Each object is two keys written in one batch:
//   'm' + id  ->  ObjectMeta (Cap'n Proto): size, XXH3-64 checksum, durable flag, incarnation
//   'd' + id  ->  the bytes (large values live in RocksDB's integrated blob files)
// Writes go through the write-ahead log without fsync: they survive a kill -9 of this process
// (not a power loss), and a full disk is reported by the write that hits it.
// Thread-safe (RocksDB is).
//
// RocksDB is not linked into programs: SpillStore::Open loads it, with the implementation
// (spill_store_rocksdb.cc), from the module libcumulus_rocksdb.so the first time a store is
// opened (runtime/base/rocksdb_module.h), so a worker process, which never opens one, does not pay
// RocksDB's start-up (about 10 ms of every process start, docs/benchmarks.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "cumulus/ids.h"
#include "cumulus/status.h"

namespace cumulus {

struct SpillStoreOptions {
  std::string path;                          // RocksDB directory; created if missing
  uint64_t min_blob_size = 4096;             // values this big or bigger go to blob files
  uint64_t blob_file_size = 256ull << 20;    // target size of one blob file
  uint64_t write_buffer_size = 64ull << 20;  // RocksDB memtable size
  // A write that would leave less than this free on the disk is refused with ResourceExhausted
  // before RocksDB sees it (RocksDB stops all writes after one that hits a full disk).
  uint64_t min_free_disk_bytes = 256ull << 20;
};

struct StoredObjectInfo {
  ObjectId id;
  uint64_t size = 0;
  bool durable = false;
  std::string incarnation;  // the store run that wrote it
};

class SpillStore {
 public:
  static Result<std::unique_ptr<SpillStore>> Open(const SpillStoreOptions& options);
  virtual ~SpillStore() = default;

  // Stores the bytes with their checksum. ResourceExhausted if the disk is full.
  virtual Status Write(const ObjectId& id, const uint8_t* data, uint64_t size, bool durable,
                       const std::string& incarnation, int64_t created_micros) = 0;

  // Reads an object back. `alloc(size)` returns where to put the bytes. ObjectLost if they are
  // missing, the wrong length or fail their checksum; the caller then owns (and frees) whatever
  // `alloc` gave out, whose contents are undefined.
  virtual Status Read(const ObjectId& id,
                      const std::function<Result<uint8_t*>(uint64_t)>& alloc) = 0;

  virtual Status Delete(const ObjectId& id) = 0;

  // Writes the memtable out (values move to blob files).
  virtual Status Flush() = 0;

  // Calls `fn` for every stored object.
  virtual Status ForEach(const std::function<void(const StoredObjectInfo&)>& fn) = 0;

  const std::string& path() const { return path_; }
  // For tests of corruption handling: overwrites the stored bytes without updating the checksum.
  virtual Status OverwriteBytesForTesting(const ObjectId& id, const std::string& bytes) = 0;

 protected:
  explicit SpillStore(std::string path) : path_(std::move(path)) {}

 private:
  std::string path_;
};

// XXH3-64 of the bytes: the checksum every stored object carries.
uint64_t ObjectChecksum(const void* data, uint64_t size);

}  // namespace cumulus
