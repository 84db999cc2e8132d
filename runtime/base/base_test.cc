#include "runtime/base/clock.h"

#include <gtest/gtest.h>

#include "runtime/base/logging.h"
#include "runtime/base/rocksdb_module.h"

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

// A module has its own copy of the logging code (runtime/base/module_loader.h): loading it hands
// it the program's threshold, so SetLogLevel in the program reaches the module's warnings too.
TEST(ModuleLoaderTest, RocksDbsModuleFollowsTheProgramsLogLevel) {
  LogLevel before = GetLogLevel();
  auto module = LoadRocksModule();
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_NE((*module)->header.log_level, nullptr);
  for (LogLevel level : {LogLevel::kError, LogLevel::kDebug, LogLevel::kWarn}) {
    SetLogLevel(level);
    EXPECT_EQ((*module)->header.log_level(), level);
  }
  SetLogLevel(before);
}

}  // namespace
}  // namespace cumulus
