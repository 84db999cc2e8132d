// The JSON parser, type descriptors read back, the JSON codec against the real serializer, and
// the function catalog.
#include "runtime/call/json_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cumulus/remote.h"
#include "runtime/call/function_catalog.h"

namespace cumulus {
namespace {

struct Config {
  double lr = 0;
  int32_t epochs = 0;
  std::vector<std::string> tags;
  std::optional<bool> shuffle;
  CUMULUS_SERIALIZE(lr, epochs, tags, shuffle)
};

struct Report {
  std::map<std::string, float> metrics;
  std::map<int32_t, std::string> names;
  std::pair<uint8_t, int16_t> range;
  std::array<uint64_t, 2> counts{};
  std::set<int64_t> seen;
  Config config;
  CUMULUS_SERIALIZE(metrics, names, range, counts, seen, config)
};

enum class Mode : int8_t { kFast = 1, kSlow = -1 };

struct Opaque {
  int x = 0;
};

// Serializes `value`, prints it as JSON, reads the JSON back as bytes: the bytes must be the
// serializer's own, and the JSON what is expected.
template <typename T>
std::string RoundTrip(const T& value) {
  auto type = ParseTypeDescriptor(internal::DescribeType<T>());
  EXPECT_TRUE(type.ok()) << type.status().ToString();
  if (!type.ok()) return "";
  uint64_t fp = internal::TypeFingerprint<T>();
  std::string bytes = Serialize(value);
  auto json = BytesToJson(bytes, *type, fp);
  EXPECT_TRUE(json.ok()) << json.status().ToString();
  if (!json.ok()) return "";
  auto parsed = ParseJson(*json);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString() << " in " << *json;
  if (!parsed.ok()) return "";
  auto back = JsonToBytes(*parsed, *type, fp, "args[0]");
  EXPECT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back.ok() ? *back : "", bytes) << *json;
  return *json;
}

// The error of writing `json` as a T.
template <typename T>
std::string EncodeError(const std::string& json) {
  auto type = ParseTypeDescriptor(internal::DescribeType<T>());
  EXPECT_TRUE(type.ok());
  auto parsed = ParseJson(json);
  if (!parsed.ok()) return parsed.status().message();
  auto bytes = JsonToBytes(*parsed, *type, internal::TypeFingerprint<T>(), "args[1]");
  EXPECT_FALSE(bytes.ok()) << json;
  return bytes.ok() ? "" : bytes.status().message();
}

TEST(JsonCodecTest, ScalarsRoundTrip) {
  EXPECT_EQ(RoundTrip(int64_t{49}), "49");
  EXPECT_EQ(RoundTrip(std::numeric_limits<int64_t>::min()), "-9223372036854775808");
  EXPECT_EQ(RoundTrip(std::numeric_limits<uint64_t>::max()), "18446744073709551615");
  EXPECT_EQ(RoundTrip(int8_t{-128}), "-128");
  EXPECT_EQ(RoundTrip(uint16_t{65535}), "65535");
  EXPECT_EQ(RoundTrip(true), "true");
  EXPECT_EQ(RoundTrip(0.1), "0.1");
  EXPECT_EQ(RoundTrip(1.5f), "1.5");
  EXPECT_EQ(RoundTrip(1e300), "1e+300");
  EXPECT_EQ(RoundTrip(std::numeric_limits<double>::infinity()), "\"Infinity\"");
  EXPECT_EQ(RoundTrip(std::string("h\xC3\xA9llo \"q\"\n")), "\"h\xC3\xA9llo \\\"q\\\"\\n\"");
  EXPECT_EQ(RoundTrip(Mode::kSlow), "-1");
}

TEST(JsonCodecTest, ContainersAndStructsRoundTrip) {
  EXPECT_EQ(RoundTrip(std::vector<int32_t>{1, -2, 3}), "[1,-2,3]");
  EXPECT_EQ(RoundTrip(std::vector<bool>{true, false}), "[true,false]");
  EXPECT_EQ(RoundTrip(std::optional<std::string>()), "null");
  EXPECT_EQ(RoundTrip(std::tuple<>()), "[]");
  Config c{0.25, 3, {"a", "b"}, true};
  EXPECT_EQ(RoundTrip(c), "{\"lr\":0.25,\"epochs\":3,\"tags\":[\"a\",\"b\"],\"shuffle\":true}");
  Report r;
  r.metrics = {{"acc", 0.5f}};
  r.names = {{7, "seven"}};
  r.range = {1, -1};
  r.counts = {2, 3};
  r.seen = {5, -5};
  r.config = c;
  EXPECT_EQ(RoundTrip(r),
            "{\"metrics\":{\"acc\":0.5},\"names\":[[7,\"seven\"]],\"range\":[1,-1],\"counts\":"
            "[2,3],\"seen\":[-5,5],\"config\":{\"lr\":0.25,\"epochs\":3,\"tags\":[\"a\",\"b\"],"
            "\"shuffle\":true}}");
}

TEST(JsonCodecTest, StructsAreWrittenByFieldNameInAnyOrder) {
  auto type = ParseTypeDescriptor(internal::DescribeType<Config>());
  ASSERT_TRUE(type.ok());
  auto parsed = ParseJson(R"({"shuffle": null, "tags": [], "epochs": 9, "lr": 1})");
  ASSERT_TRUE(parsed.ok());
  auto bytes = JsonToBytes(*parsed, *type, internal::TypeFingerprint<Config>(), "args[0]");
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto back = Deserialize<Config>(*bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->lr, 1.0);
  EXPECT_EQ(back->epochs, 9);
  EXPECT_FALSE(back->shuffle.has_value());
}

TEST(JsonCodecTest, WrongValuesSayWhereAndWhat) {
  EXPECT_EQ(EncodeError<Config>(R"({"lr":"x","epochs":1,"tags":[],"shuffle":null})"),
            "args[1].lr: expected float64, got a string");
  EXPECT_EQ(EncodeError<Config>(R"({"lr":1,"epochs":1,"tags":[3],"shuffle":null})"),
            "args[1].tags[0]: expected string, got a number");
  EXPECT_NE(EncodeError<Config>(R"({"lr":1,"epochs":1,"tags":[]})")
                .find("field \"shuffle\" is "
                      "missing"),
            std::string::npos);
  EXPECT_NE(EncodeError<Config>(R"({"lr":1,"epochs":1,"tags":[],"shuffle":null,"x":2})")
                .find("has no field \"x\""),
            std::string::npos);
  EXPECT_EQ(EncodeError<uint8_t>("256"), "args[1]: 256 is out of range for uint8 (0..255)");
  EXPECT_EQ(EncodeError<uint32_t>("-1"), "args[1]: -1 is out of range for uint32 (0..4294967295)");
  EXPECT_EQ(EncodeError<int64_t>("9223372036854775808"),
            "args[1]: 9223372036854775808 is out of range for int64 "
            "(-9223372036854775808..9223372036854775807)");
  EXPECT_EQ(EncodeError<int32_t>("7.5"), "args[1]: expected int32, got 7.5 (not an integer)");
  EXPECT_EQ(EncodeError<float>("1e39"), "args[1]: 1e39 is out of range for float32");
  EXPECT_EQ((EncodeError<std::array<int8_t, 2>>("[1]")),
            "args[1]: expected array<int8, 2>, got an array of 1");
  EXPECT_NE((EncodeError<std::map<int32_t, bool>>("{}")).find("[key, value] pairs"),
            std::string::npos);
  EXPECT_NE(EncodeError<Opaque>("{}").find("no JSON form"), std::string::npos);
}

TEST(JsonCodecTest, BytesThatAreNotTheTypeAreRefused) {
  auto type = ParseTypeDescriptor("vector<int32>");
  ASSERT_TRUE(type.ok());
  uint64_t fp = internal::TypeFingerprint<std::vector<int32_t>>();
  std::string good = Serialize(std::vector<int32_t>{1, 2});
  EXPECT_FALSE(BytesToJson(good, *type, fp + 1).ok());                         // another type
  EXPECT_FALSE(BytesToJson(good.substr(0, good.size() - 1), *type, fp).ok());  // cut short
  EXPECT_FALSE(BytesToJson(good + "x", *type, fp).ok());                       // left over
  std::string forged = good.substr(0, 8) + std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8);
  auto st = BytesToJson(forged, *type, fp);  // a count no bytes back up
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("more than the"), std::string::npos);
  auto b = ParseTypeDescriptor("bool");
  std::string two = Serialize(true);
  two.back() = 2;
  EXPECT_FALSE(BytesToJson(two, *b, internal::TypeFingerprint<bool>()).ok());
}

