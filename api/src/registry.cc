#include "cumulus/internal/registry.h"

#include <cstdio>
#include <map>
#include <mutex>
#include <unordered_map>

namespace cumulus {
namespace internal {

namespace {
struct Registry {
  std::mutex mu;
  std::unordered_map<std::string, RemoteFunction> by_name;
  std::unordered_map<std::string, std::string> name_by_key;
};
Registry& TheRegistry() {
  static Registry* r = new Registry();  // never destroyed: used from static initializers
  return *r;
}
}  // namespace

bool RegisterFunction(const std::string& key, RemoteFunction function) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto existing = r.name_by_key.find(key);
  if (existing != r.name_by_key.end()) return existing->second == function.name;
  if (r.by_name.count(function.name)) {
    std::fprintf(stderr, "cumulus: two remote functions are both named %s; keeping the first\n",
                 function.name.c_str());
    return false;
  }
  r.name_by_key[key] = function.name;
  std::string name = function.name;
  r.by_name.emplace(std::move(name), std::move(function));
  return true;
}

const RemoteFunction* FindFunction(const std::string& name) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_name.find(name);
  return it == r.by_name.end() ? nullptr : &it->second;  // entries are never erased
}

std::string NameOfKey(const std::string& key) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.name_by_key.find(key);
  return it == r.name_by_key.end() ? std::string() : it->second;
}

std::vector<std::string> RegisteredNames() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (auto& [name, f] : r.by_name) names.push_back(name);
  return names;
}

std::vector<const RemoteFunction*> RegisteredFunctions() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::map<std::string, const RemoteFunction*> sorted;
  for (auto& [name, f] : r.by_name) sorted[name] = &f;
  std::vector<const RemoteFunction*> out;
  for (auto& [name, f] : sorted) out.push_back(f);
  return out;
}

std::string NormalizeName(std::string_view spelled) {
  std::string out;
  for (char c : spelled) {
    if (c != '&' && c != ' ' && c != '\t' && c != '\n') out.push_back(c);
  }
  return out;
}

}  // namespace internal
}  // namespace cumulus
