#include "runtime/base/rocksdb_module.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "cumulus/cumulus.h"

namespace cumulus {

namespace {

std::atomic<bool> loaded{false};

// The directory of the file (program or shared library) this code was linked into.
std::string OwnDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&LoadRocksModule), &info) == 0 || !info.dli_fname) return "";
  std::string file = info.dli_fname;
  auto slash = file.rfind('/');
  return slash == std::string::npos ? "" : file.substr(0, slash);
}

Result<const RocksModule*> Load() {
  std::vector<std::string> tries;
  if (const char* env = std::getenv("CUMULUS_ROCKSDB_MODULE"); env && *env) {
    tries.push_back(env);
  } else {
    if (std::string own = OwnDirectory(); !own.empty()) {
      tries.push_back(own + "/" + kRocksModuleFile);
      tries.push_back(own + "/../lib/" + kRocksModuleFile);
    }
#ifdef CUMULUS_ROCKSDB_MODULE_BUILD_DIR
    tries.push_back(std::string(CUMULUS_ROCKSDB_MODULE_BUILD_DIR) + "/" + kRocksModuleFile);
#endif
#ifdef CUMULUS_ROCKSDB_MODULE_INSTALL_DIR
    tries.push_back(std::string(CUMULUS_ROCKSDB_MODULE_INSTALL_DIR) + "/" + kRocksModuleFile);
#endif
    tries.push_back(kRocksModuleFile);  // the dynamic loader's search
  }
  std::string said;
  for (const std::string& path : tries) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* err = dlerror();
      // "No such file" for a place it is not is no news; anything else (a broken file, a missing
      // dependency) is what the user needs to see.
      std::string e = err ? err : "unknown error";
      if (e.find("No such file") == std::string::npos) said += (said.empty() ? "" : "; ") + e;
      continue;
    }
    using Table = const RocksModule* (*)();
    auto table = reinterpret_cast<Table>(dlsym(handle, kRocksModuleSymbol));
    if (!table) {
      said += (said.empty() ? "" : "; ") + path + " has no " + kRocksModuleSymbol;
      continue;
    }
    const RocksModule* m = table();
    if (std::string(m->version) != Version()) {
      said += (said.empty() ? "" : "; ") + path + " is from Cumulus " + m->version +
              ", this program is " + Version();
      continue;
    }
    loaded = true;
    return m;
  }
  std::string where;
  for (const std::string& t : tries) where += (where.empty() ? "" : ", ") + t;
  return Status::Unavailable(
      std::string("cannot load RocksDB's module ") + kRocksModuleFile + " (tried " + where + ")" +
      (said.empty() ? "" : ": " + said) +
      "; it is installed next to libcumulus.so (build/lib in a build tree): set "
      "CUMULUS_ROCKSDB_MODULE to its path");
}

}  // namespace

Result<const RocksModule*> LoadRocksModule() {
  static const Result<const RocksModule*> module = Load();
  return module;
}

bool RocksModuleLoaded() { return loaded; }

}  // namespace cumulus
