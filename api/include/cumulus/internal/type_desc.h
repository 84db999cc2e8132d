// Type descriptors: the shape of a serializable C++ type as text, made by templates from the type
// itself, so that a process that does not have the type (the `cumulus` command) can write a value
// of it from JSON and read one back (runtime/call/json_codec.h). The grammar (docs/call.md):
//
//   bool  int8 int16 int32 int64  uint8 uint16 uint32 uint64  float32 float64  string  void
//   vector<T>  set<T>  optional<T>  map<K,V>  array<T,N>  tuple<T1,T2,...>   (pair: tuple<A,B>)
//   enum"NAME"<INT>                     an enum, written as its underlying integer
//   struct"NAME"{"field":T,...}         a CUMULUS_SERIALIZE struct, its fields in order
//   opaque"NAME"                        a type without a JSON form (own Serializer, long double)
//
// NAME and field names are JSON strings. Each matches the bytes its Serializer writes
// (cumulus/serialization.h); a value at the top level is preceded by its type's fingerprint.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cumulus/internal/json.h"
#include "cumulus/serialization.h"

namespace cumulus {
namespace internal {

// "a, b, this->c" -> {"a", "b", "c"} (CUMULUS_SERIALIZE's stringized field list).
std::vector<std::string> SplitFieldNames(std::string_view list);

// What describing one type needs: the structs being described (a struct that contains itself
// has no JSON form) and a depth bound.
struct DescribeContext {
  std::vector<uint64_t> open;
  static constexpr size_t kMaxDepth = 32;
};

template <typename T, typename Enable = void>
struct TypeDescriber {
  static void Append(std::string& out, DescribeContext&) {
    out += "opaque";
    out += JsonQuote(TypeName<T>());
  }
};

template <typename T>
void AppendType(std::string& out, DescribeContext& ctx) {
  TypeDescriber<T>::Append(out, ctx);
}

template <typename T>
std::string DescribeType() {
  std::string out;
  DescribeContext ctx;
  AppendType<T>(out, ctx);
  return out;
}

template <>
struct TypeDescriber<bool> {
  static void Append(std::string& out, DescribeContext&) { out += "bool"; }
};

template <typename T>
struct TypeDescriber<
    T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> && (sizeof(T) <= 8)>> {
  static void Append(std::string& out, DescribeContext&) {
    out += std::is_signed_v<T> ? "int" : "uint";
    out += std::to_string(sizeof(T) * 8);
  }
};

template <typename T>
struct TypeDescriber<
    T, std::enable_if_t<std::is_floating_point_v<T> && std::numeric_limits<T>::is_iec559 &&
                        (sizeof(T) == 4 || sizeof(T) == 8)>> {
  static void Append(std::string& out, DescribeContext&) {
    out += sizeof(T) == 4 ? "float32" : "float64";
  }
};

template <typename T>
struct TypeDescriber<T, std::enable_if_t<std::is_enum_v<T>>> {
  static void Append(std::string& out, DescribeContext& ctx) {
    out += "enum";
    out += JsonQuote(TypeName<T>());
    out += '<';
    AppendType<std::underlying_type_t<T>>(out, ctx);
    out += '>';
  }
};

template <>
struct TypeDescriber<std::string> {
  static void Append(std::string& out, DescribeContext&) { out += "string"; }
};

template <typename... T>
void AppendTypes(std::string& out, DescribeContext& ctx) {
  [[maybe_unused]] bool first = true;
  ((out += first ? "" : ",", first = false, AppendType<T>(out, ctx)), ...);
}

template <typename T>
struct TypeDescriber<std::vector<T>> {
  static void Append(std::string& out, DescribeContext& ctx) {
    out += "vector<";
    AppendType<T>(out, ctx);
    out += '>';
  }
};
template <typename T, typename C, typename A>
struct TypeDescriber<std::set<T, C, A>> {
  static void Append(std::string& out, DescribeContext& ctx) {
    out += "set<";
    AppendType<T>(out, ctx);
    out += '>';
  }
};
template <typename T>
struct TypeDescriber<std::optional<T>> {
  static void Append(std::string& out, DescribeContext& ctx) {
    out += "optional<";
    AppendType<T>(out, ctx);
    out += '>';
  }
};
template <typename T, size_t N>
struct TypeDescriber<std::array<T, N>> {
  static void Append(std::string& out, DescribeContext& ctx) {
    out += "array<";
    AppendType<T>(out, ctx);
    out += ',' + std::to_string(N) + '>';
  }
};
template <typename A, typename B>
struct TypeDescriber<std::pair<A, B>> {
  static void Append(std::string& out, DescribeContext& ctx) {
    out += "tuple<";
    AppendTypes<A, B>(out, ctx);
    out += '>';
  }
};
template <typename... Ts>
struct TypeDescriber<std::tuple<Ts...>> {
  static void Append(std::string& out, DescribeContext& ctx) {
    out += "tuple<";
    AppendTypes<Ts...>(out, ctx);
    out += '>';
  }
};
template <typename M>
struct MapDescriber {
  static void Append(std::string& out, DescribeContext& ctx) {
    out += "map<";
    AppendTypes<typename M::key_type, typename M::mapped_type>(out, ctx);
    out += '>';
  }
};
template <typename K, typename V, typename C, typename A>
struct TypeDescriber<std::map<K, V, C, A>> : MapDescriber<std::map<K, V, C, A>> {};
template <typename K, typename V, typename H, typename E, typename A>
struct TypeDescriber<std::unordered_map<K, V, H, E, A>>
    : MapDescriber<std::unordered_map<K, V, H, E, A>> {};

template <typename... F>
void AppendFields(TypeList<F...>, const std::vector<std::string>& names, std::string& out,
                  DescribeContext& ctx) {
  [[maybe_unused]] size_t i = 0;
  ((out += i ? "," : "", out += JsonQuote(names[i]), out += ':', AppendType<F>(out, ctx), ++i),
   ...);
}

template <typename T>
struct TypeDescriber<T, std::enable_if_t<HasSerializeMember<T>::value>> {
  static void Append(std::string& out, DescribeContext& ctx) {
    using Fields = decltype(std::declval<const T&>().CumulusFieldTypes());
    uint64_t me = TypeFingerprint<T>();
    std::vector<std::string> names = SplitFieldNames(T::CumulusFieldNames());
    bool recursive = false;
    for (uint64_t f : ctx.open) recursive = recursive || f == me;
    if (recursive || ctx.open.size() >= DescribeContext::kMaxDepth ||
        names.size() != FieldCount(Fields{})) {
      out += "opaque";
      out += JsonQuote(TypeName<T>());
      return;
    }
    ctx.open.push_back(me);
    out += "struct";
    out += JsonQuote(TypeName<T>());
    out += '{';
    AppendFields(Fields{}, names, out, ctx);
    out += '}';
    ctx.open.pop_back();
  }

 private:
  template <typename... F>
  static constexpr size_t FieldCount(TypeList<F...>) {
    return sizeof...(F);
  }
};

}  // namespace internal
}  // namespace cumulus
