#include "cumulus/serialization.h"

#include <gtest/gtest.h>

namespace cumulus {
namespace {

struct Sample {
  std::vector<float> pixels;
  int label = 0;
  std::optional<std::string> note;
  CUMULUS_SERIALIZE(pixels, label, note)
  bool operator==(const Sample& o) const {
    return pixels == o.pixels && label == o.label && note == o.note;
  }
};

struct Batch {
  std::vector<Sample> samples;
  std::map<std::string, double> metrics;
  CUMULUS_SERIALIZE(samples, metrics)
};

enum class Mode : uint8_t { kTrain, kEval };

TEST(SerializationTest, RoundTripsBuiltinsAndUserStructs) {
  EXPECT_EQ(*Deserialize<int>(Serialize(42)), 42);
  EXPECT_EQ(*Deserialize<std::string>(Serialize(std::string("hé\0llo", 7))),
            std::string("hé\0llo", 7));
  EXPECT_EQ(*Deserialize<Mode>(Serialize(Mode::kEval)), Mode::kEval);
  auto t = std::make_tuple(1, 2.5, std::string("x"), std::vector<int64_t>{1, 2, 3});
  EXPECT_EQ(*Deserialize<decltype(t)>(Serialize(t)), t);
  std::set<std::string> s{"a", "b"};
  EXPECT_EQ(*Deserialize<std::set<std::string>>(Serialize(s)), s);

  Batch b;
  b.samples = {{{0.5f, 1.5f}, 3, std::nullopt}, {{}, 7, "odd"}};
  b.metrics = {{"loss", 0.25}};
  auto back = Deserialize<Batch>(Serialize(b));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->samples, b.samples);
  EXPECT_EQ(back->metrics, b.metrics);
}

TEST(SerializationTest, WrongTypeTruncatedOrTrailingBytesAreClearErrors) {
  std::string as_int = Serialize(42);
  auto wrong = Deserialize<std::string>(as_int);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("written as another type"), std::string::npos)
      << wrong.status();

  std::string v = Serialize(std::vector<double>(100, 1.0));
  auto cut = Deserialize<std::vector<double>>(std::string_view(v).substr(0, v.size() - 3));
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("more bytes"), std::string::npos) << cut.status();

  auto extra = Deserialize<int>(Serialize(1) + "x");
  EXPECT_NE(extra.status().message().find("1 bytes left over"), std::string::npos)
      << extra.status();

  // A huge length prefix must not allocate: it fails on the bytes that are really there.
  std::string bomb = Serialize(std::string("ab"));
  uint64_t huge = ~0ull >> 1;
  std::memcpy(bomb.data() + 8, &huge, 8);
  EXPECT_FALSE(Deserialize<std::string>(bomb).ok());
  EXPECT_FALSE(Deserialize<std::string>("").ok());

  // A vector of big elements with a forged count: fails on the bytes, allocates nothing like 8 GB.
  using Big = std::vector<std::array<double, 1024>>;
  std::string forged = Serialize(Big(1));
  uint64_t million = 1'000'000;
  std::memcpy(forged.data() + 8, &million, 8);
  forged.append(1 << 20, '\0');
  EXPECT_FALSE(Deserialize<Big>(forged).ok());
  std::string doubles = Serialize(std::vector<double>(4, 1.0));
  uint64_t too_many = 1ull << 40;
  std::memcpy(doubles.data() + 8, &too_many, 8);
  EXPECT_FALSE(Deserialize<std::vector<double>>(doubles).ok());
}

TEST(SerializationTest, BoolsAreStrict) {
  EXPECT_EQ(*Deserialize<std::vector<bool>>(Serialize(std::vector<bool>{true, false, true})),
            (std::vector<bool>{true, false, true}));
  std::string b = Serialize(true);
  b.back() = 7;
  auto bad = Deserialize<bool>(b);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("a bool byte is 7"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace cumulus
