// cumulus::Deserialize (api/include/cumulus/serialization.h), the user-value decoder, over
// arbitrary bytes for several types: it must return a value or InvalidArgument, never crash, and
// never allocate for a length the bytes cannot hold (a count of 2^60 is refused up front).
//
// Input: byte 0 picks the type; the rest follows that type's fingerprint (so the fuzzer gets past
// the type check and reaches the value's own decoding).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cumulus/serialization.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

struct Sample {
  std::vector<float> pixels;
  int label = 0;
  std::string name;
  std::optional<std::map<std::string, int>> tags;
  bool flag = false;
  CUMULUS_SERIALIZE(pixels, label, name, tags, flag)
};

struct Nested {
  std::vector<Sample> samples;
  std::map<int, std::vector<std::string>> index;
  std::tuple<int8_t, double, std::set<int>> extra;
  std::pair<std::string, std::unordered_map<std::string, std::vector<double>>> named;
  CUMULUS_SERIALIZE(samples, index, extra, named)
};

using V1 = int;
using V2 = std::string;
using V3 = std::vector<double>;
using V4 = std::map<std::string, int>;
using V5 = Sample;
using V6 = Nested;
using V7 = std::vector<std::vector<std::string>>;
using V8 = std::vector<std::optional<std::array<uint16_t, 3>>>;
using V9 = std::vector<bool>;

template <typename T>
void Try(const uint8_t* data, size_t size) {
  std::string bytes(sizeof(uint64_t) + size, '\0');
  uint64_t fp = cumulus::internal::TypeFingerprint<T>();
  std::memcpy(bytes.data(), &fp, sizeof(fp));
  if (size) std::memcpy(bytes.data() + sizeof(fp), data, size);
  auto v = cumulus::Deserialize<T>(bytes);
  if (v.ok()) {
    // What decodes must encode back to the same bytes (nothing was misread).
    if (cumulus::Serialize(*v).size() != bytes.size()) {
      // Maps and sets may drop duplicate keys: only those types may shrink.
      if constexpr (!std::is_same_v<T, V4> && !std::is_same_v<T, V5> && !std::is_same_v<T, V6>) {
        __builtin_trap();
      }
    }
  } else if (v.status().code() != cumulus::StatusCode::kInvalidArgument) {
    __builtin_trap();
  }
}

template <typename T>
std::string Seed(uint8_t which, const T& value) {
  std::string s = cumulus::Serialize(value);
  return std::string(1, static_cast<char>(which)) + s.substr(sizeof(uint64_t));
}

std::vector<std::string> Seeds() {
  Sample s{{1.5f, 2.5f}, 7, "seven", std::map<std::string, int>{{"a", 1}}, true};
  Nested n{{s, Sample{}}, {{1, {"x", "y"}}}, {3, 0.5, {1, 2}}, {"k", {{"v", {1.0}}}}};
  return {Seed(0, V1{42}), Seed(1, V2{"hello"}), Seed(2, V3{1.0, 2.0, 3.0}),
          Seed(3, V4{{"one", 1}, {"two", 2}}), Seed(4, s), Seed(5, n),
          Seed(6, V7{{"a"}, {}, {"b", "c"}}),
          Seed(7, V8{std::nullopt, std::array<uint16_t, 3>{1, 2, 3}}), Seed(8, V9{true, false}),
          // A string and a vector that claim 2^60 elements.
          std::string("\x01", 1) + std::string("\x00\x00\x00\x00\x00\x00\x00\x10", 8) + "abc",
          std::string("\x02", 1) + std::string("\x00\x00\x00\x00\x00\x00\x00\x10", 8) + "abc"};
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  cumulus::fuzz::MaybeMakeSeeds(argc, argv, Seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t* rest = data + 1;
  size_t n = size - 1;
  switch (data[0] % 9) {
    case 0:
      Try<V1>(rest, n);
      break;
    case 1:
      Try<V2>(rest, n);
      break;
    case 2:
      Try<V3>(rest, n);
      break;
    case 3:
      Try<V4>(rest, n);
      break;
    case 4:
      Try<V5>(rest, n);
      break;
    case 5:
      Try<V6>(rest, n);
      break;
    case 6:
      Try<V7>(rest, n);
      break;
    case 7:
      Try<V8>(rest, n);
      break;
    default:
      Try<V9>(rest, n);
      break;
  }
  return 0;
}
