// ControlStore: the head's durable tables in RocksDB, one key prefix per table. Values are
// Cap'n Proto messages (or user bytes for the key-value table). Writes go through the WAL without
// fsync: a head killed with SIGKILL loses nothing it acknowledged; a power loss may.
// Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cumulus/status.h"

namespace cumulus {

enum class ControlTable : char {
  kNodes = 'n',
  kJobs = 'j',
  kActors = 'a',
  kPlacementGroups = 'p',
  kNamedActors = 'N',
  kKeyValue = 'k',  // key = namespace + '\0' + key
  kMeta = 'M',      // the cluster's own facts (cluster id)
};

class ControlStore {
 public:
  // Loads RocksDB (runtime/base/rocksdb_module.h) the first time a store is opened.
  static Result<std::unique_ptr<ControlStore>> Open(const std::string& path);
  virtual ~ControlStore() = default;

  virtual Status Put(ControlTable table, const std::string& key, const std::string& value) = 0;
  // nullopt if absent.
  virtual Result<std::optional<std::string>> Get(ControlTable table, const std::string& key) = 0;
  virtual Status Delete(ControlTable table, const std::string& key) = 0;
  // Calls fn(key, value) for every record of `table`, in key order.
  virtual Status Scan(ControlTable table,
                      const std::function<void(const std::string&, const std::string&)>& fn) = 0;
  // Calls fn(key, value) for the records of `table` from `from` on, in key order, while it
  // returns true.
  virtual Status ScanFrom(
      ControlTable table, const std::string& from,
      const std::function<bool(const std::string&, const std::string&)>& fn) = 0;
};

// The store in RocksDB, in the module (control_store_rocksdb.cc).
Result<std::unique_ptr<ControlStore>> OpenRocksControlStore(const std::string& path);

}  // namespace cumulus
