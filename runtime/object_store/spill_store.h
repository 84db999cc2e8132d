// SpillStore: the object store's RocksDB tier on local disk. Holds spilled copies of objects that
// did not fit in memory, and durable objects. Each object is two keys written in one batch:
//   'm' + id  ->  ObjectMeta (Cap'n Proto): size, XXH3-64 checksum, durable flag, incarnation
//   'd' + id  ->  the bytes (large values live in RocksDB's integrated blob files)
// Writes go through the write-ahead log without fsync: they survive a kill -9 of this process
// (not a power loss), and a full disk is reported by the write that hits it.
// Thread-safe (RocksDB is).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cumulus/ids.h"
#include "cumulus/status.h"

namespace rocksdb {
class DB;
struct Options;
struct WriteOptions;
}  // namespace rocksdb

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
  ~SpillStore();

  // The RocksDB options the store runs with; the benchmark opens its raw-RocksDB anchor with these.
  static void ConfigureDb(const SpillStoreOptions& options, rocksdb::Options* db);
  static void ConfigureWrite(rocksdb::WriteOptions* write);

  // Stores the bytes with their checksum. ResourceExhausted if the disk is full.
  Status Write(const ObjectId& id, const uint8_t* data, uint64_t size, bool durable,
               const std::string& incarnation, int64_t created_micros);

  // Reads an object back. `alloc(size)` returns where to put the bytes. ObjectLost if they are
  // missing, the wrong length or fail their checksum; the caller then owns (and frees) whatever
  // `alloc` gave out, whose contents are undefined.
  Status Read(const ObjectId& id, const std::function<Result<uint8_t*>(uint64_t)>& alloc);

  Status Delete(const ObjectId& id);

  // Writes the memtable out (values move to blob files).
  Status Flush();

  // Calls `fn` for every stored object.
  Status ForEach(const std::function<void(const StoredObjectInfo&)>& fn);

  const std::string& path() const { return path_; }
  // For tests of corruption handling: overwrites the stored bytes without updating the checksum.
  Status OverwriteBytesForTesting(const ObjectId& id, const std::string& bytes);

 private:
  SpillStore(std::unique_ptr<rocksdb::DB> db, std::string path);

  Status CheckDiskSpace(const ObjectId& id, uint64_t size);

  std::unique_ptr<rocksdb::DB> db_;
  std::string path_;
  uint64_t min_free_disk_bytes_ = 0;
  bool needs_resume_ = false;  // a write failed; RocksDB stops writing until resumed
};

// XXH3-64 of the bytes: the checksum every stored object carries.
uint64_t ObjectChecksum(const void* data, uint64_t size);

}  // namespace cumulus
