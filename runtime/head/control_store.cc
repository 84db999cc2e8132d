// ControlStore::Open: the store itself is in the RocksDB module (control_store_rocksdb.cc).
#include "runtime/head/control_store.h"

#include "runtime/base/rocksdb_module.h"

namespace cumulus {

Result<std::unique_ptr<ControlStore>> ControlStore::Open(const std::string& path) {
  CUMULUS_ASSIGN_OR_RETURN(const RocksModule* rocks, LoadRocksModule());
  std::unique_ptr<ControlStore> store;
  Status st;
  rocks->open_control_store(path, &store, &st);
  if (!st.ok()) return st;
  return store;
}

}  // namespace cumulus
