#include "runtime/base/numeric.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>

namespace cumulus {
namespace {

constexpr IntRange kPort{0, 65535};
constexpr IntRange kMs{10, 60000, "milliseconds"};
constexpr RealRange kSeconds{0, 3600, "seconds"};

std::string Message(const Status& st) { return st.message(); }

TEST(ParseIntegerTest, TakesPlainDecimalsWithinTheRange) {
  EXPECT_EQ(*ParseInteger("--port", "0", kPort), 0);
  EXPECT_EQ(*ParseInteger("--port", "65535", kPort), 65535);
  EXPECT_EQ(*ParseInteger("--port", "007", kPort), 7);
  EXPECT_EQ(*ParseInteger("--port", "-0", kPort), 0);
  EXPECT_EQ(*ParseInteger("n", "-5", {-10, 10}), -5);
  EXPECT_EQ(*ParseInteger("n", "9223372036854775807", {0, INT64_MAX}), INT64_MAX);
  EXPECT_EQ(*ParseInteger("n", "-9223372036854775808", {INT64_MIN, 0}), INT64_MIN);
}

TEST(ParseIntegerTest, RejectsEverythingElseWithOneMessage) {
  for (const char* bad :
       {"", "-", "12abc", "abc", "0x10", " 5", "5 ", "+5", "1e3", "1.0", "nan", "inf", "65536",
        "-1", "99999999999999999999", "9223372036854775808", "-9223372036854775809"}) {
    auto r = ParseInteger("--port", bad, kPort);
    ASSERT_FALSE(r.ok()) << "'" << bad << "'";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(Message(r.status()),
              std::string("--port must be a whole number from 0 to 65535, got '") + bad + "'");
  }
}

TEST(ParseIntegerTest, BoundsAreInclusiveAndTheUnitIsNamed) {
  EXPECT_TRUE(ParseInteger("X_MS", "10", kMs).ok());
  EXPECT_TRUE(ParseInteger("X_MS", "60000", kMs).ok());
  EXPECT_EQ(Message(ParseInteger("X_MS", "9", kMs).status()),
            "X_MS must be a whole number of milliseconds from 10 to 60000, got '9'");
  EXPECT_FALSE(ParseInteger("X_MS", "60001", kMs).ok());
  auto ms = ParseMilliseconds("X_MS", "250", 10, 60000);
  ASSERT_TRUE(ms.ok());
  EXPECT_EQ(ms->count(), 250);
  EXPECT_FALSE(ParseMilliseconds("X_MS", "0", 10, 60000).ok());
}

TEST(ParseRealTest, TakesDecimalsAndExponents) {
  EXPECT_EQ(*ParseReal("--grace", "0", kSeconds), 0);
  EXPECT_EQ(*ParseReal("--grace", "2.5", kSeconds), 2.5);
  EXPECT_EQ(*ParseReal("--grace", ".5", kSeconds), 0.5);
  EXPECT_EQ(*ParseReal("--grace", "5.", kSeconds), 5);
  EXPECT_EQ(*ParseReal("--grace", "1e3", kSeconds), 1000);
  EXPECT_EQ(*ParseReal("--grace", "3600", kSeconds), 3600);
  double zero = *ParseReal("--grace", "-0", kSeconds);
  EXPECT_EQ(zero, 0);
  EXPECT_FALSE(std::signbit(zero)) << "-0 is read as 0, not a negative zero";
  EXPECT_EQ(*ParseReal("t", "-0.25", {-1, 1}), -0.25);
}

TEST(ParseRealTest, RejectsNonFiniteMalformedAndOutOfRange) {
  for (const char* bad :
       {"",       "-",      "nan",  "NaN",   "inf",      "-inf", "infinity", "1e400",
        "-1e400", "1e-400", "0x10", "12abc", " 1",       "1 ",   "+1",       "1e",
        "e5",     ".",      "1,5",  "-1",    "3600.001", "1e9"}) {
    auto r = ParseReal("--grace", bad, kSeconds);
    ASSERT_FALSE(r.ok()) << "'" << bad << "'";
    EXPECT_EQ(Message(r.status()),
              std::string("--grace must be a number of seconds from 0 to 3600, got '") + bad + "'");
  }
}

TEST(CheckTest, ValuesOfAnyIntegerTypeAndReals) {
  EXPECT_TRUE(CheckInteger("SetMaxRetries", -1, {-1, INT32_MAX}).ok());
  EXPECT_EQ(Message(CheckInteger("SetMaxRetries", -7, {-1, INT32_MAX})),
            "SetMaxRetries must be a whole number from -1 to 2147483647, got -7");
  // Unsigned values above INT64_MAX are compared as they are, not wrapped to negatives.
  EXPECT_FALSE(CheckInteger("size", UINT64_MAX, {0, 100}).ok());
  EXPECT_NE(Message(CheckInteger("size", UINT64_MAX, {0, 100})).find("got 18446744073709551615"),
            std::string::npos);
  EXPECT_TRUE(CheckInteger("count", uint32_t{7}, {0, 10}).ok());

  EXPECT_TRUE(CheckReal("fraction", 1.0, {0, 1}).ok());
  EXPECT_TRUE(CheckReal("fraction", 0.0, {0, 1}).ok());
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity(), -1e-300, 1.0000001}) {
    EXPECT_FALSE(CheckReal("fraction", bad, {0, 1}).ok()) << bad;
  }
  EXPECT_EQ(Message(CheckReal("fraction", std::nan(""), {0, 1})),
            "fraction must be a number from 0 to 1, got nan");
}

