// Cumulus's own modules: parts of the runtime whose libraries cost every process start a few
// milliseconds of their static initialisers, built as shared objects of their own and loaded with
// dlopen by the first process that needs them. Every worker is the user's program started again,
// and most never open a store or form a collective group. Two exist: libcumulus_rocksdb.so
// (RocksDB and the stores on it, runtime/base/rocksdb_module.h) and libcumulus_gloo.so (Gloo,
// runtime/collective/gloo_module.h).
//
// Where a module is looked for, in order: $ENV (a path to the file, the module's own variable);
// the directory of the library or program that holds this code (libcumulus.so's, installed) and of
// the running program, each also with ../lib (a program in build/bin or an installed bin/); the
// build tree's lib/; the install prefix's lib directory; then the dynamic loader's own search. A
// module from another build of Cumulus is refused (its version differs).
#pragma once

#include <atomic>

#include "cumulus/status.h"
#include "runtime/base/logging.h"

namespace cumulus {

// The first member of every module's table.
struct ModuleHeader {
  const char* version;  // Cumulus's version the module was built as (cumulus::Version())
  // The module's logging follows the loading program's threshold (internal::LogThreshold, given
  // by the loader); nullptr for a module that does not log.
  void (*share_log_threshold)(std::atomic<int>* threshold);
  LogLevel (*log_level)();  // the module's GetLogLevel (nullptr as above): for tests
};

struct ModuleSpec {
  const char* what;    // for errors: "RocksDB's module"
  const char* file;    // "libcumulus_rocksdb.so"
  const char* env;     // "CUMULUS_ROCKSDB_MODULE"
  const char* symbol;  // an extern "C" `const void* symbol()` of the module: its table
};

// Finds and opens the module, calls its `symbol` and returns the table, whose first member must be
// a ModuleHeader; a module of another version is passed over, and the one loaded is handed this
// program's log threshold. Unavailable, naming every place tried and what the loader said, when
// none loads. Not cached: callers keep what it returns.
Result<const void*> LoadModule(const ModuleSpec& spec);

// LoadModule once per process (thread-safe) for a table of type Table: later calls return the
// same table, or the same error. The cache is per Table type: each module has a table type of
// its own (RocksModule, GlooModule).
template <typename Table>
Result<const Table*> LoadModuleOnce(const ModuleSpec& spec) {
  static const Result<const Table*> loaded = [&spec]() -> Result<const Table*> {
    CUMULUS_ASSIGN_OR_RETURN(const void* table, LoadModule(spec));
    return static_cast<const Table*>(table);
  }();
  return loaded;
}

}  // namespace cumulus
