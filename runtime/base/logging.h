// Leveled logging to stderr: one line per message, written with a single write(2) so lines from
// threads and processes do not interleave.
//
//   CUMULUS_LOG(INFO) << "spilled " << n << " objects";
//
// The threshold comes from CUMULUS_LOG_LEVEL (debug, info, warn, error; default info) and can be
// changed with SetLogLevel. Messages below it cost one comparison.
#pragma once

#include <atomic>
#include <sstream>
#include <string_view>

namespace cumulus {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

LogLevel GetLogLevel();
void SetLogLevel(LogLevel level);
// Parses "debug", "info", "warn"/"warning", "error"; false if the text is none of them.
bool ParseLogLevel(std::string_view text, LogLevel* out);
// True when CUMULUS_LOG_LEVEL names a level (the user chose the threshold).
bool LogLevelFromEnvironment();

namespace internal {
class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};
// The threshold GetLogLevel reads. A module of Cumulus's own (runtime/base/module_loader.h) has
// its own copy of this code: the program that loads it hands it its threshold with
// ShareLogThreshold, so that SetLogLevel in the program reaches the module's messages too.
std::atomic<int>* LogThreshold();
void ShareLogThreshold(std::atomic<int>* threshold);
// Turns `stream << ...` into void so that the macro is one expression (safe inside if/else).
struct LogVoidify {
  void operator&(std::ostream&) {}
};
}  // namespace internal

}  // namespace cumulus

#define CUMULUS_LOG_LEVEL_DEBUG ::cumulus::LogLevel::kDebug
#define CUMULUS_LOG_LEVEL_INFO ::cumulus::LogLevel::kInfo
#define CUMULUS_LOG_LEVEL_WARN ::cumulus::LogLevel::kWarn
#define CUMULUS_LOG_LEVEL_ERROR ::cumulus::LogLevel::kError

#define CUMULUS_LOG(level)                                                                 \
  (CUMULUS_LOG_LEVEL_##level < ::cumulus::GetLogLevel())                                   \
      ? (void)0                                                                            \
      : ::cumulus::internal::LogVoidify() &                                                \
            ::cumulus::internal::LogMessage(CUMULUS_LOG_LEVEL_##level, __FILE__, __LINE__) \
                .stream()
