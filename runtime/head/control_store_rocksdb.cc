// ControlStore in RocksDB (control_store.h): built into the module libcumulus_rocksdb.so, which
// ControlStore::Open loads (runtime/base/rocksdb_module.h).
#include "runtime/head/control_store.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>

namespace cumulus {

namespace {
std::string Key(ControlTable table, const std::string& key) {
  std::string k(1, static_cast<char>(table));
  k += '/';
  k += key;
  return k;
}
Status FromRocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status();
  if (s.IsNoSpace()) return Status::ResourceExhausted(what + ": no space left on device");
  if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
    return Status::Unavailable(what + ": " + s.ToString() +
                               " (is another head running on this data dir?)");
  }
  return Status::Unavailable(what + ": " + s.ToString());
}
class RocksControlStore final : public ControlStore {
 public:
  RocksControlStore(std::unique_ptr<rocksdb::DB> db, std::string path)
      : db_(std::move(db)), path_(std::move(path)) {}
  ~RocksControlStore() override {
    if (db_) db_->Close();
  }
  Status Put(ControlTable table, const std::string& key, const std::string& value) override;
  Result<std::optional<std::string>> Get(ControlTable table, const std::string& key) override;
  Status Delete(ControlTable table, const std::string& key) override;
  Status Scan(ControlTable table,
              const std::function<void(const std::string&, const std::string&)>& fn) override;
  Status ScanFrom(ControlTable table, const std::string& from,
                  const std::function<bool(const std::string&, const std::string&)>& fn) override;

 private:
  std::unique_ptr<rocksdb::DB> db_;
  std::string path_;
};

}  // namespace

Result<std::unique_ptr<ControlStore>> OpenRocksControlStore(const std::string& path) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.info_log_level = rocksdb::WARN_LEVEL;
  options.keep_log_file_num = 2;
  options.max_background_jobs = 1;
  rocksdb::DB* raw = nullptr;
  CUMULUS_RETURN_IF_ERROR(
      FromRocks(rocksdb::DB::Open(options, path, &raw), "opening the control store at " + path));
  return std::unique_ptr<ControlStore>(
      std::make_unique<RocksControlStore>(std::unique_ptr<rocksdb::DB>(raw), path));
}

Status RocksControlStore::Put(ControlTable table, const std::string& key,
                              const std::string& value) {
  return FromRocks(db_->Put(rocksdb::WriteOptions(), Key(table, key), value),
                   "writing the control store at " + path_);
}

Result<std::optional<std::string>> RocksControlStore::Get(ControlTable table,
                                                          const std::string& key) {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), Key(table, key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  CUMULUS_RETURN_IF_ERROR(FromRocks(s, "reading the control store at " + path_));
  return std::optional<std::string>(std::move(value));
}

Status RocksControlStore::Delete(ControlTable table, const std::string& key) {
  return FromRocks(db_->Delete(rocksdb::WriteOptions(), Key(table, key)),
                   "writing the control store at " + path_);
}

Status RocksControlStore::Scan(
    ControlTable table, const std::function<void(const std::string&, const std::string&)>& fn) {
  std::string prefix = Key(table, "");
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    fn(it->key().ToString().substr(prefix.size()), it->value().ToString());
  }
  return FromRocks(it->status(), "scanning the control store at " + path_);
}

Status RocksControlStore::ScanFrom(
    ControlTable table, const std::string& from,
    const std::function<bool(const std::string&, const std::string&)>& fn) {
  std::string prefix = Key(table, "");
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(Key(table, from)); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    if (!fn(it->key().ToString().substr(prefix.size()), it->value().ToString())) break;
  }
  return FromRocks(it->status(), "scanning the control store at " + path_);
}

}  // namespace cumulus
