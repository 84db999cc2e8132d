// The RocksDB side of SpillStore (spill_store.h), in the module libcumulus_rocksdb.so
// (runtime/base/rocksdb_module.h); the benchmark's raw-RocksDB anchor links it to open its
// database with the store's own options.
#pragma once

#include <memory>

#include "runtime/object_store/spill_store.h"

namespace rocksdb {
struct Options;
struct WriteOptions;
}  // namespace rocksdb

namespace cumulus {

// The RocksDB options the store runs with.
void ConfigureSpillDb(const SpillStoreOptions& options, rocksdb::Options* db);
void ConfigureSpillWrite(rocksdb::WriteOptions* write);

// Opens (creating if missing) the store at options.path.
Result<std::unique_ptr<SpillStore>> OpenRocksSpillStore(const SpillStoreOptions& options);

}  // namespace cumulus
