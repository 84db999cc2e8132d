// Serialization of task arguments, return values and Put objects.
//
// Built in: arithmetic types, enums, std::string, std::vector, std::array, std::map,
// std::unordered_map, std::set, std::pair, std::tuple, std::optional, and nestings of these.
// A vector of arithmetic values is one memcpy.
//
// Your own struct is one line inside it, listing its fields:
//
//   struct Sample {
//     std::vector<float> pixels;
//     int label;
//     CUMULUS_SERIALIZE(pixels, label)
//   };
//
// Every encoded value starts with a fingerprint of its type (a hash of its name as the compiler
// spells it), so reading bytes as the wrong type is an InvalidArgument, never garbage. Two types
// of the same name in different anonymous namespaces share a fingerprint, and fingerprints differ
// between compilers: the format is for processes running the same program build (the job's
// shipped binary), not a long-term storage format.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cumulus/status.h"

namespace cumulus {

// Where encoded bytes go: a string (the default), nowhere (counting only), or a caller's buffer
// of the counted size (so a large value is encoded straight into the object store).
class Writer {
 public:
  Writer() = default;
  static Writer Counter() {
    Writer w;
    w.counting_ = true;
    return w;
  }
  static Writer Into(uint8_t* buffer) {
    Writer w;
    w.buffer_ = buffer;
    return w;
  }
  void Bytes(const void* p, size_t n) {
    if (n == 0) return;  // p may be null (an empty vector's data()): no memcpy
    if (counting_) {
      written_ += n;
    } else if (buffer_) {
      std::memcpy(buffer_ + written_, p, n);
      written_ += n;
    } else {
      out_.append(static_cast<const char*>(p), n);
    }
  }
  template <typename T>
  void Raw(const T& v) {
    Bytes(&v, sizeof(T));
  }
  std::string& str() { return out_; }
  size_t written() const { return buffer_ || counting_ ? written_ : out_.size(); }

