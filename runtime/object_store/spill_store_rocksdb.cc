// SpillStore in RocksDB (spill_store.h): built into the module libcumulus_rocksdb.so, which
// SpillStore::Open loads (runtime/base/rocksdb_module.h).
#include "runtime/object_store/spill_store_rocksdb.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>
#include <sys/statvfs.h>
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "runtime/base/logging.h"
#include "runtime/proto/object.capnp.h"

namespace cumulus {

namespace {

std::string MetaKey(const ObjectId& id) { return "m" + id.Binary(); }
std::string DataKey(const ObjectId& id) { return "d" + id.Binary(); }

Status FromRocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status();
  if (s.IsNoSpace()) {
    return Status::ResourceExhausted(what + ": no space left on device (" + s.ToString() +
                                     "); free disk space or point the store at a larger disk");
  }
  if (s.IsNotFound()) return Status::NotFound(what + ": " + s.ToString());
  if (s.IsCorruption()) return Status::ObjectLost(what + ": " + s.ToString());
  return Status::Unavailable(what + ": " + s.ToString());
}

}  // namespace

class RocksSpillStore final : public SpillStore {
 public:
  RocksSpillStore(std::unique_ptr<rocksdb::DB> db, std::string path);
  ~RocksSpillStore() override;
  Status Write(const ObjectId& id, const uint8_t* data, uint64_t size, bool durable,
               const std::string& incarnation, int64_t created_micros) override;
  Status Read(const ObjectId& id, const std::function<Result<uint8_t*>(uint64_t)>& alloc) override;
  Status Delete(const ObjectId& id) override;
  Status Flush() override;
  Status ForEach(const std::function<void(const StoredObjectInfo&)>& fn) override;
  Status OverwriteBytesForTesting(const ObjectId& id, const std::string& bytes) override;

 private:
  friend Result<std::unique_ptr<SpillStore>> OpenRocksSpillStore(const SpillStoreOptions&);
  Status CheckDiskSpace(const ObjectId& id, uint64_t size);

  std::unique_ptr<rocksdb::DB> db_;
  uint64_t min_free_disk_bytes_ = 0;
  bool needs_resume_ = false;  // a write failed; RocksDB stops writing until resumed
};

void ConfigureSpillDb(const SpillStoreOptions& o, rocksdb::Options* db) {
  db->create_if_missing = true;
  db->enable_blob_files = true;
  db->min_blob_size = o.min_blob_size;
  db->blob_file_size = o.blob_file_size;
  db->enable_blob_garbage_collection = true;
  db->write_buffer_size = o.write_buffer_size;
  db->max_write_buffer_number = 2;
  db->max_total_wal_size = 4 * o.write_buffer_size;
  db->compression = rocksdb::kNoCompression;  // tensors and pickles compress poorly; CPU matters
  db->blob_compression_type = rocksdb::kNoCompression;
  db->max_background_jobs = 2;
  db->info_log_level = rocksdb::WARN_LEVEL;
  db->keep_log_file_num = 2;
}

void ConfigureSpillWrite(rocksdb::WriteOptions* write) {
  write->sync = false;  // survives kill -9, not power loss
  write->disableWAL = false;
}

Result<std::unique_ptr<SpillStore>> OpenRocksSpillStore(const SpillStoreOptions& options) {
  rocksdb::Options db_options;
  ConfigureSpillDb(options, &db_options);
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_options, options.path, &raw);
  if (!s.ok()) {
    return FromRocks(s, "opening the object store's disk tier at " + options.path);
  }
  auto store = std::make_unique<RocksSpillStore>(std::unique_ptr<rocksdb::DB>(raw), options.path);
  store->min_free_disk_bytes_ = options.min_free_disk_bytes;
  return std::unique_ptr<SpillStore>(std::move(store));
}

RocksSpillStore::RocksSpillStore(std::unique_ptr<rocksdb::DB> db, std::string path)
    : SpillStore(std::move(path)), db_(std::move(db)) {}

RocksSpillStore::~RocksSpillStore() {
  if (db_) db_->Close();
}

