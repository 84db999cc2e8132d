#include "runtime/base/module_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "cumulus/cumulus.h"
#include "runtime/base/logging.h"

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
  if (dladdr(reinterpret_cast<void*>(&LoadModule), &info) != 0 && info.dli_fname) {
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

}  // namespace

Result<const void*> LoadModule(const ModuleSpec& spec) {
  std::vector<std::string> tries;
  if (const char* env = std::getenv(spec.env); env && *env) {
    tries.push_back(env);
  } else {
    for (const std::string& own : OwnDirectories()) {
      tries.push_back(own + "/" + spec.file);
      tries.push_back(own + "/../lib/" + spec.file);
    }
#ifdef CUMULUS_MODULE_BUILD_DIR
    tries.push_back(std::string(CUMULUS_MODULE_BUILD_DIR) + "/" + spec.file);
#endif
#ifdef CUMULUS_MODULE_INSTALL_DIR
    tries.push_back(std::string(CUMULUS_MODULE_INSTALL_DIR) + "/" + spec.file);
#endif
    tries.push_back(spec.file);  // the dynamic loader's search
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
    using Entry = const void* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, spec.symbol));
    if (!entry) {
      say(path + " has no " + spec.symbol);
      continue;
    }
    const void* table = entry();
    const auto* header = static_cast<const ModuleHeader*>(table);
    if (std::string(header->version) != Version()) {
      say(path + " is from Cumulus " + header->version + ", this program is " + Version());
      continue;
    }
    if (header->share_log_threshold) header->share_log_threshold(internal::LogThreshold());
    return table;
  }
  std::string where;
  for (const std::string& t : tries) where += (where.empty() ? "" : ", ") + t;
  return Status::Unavailable(std::string("cannot load ") + spec.what + " " + spec.file +
                             " (tried " + where + ")" + (said.empty() ? "" : ": " + said) +
                             "; it is installed next to libcumulus.so (build/lib in a build "
                             "tree): set " +
                             spec.env + " to its path");
}

}  // namespace cumulus
