#include "runtime/base/logging.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace cumulus {
namespace {

// The level CUMULUS_LOG_LEVEL names; false if it is unset or names none.
bool LevelFromEnv(LogLevel* level) {
  const char* env = std::getenv("CUMULUS_LOG_LEVEL");
  return env && ParseLogLevel(env, level);
}

LogLevel LevelFromEnv() {
  LogLevel level = LogLevel::kInfo;
  LevelFromEnv(&level);
  return level;
}

// The program's threshold, when this copy of the code is in a module the program loaded.
std::atomic<std::atomic<int>*> shared_threshold{nullptr};

std::atomic<int>& Threshold() {
  static std::atomic<int> threshold{static_cast<int>(LevelFromEnv())};
  std::atomic<int>* shared = shared_threshold.load(std::memory_order_relaxed);
  return shared ? *shared : threshold;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "D";
    case LogLevel::kInfo:
      return "I";
    case LogLevel::kWarn:
      return "W";
    case LogLevel::kError:
      return "E";
  }
  return "?";
}

}  // namespace

LogLevel GetLogLevel() {
  return static_cast<LogLevel>(Threshold().load(std::memory_order_relaxed));
}
void SetLogLevel(LogLevel level) { Threshold().store(static_cast<int>(level)); }

bool ParseLogLevel(std::string_view text, LogLevel* out) {
  if (text == "debug")
    *out = LogLevel::kDebug;
  else if (text == "info")
    *out = LogLevel::kInfo;
  else if (text == "warn" || text == "warning")
    *out = LogLevel::kWarn;
  else if (text == "error")
    *out = LogLevel::kError;
  else
    return false;
  return true;
}

namespace internal {

std::atomic<int>* LogThreshold() { return &Threshold(); }
void ShareLogThreshold(std::atomic<int>* threshold) { shared_threshold.store(threshold); }

LogMessage::LogMessage(LogLevel level, const char* file, int line) {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
  const char* base = std::strrchr(file, '/');
  stream_ << LevelName(level) << ' ' << stamp << '.' << (ms < 100 ? (ms < 10 ? "00" : "0") : "")
          << ms << ' ' << getpid() << ' ' << (base ? base + 1 : file) << ':' << line << "] ";
}

LogMessage::~LogMessage() {
  stream_ << '\n';
  std::string s = stream_.str();
  ssize_t ignored = ::write(STDERR_FILENO, s.data(), s.size());
  (void)ignored;
}

}  // namespace internal

bool LogLevelFromEnvironment() {
  LogLevel ignored;
  return LevelFromEnv(&ignored);
}

}  // namespace cumulus
