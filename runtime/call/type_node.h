// A type descriptor (cumulus/internal/type_desc.h) read back into a tree, in a process that does
// not have the C++ type: what the JSON codec (json_codec.h) walks. Bounded: nesting depth and
// descriptor length.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cumulus/status.h"

namespace cumulus {

struct TypeNode {
  enum Kind {
    kBool,
    kInt,    // bits, is_signed
    kFloat,  // bits (32 or 64)
    kString,
    kVoid,
    kVector,    // children[0]
    kSet,       // children[0]
    kOptional,  // children[0]
    kMap,       // children[0] key, children[1] value
    kArray,     // children[0], length
    kTuple,     // children
    kEnum,      // name, children[0] (kInt)
    kStruct,    // name, field_names, children
    kOpaque,    // name: no JSON form
  };
  Kind kind = kOpaque;
  int bits = 0;
  bool is_signed = false;
  uint64_t length = 0;
  std::string name;
  std::vector<std::string> field_names;
  std::vector<TypeNode> children;

  // The first type without a JSON form inside this one (itself included), or null.
  const TypeNode* FirstOpaque() const;
  // How a person reads it: "int64", "vector<Config{lr: float64, epochs: int32}>".
  std::string Display() const;
};

constexpr size_t kMaxTypeDepth = 64;
constexpr size_t kMaxTypeDescriptorBytes = 64 * 1024;

// InvalidArgument naming the position if `text` is not a descriptor.
Result<TypeNode> ParseTypeDescriptor(std::string_view text);

}  // namespace cumulus
