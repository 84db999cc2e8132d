// The JSON form of serializable values, driven by a type descriptor (type_node.h): JSON to the
// exact bytes Serialize<T> makes (cumulus/serialization.h), and such bytes back to JSON. It lets
// the `cumulus` command call a function of a job whose C++ types it does not have.
//
// The JSON form of each type (docs/call.md):
//   bool -> true/false;  intN/uintN, enums -> an integer written without fraction or exponent,
//   in range;  float32/64 -> a number, or "NaN", "Infinity", "-Infinity";  string -> a string
//   (UTF-8);  vector, set, array<T,N> (exactly N), tuple (exactly its size) -> an array;
//   optional -> null or the value;  map<string,V> -> an object;  other maps -> an array of
//   [key, value] pairs;  struct -> an object with exactly its fields, by name;  void -> null.
//
// Errors are InvalidArgument naming where: "args[1].lr: expected float64, got a string".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cumulus/status.h"
#include "runtime/call/json_value.h"
#include "runtime/call/type_node.h"

namespace cumulus {

// The bytes Serialize<T>(value) would make for the T `type` describes and whose fingerprint is
// `fingerprint`. `path` names the value in errors ("args[0]").
Result<std::string> JsonToBytes(const JsonValue& value, const TypeNode& type, uint64_t fingerprint,
                                const std::string& path);

// The JSON text of a value serialized as the T `type` describes. InvalidArgument if the bytes do
// not hold one (another fingerprint, cut short, bytes left over, a bool byte that is not 0 or 1).
Result<std::string> BytesToJson(std::string_view bytes, const TypeNode& type, uint64_t fingerprint);

}  // namespace cumulus
