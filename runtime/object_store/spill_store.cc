// SpillStore::Open: the store itself is in the RocksDB module (spill_store_rocksdb.cc).
#include "runtime/object_store/spill_store.h"

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "runtime/base/rocksdb_module.h"

namespace cumulus {

uint64_t ObjectChecksum(const void* data, uint64_t size) { return XXH3_64bits(data, size); }

Result<std::unique_ptr<SpillStore>> SpillStore::Open(const SpillStoreOptions& options) {
  return OpenWithRocksModule(&RocksModule::open_spill_store, options);
}

}  // namespace cumulus
