#include "runtime/base/rocksdb_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "cumulus/cumulus.h"

namespace cumulus {

namespace {

std::string DirectoryOf(const std::string& file) {
  auto slash = file.rfind('/');
  return slash == std::string::npos || file[0] != '/' ? "" : file.substr(0, slash);
}

// The directories of the file this code was linked into (libcumulus.so, or the program) and of
// the running program (/proc/self/exe: dladdr may name the program by a relative path).
std::vector<std::string> OwnDirectories() {
  std::vector<std::string> out;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&LoadRocksModule), &info) != 0 && info.dli_fname) {
    if (std::string d = DirectoryOf(info.dli_fname); !d.empty()) out.push_back(d);
  }
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    std::string d = DirectoryOf(std::string(exe, static_cast<size_t>(n)));
    if (!d.empty() && (out.empty() || out[0] != d)) out.push_back(d);
  }
  return out;
}

Result<const RocksModule*> Load() {
  std::vector<std::string> tries;
  if (const char* env = std::getenv("CUMULUS_ROCKSDB_MODULE"); env && *env) {
    tries.push_back(env);
  } else {
    for (const std::string& own : OwnDirectories()) {
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
  std::string said;  // what went wrong where a module was found, "; " between
  auto say = [&said](const std::string& what) { said += (said.empty() ? "" : "; ") + what; };
  for (const std::string& path : tries) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* err = dlerror();
      // "No such file" for a place it is not is no news; anything else (a broken file, a missing
      // dependency) is what the user needs to see.
      std::string e = err ? err : "unknown error";
      if (e.find("No such file") == std::string::npos) say(e);
      continue;
    }
    using Table = const RocksModule* (*)();
    auto table = reinterpret_cast<Table>(dlsym(handle, kRocksModuleSymbol));
    if (!table) {
      say(path + " has no " + kRocksModuleSymbol);
      continue;
    }
    const RocksModule* m = table();
    if (std::string(m->version) != Version()) {
      say(path + " is from Cumulus " + m->version + ", this program is " + Version());
      continue;
    }
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

}  // namespace cumulus