 private:
  std::string out_;
  bool counting_ = false;
  uint8_t* buffer_ = nullptr;
  size_t written_ = 0;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  // False (and a sticky error) if fewer than n bytes remain.
  bool Bytes(void* p, size_t n) {
    if (!ok_ || n > in_.size() - pos_) return Fail(n);
    if (n == 0) return true;  // p may be null (an empty vector's data()): no memcpy
    std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  template <typename T>
  bool Raw(T* v) {
    return Bytes(v, sizeof(T));
  }
  bool ok() const { return ok_; }
  size_t remaining() const { return in_.size() - pos_; }
  bool Fail(size_t wanted) {
    if (ok_)
      error_ = "needs " + std::to_string(wanted) + " more bytes at offset " + std::to_string(pos_) +
               " of " + std::to_string(in_.size());
    ok_ = false;
    return false;
  }
  bool FailWith(std::string why) {
    if (ok_) error_ = std::move(why);
    ok_ = false;
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
  std::string error_;
};

template <typename T, typename Enable = void>
struct Serializer;

namespace internal {
template <typename T>
constexpr std::string_view TypeName() {
  std::string_view p = __PRETTY_FUNCTION__;
  size_t start = p.find("T = ") + 4;
  size_t end = p.find_first_of(";]", start);
  return p.substr(start, end - start);
}
template <typename T>
constexpr uint64_t TypeFingerprint() {
  uint64_t h = 1469598103934665603ull;
  for (char c : TypeName<T>()) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}
template <typename T, typename = void>
struct HasSerializeMember : std::false_type {};
template <typename T>
struct HasSerializeMember<T, std::void_t<decltype(&T::template CumulusFields<Writer>)>>
    : std::true_type {};

// The types of a CUMULUS_SERIALIZE struct's fields, for its type descriptor (internal/type_desc.h):
// FieldTypeList is only named in an unevaluated context (its return type), never called.
template <typename... F>
struct TypeList {};
template <typename... F>
TypeList<F...> FieldTypeList(const F&...) {
  return {};
}

// Applies a writer or reader to each field of a CUMULUS_SERIALIZE struct.
struct FieldWriter {
  Writer& w;
  template <typename... F>
  void operator()(const F&... fields) {
    (Serializer<F>::Write(w, fields), ...);
  }
};
struct FieldReader {
  Reader& r;
  template <typename... F>
  void operator()(F&... fields) {
    (Serializer<F>::Read(r, &fields), ...);
  }
};
}  // namespace internal

template <typename T>
struct Serializer<T, std::enable_if_t<(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) ||
                                      std::is_enum_v<T>>> {
  static void Write(Writer& w, const T& v) { w.Raw(v); }
  static bool Read(Reader& r, T* v) { return r.Raw(v); }
};

// A bool is one byte, 0 or 1: any other byte is an error, not undefined behaviour.
template <>
struct Serializer<bool> {
  static void Write(Writer& w, const bool& v) { w.Raw<uint8_t>(v ? 1 : 0); }
  static bool Read(Reader& r, bool* v) {
    uint8_t b = 0;
    if (!r.Raw(&b)) return false;
    if (b > 1) return r.FailWith("a bool byte is " + std::to_string(b));
    *v = b == 1;
    return true;
  }
};

template <>
struct Serializer<std::string> {
  static void Write(Writer& w, const std::string& v) {
    w.Raw<uint64_t>(v.size());
    w.Bytes(v.data(), v.size());
  }
  static bool Read(Reader& r, std::string* v) {
    uint64_t n = 0;
    if (!r.Raw(&n)) return false;
    if (n > r.remaining()) return r.Fail(n);
    v->resize(n);
    return r.Bytes(v->data(), n);
  }
};

template <typename T>
struct Serializer<std::vector<T>> {
  static constexpr bool kFlat = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;
  static void Write(Writer& w, const std::vector<T>& v) {
    w.Raw<uint64_t>(v.size());
    if constexpr (kFlat) {
      w.Bytes(v.data(), v.size() * sizeof(T));
    } else {
      for (const T& e : v) Serializer<T>::Write(w, e);
    }
  }
  static bool Read(Reader& r, std::vector<T>* v) {
    uint64_t n = 0;
    if (!r.Raw(&n)) return false;
    if constexpr (kFlat) {
      if (n > r.remaining() / sizeof(T)) return r.Fail(n * sizeof(T));
      v->resize(n);
      return r.Bytes(v->data(), n * sizeof(T));
    } else {
      // Grow as elements really arrive: a forged count cannot make us allocate for them up front.
      if (n > r.remaining()) return r.Fail(n);  // every element takes at least one byte
      v->clear();
      v->reserve(std::min<uint64_t>(n, 1024));
      for (uint64_t i = 0; i < n; ++i) {
        T e{};
        if (!Serializer<T>::Read(r, &e)) return false;
        v->push_back(std::move(e));
      }
      return true;
    }
  }
};

template <typename T, size_t N>
struct Serializer<std::array<T, N>> {
  static void Write(Writer& w, const std::array<T, N>& v) {
    for (const T& e : v) Serializer<T>::Write(w, e);
  }
  static bool Read(Reader& r, std::array<T, N>* v) {
    for (T& e : *v) {
      if (!Serializer<T>::Read(r, &e)) return false;
    }
    return true;
  }
};

template <typename A, typename B>
struct Serializer<std::pair<A, B>> {
  static void Write(Writer& w, const std::pair<A, B>& v) {
    Serializer<A>::Write(w, v.first);
    Serializer<B>::Write(w, v.second);
  }
  static bool Read(Reader& r, std::pair<A, B>* v) {
    return Serializer<A>::Read(r, &v->first) && Serializer<B>::Read(r, &v->second);
  }
};

template <typename... Ts>
struct Serializer<std::tuple<Ts...>> {
  static void Write(Writer& w, const std::tuple<Ts...>& v) {
    std::apply([&](const Ts&... e) { (Serializer<Ts>::Write(w, e), ...); }, v);
  }
  static bool Read(Reader& r, std::tuple<Ts...>* v) {
    return std::apply([&](Ts&... e) { return (Serializer<Ts>::Read(r, &e) && ...); }, *v);
  }
};

template <typename T>
struct Serializer<std::optional<T>> {
  static void Write(Writer& w, const std::optional<T>& v) {
    w.Raw<uint8_t>(v ? 1 : 0);
    if (v) Serializer<T>::Write(w, *v);
  }
  static bool Read(Reader& r, std::optional<T>* v) {
    uint8_t has = 0;
    if (!r.Raw(&has)) return false;
    if (!has) {
      v->reset();
      return true;
    }
    v->emplace();
    return Serializer<T>::Read(r, &**v);
  }
};

namespace internal {
template <typename M>
struct MapSerializer {
  using K = typename M::key_type;
  using V = typename M::mapped_type;
  static void Write(Writer& w, const M& m) {
    w.Raw<uint64_t>(m.size());
    for (auto& [k, v] : m) {
      Serializer<K>::Write(w, k);
      Serializer<V>::Write(w, v);
    }
  }
  static bool Read(Reader& r, M* m) {
    uint64_t n = 0;
    if (!r.Raw(&n)) return false;
    if (n > r.remaining()) return r.Fail(n);
    m->clear();
    for (uint64_t i = 0; i < n; ++i) {
      K k{};
      V v{};
      if (!Serializer<K>::Read(r, &k) || !Serializer<V>::Read(r, &v)) return false;
      m->emplace(std::move(k), std::move(v));
    }
    return true;
  }
};
}  // namespace internal

template <typename K, typename V, typename C, typename A>
struct Serializer<std::map<K, V, C, A>> : internal::MapSerializer<std::map<K, V, C, A>> {};
template <typename K, typename V, typename H, typename E, typename A>
struct Serializer<std::unordered_map<K, V, H, E, A>>
    : internal::MapSerializer<std::unordered_map<K, V, H, E, A>> {};

template <typename T, typename C, typename A>
struct Serializer<std::set<T, C, A>> {
  static void Write(Writer& w, const std::set<T, C, A>& s) {
    w.Raw<uint64_t>(s.size());
    for (const T& e : s) Serializer<T>::Write(w, e);
  }
  static bool Read(Reader& r, std::set<T, C, A>* s) {
    uint64_t n = 0;
    if (!r.Raw(&n)) return false;
    if (n > r.remaining()) return r.Fail(n);
    s->clear();
    for (uint64_t i = 0; i < n; ++i) {
      T e{};
      if (!Serializer<T>::Read(r, &e)) return false;
      s->insert(std::move(e));
    }
    return true;
  }
};

// Structs that list their fields with CUMULUS_SERIALIZE.
template <typename T>
struct Serializer<T, std::enable_if_t<internal::HasSerializeMember<T>::value>> {
  static void Write(Writer& w, const T& v) { const_cast<T&>(v).CumulusFields(w); }
  static bool Read(Reader& r, T* v) {
    v->CumulusFields(r);
    return r.ok();
  }
};

// Encodes `value` with its type's fingerprint.
template <typename T>
std::string Serialize(const T& value) {
  Writer w;
  w.Raw<uint64_t>(internal::TypeFingerprint<T>());
  Serializer<T>::Write(w, value);
  return std::move(w.str());
}

// The size Serialize(value) would have, without making it.
template <typename T>
size_t SerializedSize(const T& value) {
  Writer w = Writer::Counter();
  w.Raw<uint64_t>(internal::TypeFingerprint<T>());
  Serializer<T>::Write(w, value);
  return w.written();
}

// Writes exactly SerializedSize(value) bytes of Serialize(value) to `out`.
template <typename T>
void SerializeInto(const T& value, uint8_t* out) {
  Writer w = Writer::Into(out);
  w.Raw<uint64_t>(internal::TypeFingerprint<T>());
  Serializer<T>::Write(w, value);
}

// Decodes bytes made by Serialize<T>. InvalidArgument if they hold another type, are cut short or
// have bytes left over.
template <typename T>
Result<T> Deserialize(std::string_view bytes) {
  Reader r(bytes);
  uint64_t fingerprint = 0;
  if (!r.Raw(&fingerprint) || fingerprint != internal::TypeFingerprint<T>()) {
    return Status::InvalidArgument(
        "the value is not a " + std::string(internal::TypeName<T>()) +
        (r.ok() ? " (it was written as another type)" : " (" + r.error() + ")"));
  }
  T value{};
  Serializer<T>::Read(r, &value);
  if (r.ok() && r.remaining() != 0) r.FailWith(std::to_string(r.remaining()) + " bytes left over");
  if (!r.ok()) {
    return Status::InvalidArgument("cannot read a " + std::string(internal::TypeName<T>()) + ": " +
                                   r.error());
  }
  return value;
}

}  // namespace cumulus

// Inside a struct: lists the fields that travel. `CUMULUS_SERIALIZE(a, b, c)`.
// It also records the fields' names and types (CumulusFieldNames, CumulusFieldTypes), so that
// `cumulus call` can write the struct as a JSON object by field name
// (cumulus/internal/type_desc.h).
#define CUMULUS_SERIALIZE(...)                                                               \
  template <typename CumulusArchive>                                                         \
  void CumulusFields(CumulusArchive& archive) {                                              \
    if constexpr (std::is_same_v<CumulusArchive, ::cumulus::Writer>) {                       \
      ::cumulus::internal::FieldWriter{archive}(__VA_ARGS__);                                \
    } else {                                                                                 \
      ::cumulus::internal::FieldReader{archive}(__VA_ARGS__);                                \
    }                                                                                        \
  }                                                                                          \
  auto CumulusFieldTypes() const { return ::cumulus::internal::FieldTypeList(__VA_ARGS__); } \
  static constexpr const char* CumulusFieldNames() { return #__VA_ARGS__; }
