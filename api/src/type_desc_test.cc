// Type descriptors made from C++ types (cumulus/internal/type_desc.h).
#include "cumulus/internal/type_desc.h"

#include <gtest/gtest.h>

#include "cumulus/remote.h"

namespace cumulus {
namespace {

struct Config {
  double lr = 0;
  int32_t epochs = 0;
  std::vector<std::string> tags;
  CUMULUS_SERIALIZE(lr, epochs, tags)
};

struct Nested {
  Config config;
  std::optional<uint8_t> level;
  CUMULUS_SERIALIZE(this->config, level)
};

struct Tree {
  int32_t value = 0;
  std::vector<Tree> children;
  CUMULUS_SERIALIZE(value, children)
};

enum class Color : uint16_t { kRed, kGreen };

struct OwnFormat {
  int x = 0;
};

int64_t Square(int64_t x) { return x * x; }
void Nothing(const std::string&) {}

TEST(TypeDescTest, ArithmeticTypesSayTheirWidthAndSign) {
  using internal::DescribeType;
  EXPECT_EQ(DescribeType<bool>(), "bool");
  EXPECT_EQ(DescribeType<int8_t>(), "int8");
  EXPECT_EQ(DescribeType<uint16_t>(), "uint16");
  EXPECT_EQ(DescribeType<int32_t>(), "int32");
  EXPECT_EQ(DescribeType<uint64_t>(), "uint64");
  EXPECT_EQ(DescribeType<float>(), "float32");
  EXPECT_EQ(DescribeType<double>(), "float64");
  EXPECT_EQ(DescribeType<long double>().rfind("opaque\"", 0), 0u);
}

TEST(TypeDescTest, ContainersNest) {
  using internal::DescribeType;
  EXPECT_EQ(DescribeType<std::string>(), "string");
  EXPECT_EQ((DescribeType<std::map<std::string, std::vector<float>>>()),
            "map<string,vector<float32>>");
  EXPECT_EQ((DescribeType<std::pair<int8_t, std::optional<bool>>>()), "tuple<int8,optional<bool>>");
  EXPECT_EQ((DescribeType<std::tuple<>>()), "tuple<>");
  EXPECT_EQ((DescribeType<std::array<uint8_t, 3>>()), "array<uint8,3>");
  EXPECT_EQ((DescribeType<std::set<int64_t>>()), "set<int64>");
  EXPECT_EQ((DescribeType<std::unordered_map<int32_t, bool>>()), "map<int32,bool>");
}

TEST(TypeDescTest, StructsListTheirFieldsByName) {
  std::string d = internal::DescribeType<Nested>();
  EXPECT_NE(d.find("struct\""), std::string::npos) << d;
  EXPECT_NE(d.find("{\"config\":struct\""), std::string::npos) << d;
  EXPECT_NE(d.find("{\"lr\":float64,\"epochs\":int32,\"tags\":vector<string>}"), std::string::npos)
      << d;
  EXPECT_NE(d.find(",\"level\":optional<uint8>}"), std::string::npos) << d;
}

TEST(TypeDescTest, ARecursiveStructHasNoJsonForm) {
  std::string d = internal::DescribeType<Tree>();
  EXPECT_NE(d.find("\"children\":vector<opaque\""), std::string::npos) << d;
}

TEST(TypeDescTest, EnumsAndOwnFormats) {
  std::string e = internal::DescribeType<Color>();
  EXPECT_EQ(e.rfind("enum\"", 0), 0u) << e;
  EXPECT_NE(e.find("<uint16>"), std::string::npos) << e;
  EXPECT_EQ(internal::DescribeType<OwnFormat>().rfind("opaque\"", 0), 0u);
}

TEST(TypeDescTest, SignaturesCarryFingerprints) {
  auto s = internal::SignatureOf<int64_t, int64_t>();
  ASSERT_EQ(s.params.size(), 1u);
  EXPECT_EQ(s.params[0], "int64");
  EXPECT_EQ(s.param_fingerprints[0], internal::TypeFingerprint<int64_t>());
  EXPECT_EQ(s.result, "int64");
  auto v = internal::SignatureOf<void, const std::string&>();
  EXPECT_EQ(v.params[0], "string");
  EXPECT_EQ(v.result, "void");
  EXPECT_EQ(v.result_fingerprint, internal::TypeFingerprint<Void>());
  (void)Square;
  (void)Nothing;
}

TEST(TypeDescTest, FieldNamesSplitOnTopLevelCommas) {
  auto n = internal::SplitFieldNames(" a, this->b ,c[f(1, 2)], std::get<0>(t) ");
  ASSERT_EQ(n.size(), 4u);
  EXPECT_EQ(n[0], "a");
  EXPECT_EQ(n[1], "b");
  EXPECT_EQ(n[2], "c[f(1, 2)]");
  EXPECT_EQ(n[3], "std::get<0>(t)");
  EXPECT_TRUE(internal::SplitFieldNames("").empty());
}

}  // namespace
}  // namespace cumulus