Status RocksSpillStore::CheckDiskSpace(const ObjectId& id, uint64_t size) {
  struct statvfs fs {};
  if (statvfs(path().c_str(), &fs) != 0) return Status();  // RocksDB reports real failures
  uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  // The bytes go to the write-ahead log now and to a blob file at the next flush.
  uint64_t need = 2 * size + 4096;
  if (free_bytes >= need + min_free_disk_bytes_) return Status();
  return Status::ResourceExhausted(
      "not enough disk space to write object " + id.Hex() + " (" + std::to_string(size) +
      " bytes) to " + path() + ": " + std::to_string(free_bytes) + " bytes free, " +
      std::to_string(min_free_disk_bytes_) +
      " kept in reserve; free disk space or point the store at a larger disk");
}

Status RocksSpillStore::Write(const ObjectId& id, const uint8_t* data, uint64_t size, bool durable,
                              const std::string& incarnation, int64_t created_micros) {
  CUMULUS_RETURN_IF_ERROR(CheckDiskSpace(id, size));
  capnp::MallocMessageBuilder message;
  auto meta = message.initRoot<proto::ObjectMeta>();
  meta.setObjectId(capnp::Data::Reader(id.data(), ObjectId::kSize));
  meta.setDataSize(size);
  meta.setChecksum(XXH3_64bits(data, size));  // ObjectChecksum (spill_store.h)
  meta.setDurable(durable);
  meta.setCreatedMicros(created_micros);
  meta.setStoreIncarnation(capnp::Data::Reader(reinterpret_cast<const uint8_t*>(incarnation.data()),
                                               incarnation.size()));
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  kj::ArrayPtr<const char> meta_bytes = words.asChars();

  if (needs_resume_) {
    // A previous write failed (disk full): RocksDB refuses writes until resumed.
    rocksdb::Status r = db_->Resume();
    if (!r.ok()) return FromRocks(r, "spilling object " + id.Hex() + " to " + path());
    needs_resume_ = false;
  }
  // Reserve the whole batch up front: growing it would copy a large value twice.
  rocksdb::WriteBatch batch(size + meta_bytes.size() + 2 * (ObjectId::kSize + 1) + 64);
  batch.Put(DataKey(id), rocksdb::Slice(reinterpret_cast<const char*>(data), size));
  batch.Put(MetaKey(id), rocksdb::Slice(meta_bytes.begin(), meta_bytes.size()));
  rocksdb::WriteOptions wo;
  ConfigureSpillWrite(&wo);
  rocksdb::Status s = db_->Write(wo, &batch);
  if (!s.ok()) {
    needs_resume_ = true;
    return FromRocks(s, std::string(durable ? "writing durable object " : "spilling object ") +
                            id.Hex() + " to " + path());
  }
  return Status();
}

