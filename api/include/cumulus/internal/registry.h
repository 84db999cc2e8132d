// The registry of remote functions, actor factories and actor methods: name <-> code. Filled at
// static-initialization time by CUMULUS_REMOTE (cumulus/remote.h); the driver looks names up by
// function pointer, a worker (the same program, shipped) looks code up by name.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

namespace cumulus {
namespace internal {

using Args = std::vector<std::string_view>;

// The types of a function's parameters and result: type descriptors (internal/type_desc.h) and
// the fingerprints that precede each serialized value (serialization.h).
struct TypeSignature {
  std::vector<std::string> params;
  std::vector<uint64_t> param_fingerprints;
  std::string result;  // "void" for a function that returns nothing (its value is a Void)
  uint64_t result_fingerprint = 0;
};

struct RemoteFunction {
  std::string name;  // "Add", "Counter::Incr"
  size_t arity = 0;
  std::string class_name;  // factories and methods: the actor class (typeid name)
  // Normal functions and methods: runs the code on serialized arguments, returns the serialized
  // result. `instance` is the actor for methods, null otherwise. Throws on any failure.
  std::function<std::string(void* instance, const Args& args)> invoke;
  // Factories: constructs the actor. Throws on any failure.
  std::function<std::shared_ptr<void>(const Args& args)> construct;
  // Its parameter and result types, made on demand (the driver publishes them for `cumulus call`).
  TypeSignature (*signature)() = nullptr;
};

// Key of a function pointer or a member function pointer: its type and its bytes.
template <typename F>
std::string KeyOf(F f) {
  std::string key = typeid(F).name();
  key.push_back('#');
  key.append(reinterpret_cast<const char*>(&f), sizeof(F));
  return key;
}

// Returns false (and keeps the first) when the name is already taken by another function.
bool RegisterFunction(const std::string& key, RemoteFunction function);
const RemoteFunction* FindFunction(const std::string& name);
// The registered name of the function with this key; empty if it was never registered.
std::string NameOfKey(const std::string& key);
std::vector<std::string> RegisteredNames();
// Every registered function, factory and method, by name (entries are never erased).
std::vector<const RemoteFunction*> RegisteredFunctions();

// "&Counter::Incr " -> "Counter::Incr".
std::string NormalizeName(std::string_view spelled);

}  // namespace internal
}  // namespace cumulus
