#include "runtime/base/clock.h"

#include <gtest/gtest.h>

#include "runtime/base/logging.h"

namespace cumulus {
namespace {

TEST(FakeClockTest, MovesOnlyWhenTold) {
  FakeClock clock;
  TimePoint t0 = clock.Now();
  int64_t w0 = clock.WallMicros();
  EXPECT_EQ(clock.Now(), t0);
  clock.AdvanceTime(std::chrono::seconds(3));
  EXPECT_EQ(clock.Now() - t0, std::chrono::seconds(3));
  EXPECT_EQ(clock.WallMicros() - w0, 3'000'000);
}

TEST(SystemClockTest, IsMonotonic) {
  TimePoint a = SystemClock::Get().Now();
  TimePoint b = SystemClock::Get().Now();
  EXPECT_LE(a, b);
  EXPECT_GT(SystemClock::Get().WallMicros(), 1'600'000'000'000'000);
}

TEST(LoggingTest, ParsesLevels) {
  LogLevel level;
  EXPECT_TRUE(ParseLogLevel("warn", &level));
  EXPECT_EQ(level, LogLevel::kWarn);
  EXPECT_TRUE(ParseLogLevel("debug", &level));
  EXPECT_EQ(level, LogLevel::kDebug);
  EXPECT_FALSE(ParseLogLevel("loud", &level));
  LogLevel before = GetLogLevel();
  SetLogLevel(LogLevel::kError);
  EXPECT_EQ(GetLogLevel(), LogLevel::kError);
  SetLogLevel(before);
}

}  // namespace
}  // namespace cumulus

#include "runtime/base/parse.h"

namespace cumulus {
namespace {

TEST(ParseBytesTest, UnitsAndBadInput) {
  EXPECT_EQ(*ParseBytes("4096"), 4096u);
  EXPECT_EQ(*ParseBytes("64K"), 64u << 10);
  EXPECT_EQ(*ParseBytes("512MiB"), 512ull << 20);
  EXPECT_EQ(*ParseBytes("4g"), 4ull << 30);
  EXPECT_EQ(*ParseBytes("2GB"), 2ull << 30);
  EXPECT_FALSE(ParseBytes("").ok());
  EXPECT_FALSE(ParseBytes("G").ok());
  EXPECT_FALSE(ParseBytes("12X").ok());
  EXPECT_FALSE(ParseBytes("-5").ok());
  EXPECT_FALSE(ParseBytes("99999999999999999999").ok());
  EXPECT_FALSE(ParseBytes("99999999999T").ok());
  EXPECT_NE(ParseBytes("lots").status().message().find("'lots' is not a size"), std::string::npos);
}

}  // namespace
}  // namespace cumulus
