// RocksDB, loaded when a store is first opened. The head's control store and the object store's
// disk tier live in RocksDB, but RocksDB's own start-up (its static initialisers: about 10 ms of
// CPU per process on the 2-core VM, docs/benchmarks.md) would otherwise be paid by every process
// of a program, and a program is also its own worker: each actor and task worker starts it again.
// So RocksDB and the two stores built on it (control_store_rocksdb.cc, spill_store_rocksdb.cc) are
// a module, libcumulus_rocksdb.so, that the first ControlStore::Open or SpillStore::Open loads
// with dlopen; a worker, which opens neither, never loads it. Where it is looked for:
// runtime/base/module_loader.h ($CUMULUS_ROCKSDB_MODULE first).
#pragma once

#include <memory>
#include <string>

#include "cumulus/status.h"
#include "runtime/base/module_loader.h"

namespace cumulus {

class ControlStore;
class SpillStore;
struct SpillStoreOptions;

// What the module exports, as one table (kRocksModule.symbol, a function returning it).
struct RocksModule {
  ModuleHeader header;
  void (*open_control_store)(const std::string& path, std::unique_ptr<ControlStore>* out,
                             Status* status);
  void (*open_spill_store)(const SpillStoreOptions& options, std::unique_ptr<SpillStore>* out,
                           Status* status);
};
constexpr ModuleSpec kRocksModule{"RocksDB's module", "libcumulus_rocksdb.so",
                                  "CUMULUS_ROCKSDB_MODULE", "cumulus_rocksdb_module_v2"};

// Loads the module once per process (thread-safe); later calls return the same table, or the
// same error: Unavailable, naming every place tried and what the loader said.
inline Result<const RocksModule*> LoadRocksModule() {
  return LoadModuleOnce<RocksModule>(kRocksModule);
}

// Opens a store through the module's `open` (&RocksModule::open_control_store or
// open_spill_store), loading the module first.
template <typename Store, typename Arg>
Result<std::unique_ptr<Store>> OpenWithRocksModule(
    void (*RocksModule::*open)(const Arg&, std::unique_ptr<Store>*, Status*), const Arg& arg) {
  CUMULUS_ASSIGN_OR_RETURN(const RocksModule* module, LoadRocksModule());
  std::unique_ptr<Store> store;
  Status status;
  (module->*open)(arg, &store, &status);
  if (!status.ok()) return status;
  return store;
}

}  // namespace cumulus
