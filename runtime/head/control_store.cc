// ControlStore::Open: the store itself is in the RocksDB module (control_store_rocksdb.cc).
#include "runtime/head/control_store.h"

#include "runtime/base/rocksdb_module.h"

namespace cumulus {

Result<std::unique_ptr<ControlStore>> ControlStore::Open(const std::string& path) {
  return OpenWithRocksModule(&RocksModule::open_control_store, path);
}

}  // namespace cumulus