Status RocksSpillStore::Read(const ObjectId& id,
                             const std::function<Result<uint8_t*>(uint64_t)>& alloc) {
  std::string meta_value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), MetaKey(id), &meta_value);
  if (s.IsNotFound())
    return Status::NotFound("object " + id.Hex() + " is not on disk at " + path());
  CUMULUS_RETURN_IF_ERROR(FromRocks(s, "reading metadata of object " + id.Hex()));
  if (meta_value.size() % sizeof(capnp::word) != 0) {
    return Status::ObjectLost("object " + id.Hex() + ": its stored metadata is corrupt (size " +
                              std::to_string(meta_value.size()) + ")");
  }
  kj::Array<capnp::word> words =
      kj::heapArray<capnp::word>(meta_value.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), meta_value.data(), meta_value.size());
  uint64_t size = 0, checksum = 0;
  try {
    capnp::FlatArrayMessageReader reader(words);
    auto meta = reader.getRoot<proto::ObjectMeta>();
    size = meta.getDataSize();
    checksum = meta.getChecksum();
  } catch (const kj::Exception& e) {
    return Status::ObjectLost("object " + id.Hex() + ": its stored metadata is corrupt (" +
                              e.getDescription().cStr() + ")");
  }

  rocksdb::PinnableSlice value;
  s = db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), DataKey(id), &value);
  if (s.IsNotFound()) {
    return Status::ObjectLost("object " + id.Hex() + ": metadata is on disk at " + path() +
                              " but its bytes are missing");
  }
  CUMULUS_RETURN_IF_ERROR(FromRocks(s, "restoring object " + id.Hex() + " from " + path()));
  if (value.size() != size) {
    return Status::ObjectLost("object " + id.Hex() + ": stored bytes are " +
                              std::to_string(value.size()) + " long, metadata says " +
                              std::to_string(size));
  }
  // Copy and hash in cache-sized chunks, so each chunk is hashed while it is still in cache.
  CUMULUS_ASSIGN_OR_RETURN(uint8_t * dest, alloc(size));
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  constexpr uint64_t kChunk = 128 << 10;
  for (uint64_t off = 0; off < size; off += kChunk) {
    uint64_t n = std::min(kChunk, size - off);
    std::memcpy(dest + off, value.data() + off, n);
    XXH3_64bits_update(&state, dest + off, n);
  }
  uint64_t actual = XXH3_64bits_digest(&state);
  if (actual != checksum) {
    char buf[128];
    std::snprintf(buf, sizeof(buf), "checksum mismatch (stored %016llx, computed %016llx)",
                  static_cast<unsigned long long>(checksum),
                  static_cast<unsigned long long>(actual));
    return Status::ObjectLost("object " + id.Hex() + ": " + buf + " restoring from " + path() +
                              "; the spilled copy is corrupt");
  }
  return Status();
}

Status RocksSpillStore::Delete(const ObjectId& id) {
  if (needs_resume_) {
    rocksdb::Status r = db_->Resume();
    if (!r.ok()) return FromRocks(r, "deleting object " + id.Hex() + " from " + path());
    needs_resume_ = false;
  }
  rocksdb::WriteBatch batch;
  batch.Delete(MetaKey(id));
  batch.Delete(DataKey(id));
  rocksdb::WriteOptions wo;
  ConfigureSpillWrite(&wo);
  rocksdb::Status s = db_->Write(wo, &batch);
  if (!s.ok()) needs_resume_ = true;
  return FromRocks(s, "deleting object " + id.Hex() + " from " + path());
}

Status RocksSpillStore::Flush() {
  return FromRocks(db_->Flush(rocksdb::FlushOptions()),
                   "flushing the object store's disk tier at " + path());
}

Status RocksSpillStore::ForEach(const std::function<void(const StoredObjectInfo&)>& fn) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek("m"); it->Valid() && it->key().starts_with("m"); it->Next()) {
    rocksdb::Slice v = it->value();
    StoredObjectInfo info;
    info.id = ObjectId::FromBinary(std::string_view(it->key().data() + 1, it->key().size() - 1));
    if (v.size() % sizeof(capnp::word) != 0) {
      CUMULUS_LOG(WARN) << "object " << info.id << ": unreadable metadata in " << path()
                        << ", skipped";
      continue;
    }
    kj::Array<capnp::word> words = kj::heapArray<capnp::word>(v.size() / sizeof(capnp::word));
    std::memcpy(words.begin(), v.data(), v.size());
    try {
      capnp::FlatArrayMessageReader reader(words);
      auto meta = reader.getRoot<proto::ObjectMeta>();
      info.size = meta.getDataSize();
      info.durable = meta.getDurable();
      auto inc = meta.getStoreIncarnation();
      info.incarnation.assign(reinterpret_cast<const char*>(inc.begin()), inc.size());
    } catch (const kj::Exception& e) {
      CUMULUS_LOG(WARN) << "object " << info.id << ": unreadable metadata in " << path() << " ("
                        << e.getDescription().cStr() << "), skipped";
      continue;
    }
    fn(info);
  }
  return FromRocks(it->status(), "listing objects on disk at " + path());
}

Status RocksSpillStore::OverwriteBytesForTesting(const ObjectId& id, const std::string& bytes) {
  rocksdb::WriteOptions wo;
  return FromRocks(db_->Put(wo, DataKey(id), bytes), "overwriting " + id.Hex());
}

}  // namespace cumulus
