// The entry of libcumulus_rocksdb.so (runtime/base/rocksdb_module.h): the table of what it opens.
#include "cumulus/cumulus.h"
#include "runtime/base/logging.h"
#include "runtime/base/rocksdb_module.h"
#include "runtime/head/control_store.h"
#include "runtime/object_store/spill_store_rocksdb.h"

namespace {

// The table's form of `Open` (a Result): out-parameters, the same on both sides of dlopen.
template <typename Store, typename Arg, cumulus::Result<std::unique_ptr<Store>> (*Open)(const Arg&)>
void Export(const Arg& arg, std::unique_ptr<Store>* out, cumulus::Status* status) {
  auto r = Open(arg);
  if (!r.ok()) {
    *status = r.status();
    return;
  }
  *out = std::move(*r);
}

}  // namespace

// Returns the table as the loader calls it (const void* (*)(): runtime/base/module_loader.h).
extern "C" __attribute__((visibility("default"))) const void* cumulus_rocksdb_module_v2() {
  // v2: the table begins with a ModuleHeader (v1 began with the version alone).
  static const cumulus::RocksModule table{
      {cumulus::Version(), &cumulus::internal::ShareLogThreshold, &cumulus::GetLogLevel},
      &Export<cumulus::ControlStore, std::string, &cumulus::OpenRocksControlStore>,
      &Export<cumulus::SpillStore, cumulus::SpillStoreOptions, &cumulus::OpenRocksSpillStore>};
  return &table;
}