TEST(JsonParserTest, MalformedInputSaysTheColumn) {
  auto err = [](const std::string& text) {
    auto r = ParseJson(text);
    EXPECT_FALSE(r.ok()) << text;
    return r.ok() ? "" : r.status().message();
  };
  EXPECT_EQ(err("[1, 2,]"), "bad JSON at column 7: a trailing comma in an array");
  EXPECT_EQ(err("{\"a\":1 \"b\":2}"),
            "bad JSON at column 8: unexpected '\"' in an object (expected ',' or '}')");
  EXPECT_EQ(err("alice"),
            "bad JSON at column 1: unexpected 'a' (a string is written in double quotes, e.g. "
            "'\"text\"')");
  EXPECT_EQ(err("01"), "bad JSON at column 1: a number may not have a leading zero");
  EXPECT_EQ(err("1 2"), "bad JSON at column 3: unexpected '2' after the value");
  EXPECT_EQ(err("\"abc"), "bad JSON at column 5: unterminated string");
  EXPECT_EQ(err("\"\\ud800\""), "bad JSON at column 2: a lone high surrogate");
  EXPECT_EQ(err("\"\xff\""), "bad JSON at column 2: a string is not UTF-8 here");
  EXPECT_EQ(err("{\"a\":1,\"a\":2}"), "bad JSON at column 8: member \"a\" appears twice");
  EXPECT_EQ(err("NaN"),
            "bad JSON at column 1: unexpected 'N' (a string is written in double "
            "quotes, e.g. '\"text\"')");
  EXPECT_EQ(err(""), "bad JSON at column 1: unexpected end of input (expected a value)");
  EXPECT_EQ(err("[1e]"), "bad JSON at column 4: expected a digit in the exponent");
}