TEST(ConversionTest, SecondsToMillisecondsNeverWraps) {
  EXPECT_EQ(*SecondsToMilliseconds("--grace", 2.5), 2500);
  EXPECT_EQ(*SecondsToMilliseconds("--grace", 0.0004), 0);
  EXPECT_EQ(*SecondsToMilliseconds("--grace", -1), -1000);
  EXPECT_EQ(*SecondsToMilliseconds("t", 9.2e15), 9200000000000000000);
  for (double bad : {1e30, -1e30, 9.3e15, std::nan(""), std::numeric_limits<double>::infinity()}) {
    auto r = SecondsToMilliseconds("t", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(Message(r.status()).rfind("t must be a number of seconds from ", 0), 0u)
        << r.status();
  }
}

TEST(ConversionTest, SaturatingCastsAndSums) {
  EXPECT_EQ(SaturatingCast<uint32_t>(int64_t{-5}), 0u);
  EXPECT_EQ(SaturatingCast<uint32_t>(int64_t{1} << 40), UINT32_MAX);
  EXPECT_EQ(SaturatingCast<uint32_t>(int64_t{1234}), 1234u);
  EXPECT_EQ(SaturatingCast<int32_t>(UINT64_MAX), INT32_MAX);
  EXPECT_EQ(SaturatingCast<int64_t>(UINT64_MAX), INT64_MAX);

  using std::chrono::milliseconds;
  using std::chrono::nanoseconds;
  EXPECT_EQ(SaturatingDurationCast<nanoseconds>(milliseconds::max()), nanoseconds::max());
  EXPECT_EQ(SaturatingDurationCast<nanoseconds>(milliseconds::min()), nanoseconds::min());
  EXPECT_EQ(SaturatingDurationCast<nanoseconds>(milliseconds(3)), nanoseconds(3'000'000));
  EXPECT_EQ(SaturatingDurationCast<milliseconds>(nanoseconds::max()).count(),
            INT64_MAX / 1'000'000);
  EXPECT_EQ(SaturatingDurationCast<nanoseconds>(std::chrono::hours(1LL << 40)), nanoseconds::max());

  using TP = std::chrono::time_point<std::chrono::steady_clock, nanoseconds>;
  TP now = TP(nanoseconds(1'000'000'000));
  EXPECT_EQ(SaturatingAdd(now, milliseconds::max()), TP::max());
  EXPECT_EQ(SaturatingAdd(now, nanoseconds::max()), TP::max());
  EXPECT_EQ(SaturatingAdd(now, milliseconds(5)), now + milliseconds(5));
  EXPECT_EQ(SaturatingAdd(TP(nanoseconds(-5)), nanoseconds::min()), TP::min());

  EXPECT_EQ(CheckedAdd<uint64_t>(UINT64_MAX - 1, 1), UINT64_MAX);
  EXPECT_FALSE(CheckedAdd<uint64_t>(UINT64_MAX, 1).has_value());
  EXPECT_FALSE(CheckedAdd<int64_t>(INT64_MAX, 1).has_value());
  EXPECT_FALSE(CheckedMul<int64_t>(INT64_MAX / 2 + 1, 2).has_value());
  EXPECT_EQ(CheckedMul<int64_t>(3, 4), 12);
}

TEST(EnvironmentTest, UnsetIsNoneAndABadValueIsTheOneMessage) {
  const char* name = "CUMULUS_NUMERIC_TEST_MS";
  unsetenv(name);
  auto unset = IntegerFromEnv(name, kMs);
  ASSERT_TRUE(unset.ok());
  EXPECT_FALSE(unset->has_value());
  setenv(name, "", 1);
  EXPECT_FALSE(IntegerFromEnv(name, kMs)->has_value()) << "empty is unset";
  setenv(name, "250", 1);
  EXPECT_EQ(IntegerFromEnv(name, kMs)->value(), 250);
  setenv(name, "250ms", 1);
  EXPECT_EQ(IntegerFromEnv(name, kMs).status().message(),
            "CUMULUS_NUMERIC_TEST_MS must be a whole number of milliseconds from 10 to 60000, got "
            "'250ms'");
  setenv(name, "0.5", 1);
  EXPECT_EQ(RealFromEnv(name, {0.01, 1})->value(), 0.5);
  setenv(name, "nan", 1);
  EXPECT_FALSE(RealFromEnv(name, {0.01, 1}).ok());
  unsetenv(name);
}

TEST(ParseBytesTest, UnitsAndBadInput) {
  EXPECT_EQ(*ParseBytes("4096"), 4096u);
  EXPECT_EQ(*ParseBytes("64K"), 64u << 10);
  EXPECT_EQ(*ParseBytes("512MiB"), 512ull << 20);
  EXPECT_EQ(*ParseBytes("4g"), 4ull << 30);
  EXPECT_EQ(*ParseBytes("2GB"), 2ull << 30);
  EXPECT_EQ(*ParseBytes("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(ParseBytes("").ok());
  EXPECT_FALSE(ParseBytes("G").ok());
  EXPECT_FALSE(ParseBytes("12X").ok());
  EXPECT_FALSE(ParseBytes("-5").ok());
  EXPECT_FALSE(ParseBytes(" 5").ok());
  EXPECT_FALSE(ParseBytes("0x10").ok());
  EXPECT_FALSE(ParseBytes("18446744073709551616").ok());
  EXPECT_FALSE(ParseBytes("99999999999999999999").ok());
  EXPECT_FALSE(ParseBytes("99999999999T").ok());
  EXPECT_FALSE(ParseBytes("16777216T").ok());
  EXPECT_NE(ParseBytes("lots").status().message().find("'lots' is not a size"), std::string::npos);
}

}  // namespace
}  // namespace cumulus
