// The entry of libcumulus_rocksdb.so (runtime/base/rocksdb_module.h): the table of what it opens.
#include "cumulus/cumulus.h"
#include "runtime/base/rocksdb_module.h"
#include "runtime/head/control_store.h"
#include "runtime/object_store/spill_store_rocksdb.h"

namespace {

void OpenControl(const std::string& path, std::unique_ptr<cumulus::ControlStore>* out,
                 cumulus::Status* status) {
  auto r = cumulus::OpenRocksControlStore(path);
  if (!r.ok()) {
    *status = r.status();
    return;
  }
  *out = std::move(*r);
}

void OpenSpill(const cumulus::SpillStoreOptions& options, std::unique_ptr<cumulus::SpillStore>* out,
               cumulus::Status* status) {
  auto r = cumulus::OpenRocksSpillStore(options);
  if (!r.ok()) {
    *status = r.status();
    return;
  }
  *out = std::move(*r);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const cumulus::RocksModule*
cumulus_rocksdb_module_v1() {
  static const cumulus::RocksModule table{cumulus::Version(), &OpenControl, &OpenSpill};
  return &table;
}