TEST(JsonParserTest, NestingAndSizeAreBounded) {
  JsonLimits limits;
  limits.max_depth = 8;
  EXPECT_TRUE(ParseJson(std::string(8, '[') + std::string(8, ']'), limits).ok());
  auto deep = ParseJson(std::string(9, '[') + std::string(9, ']'), limits);
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().message(), "bad JSON at column 9: nested deeper than 8 levels");
  // The default bound holds against a very deep document (no stack overflow).
  EXPECT_FALSE(ParseJson(std::string(100000, '[')).ok());
  limits.max_bytes = 4;
  EXPECT_FALSE(ParseJson("12345", limits).ok());
}

TEST(JsonParserTest, EscapesDecodeToUtf8) {
  auto s = ParseJson(R"("a\u00e9\ud83d\ude00\/\t")");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->text, "a\xC3\xA9\xF0\x9F\x98\x80/\t");
  EXPECT_EQ(JsonQuoteUtf8(std::string("ok\x01\xff")), "\"ok\\u0001\xEF\xBF\xBD\"");
}

TEST(TypeNodeTest, DescriptorsAreParsedStrictly) {
  EXPECT_FALSE(ParseTypeDescriptor("int12").ok());
  EXPECT_FALSE(ParseTypeDescriptor("vector<int8").ok());
  EXPECT_FALSE(ParseTypeDescriptor("map<string>").ok());
  EXPECT_FALSE(ParseTypeDescriptor("int8 ").ok());
  EXPECT_FALSE(ParseTypeDescriptor("enum\"E\"<string>").ok());
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "vector<";
  deep += "int8" + std::string(100, '>');
  EXPECT_FALSE(ParseTypeDescriptor(deep).ok());
  auto c = ParseTypeDescriptor(internal::DescribeType<Config>());
  ASSERT_TRUE(c.ok());
  EXPECT_NE(
      c->Display().find(
          "Config{lr: float64, epochs: int32, tags: vector<string>, shuffle: optional<bool>}"),
      std::string::npos)
      << c->Display();
  EXPECT_EQ(c->FirstOpaque(), nullptr);
  auto o = ParseTypeDescriptor(internal::DescribeType<std::vector<Opaque>>());
  ASSERT_TRUE(o.ok());
  ASSERT_NE(o->FirstOpaque(), nullptr);
  EXPECT_NE(o->FirstOpaque()->Display().find("Opaque (no JSON form)"), std::string::npos);
}

// Functions of this test program, for its catalog.
int64_t CatalogSquare(int64_t x) { return x * x; }
double CatalogTrain(Config c) { return c.lr * c.epochs; }
struct CatalogCounter {
  int value = 0;
  int Increment(int by) { return value += by; }
};
CatalogCounter* MakeCatalogCounter() { return new CatalogCounter(); }
CUMULUS_REMOTE(CatalogSquare, CatalogTrain, MakeCatalogCounter, &CatalogCounter::Increment);

TEST(FunctionCatalogTest, ListsFunctionsAndMethodsWithTheirTypes) {
  auto catalog = DecodeCatalog(EncodeThisProgramsCatalog());
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  std::map<std::string, const CatalogEntry*> by_name;
  for (auto& e : catalog->functions) by_name[e.name] = &e;
  ASSERT_TRUE(by_name.count("CatalogSquare"));
  EXPECT_EQ(by_name["CatalogSquare"]->Signature(), "CatalogSquare(int64) -> int64");
  EXPECT_EQ(by_name["CatalogSquare"]->param_fingerprints[0], internal::TypeFingerprint<int64_t>());
  ASSERT_TRUE(by_name.count("CatalogTrain"));
  EXPECT_NE(by_name["CatalogTrain"]->Signature().find("lr: float64"), std::string::npos);
  ASSERT_TRUE(by_name.count("CatalogCounter::Increment"));
  EXPECT_TRUE(by_name["CatalogCounter::Increment"]->is_method());
  EXPECT_EQ(by_name["CatalogCounter::Increment"]->class_name, typeid(CatalogCounter).name());
  EXPECT_FALSE(by_name.count("MakeCatalogCounter"));  // factories are not callable
  EXPECT_EQ(catalog->omitted, 0u);
}

TEST(FunctionCatalogTest, IsBounded) {
  std::string small = EncodeThisProgramsCatalog(200);
  EXPECT_LE(small.size(), 200u);
  auto catalog = DecodeCatalog(small);
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  EXPECT_GT(catalog->omitted, 0u);
  EXPECT_FALSE(DecodeCatalog("{\"functions\":[{\"name\":1}]}").ok());
  EXPECT_FALSE(DecodeCatalog("[]").ok());
}

}  // namespace
}  // namespace cumulus
