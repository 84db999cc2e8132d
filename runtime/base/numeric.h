// Numbers from outside a process, read and checked one way: command-line flags, environment
// variables, arguments of the public API, fields of messages from peers and of records in the
// head's store. A number is accepted when it is finite, within [min, max], and representable in
// the type it is kept in (no wrap when it becomes milliseconds, an int64 or a deadline).
//
// Every failed check is InvalidArgument with one line naming the input, the value and the range:
//   --grace must be a number of seconds from 0 to 3600, got '1e9'
//   CUMULUS_MEMORY_MONITOR_MS must be a whole number of milliseconds from 10 to 60000, got '5'
//   SetMaxRetries must be a whole number from -1 to 2147483647, got -7
// (text is quoted as it was given; a value that arrived as a number is not).
//
// Resource amounts add one rule of their own (steps of 1/10000) in ResourceSet::CheckAmount,
// which checks the rest here; sizes with units ("512M") are ParseBytes.
//
// Depends only on api/ (Status), so every layer, scheduler/ included, may use it.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "cumulus/status.h"

namespace cumulus {

// What an input may hold: whole numbers in [min, max], counting `unit` ("milliseconds"; empty
// for a plain count). Only the message uses the unit.
struct IntRange {
  int64_t min;
  int64_t max;
  std::string_view unit = {};
};

// The same for real numbers.
struct RealRange {
  double min;
  double max;
  std::string_view unit = {};
};

// Text -> whole number: an optional '-' and decimal digits, nothing else (no spaces, '+', hex,
// fraction or exponent). "-0" is 0. Too many digits for an int64 is out of range.
Result<int64_t> ParseInteger(std::string_view input, std::string_view text, IntRange range);

// Text -> real number: an optional '-', decimal digits with an optional '.' and an optional
// exponent ("2.5", ".5", "1e3"); not hex, "inf" or "nan"; no spaces. "-0" is 0. A value beyond
// what a double holds ("1e400", "1e-400") is out of range.
Result<double> ParseReal(std::string_view input, std::string_view text, RealRange range);

// A whole number given as a value (an API argument, a wire field), of any integer type.
template <typename T>
Status CheckInteger(std::string_view input, T value, IntRange range);

// A real given as a value: finite and within the range (NaN and infinities never are).
Status CheckReal(std::string_view input, double value, RealRange range);

// The test CheckReal applies to a finite range, without a message (false for NaN and, the range
// being finite, for infinities): for hot paths that build the input's name only when it fails,
// `if (!Within(v, r)) return CheckReal("resource " + name, v, r);`.
inline bool Within(double value, RealRange range) {
  return value >= range.min && value <= range.max;
}

// `seconds` as whole milliseconds (rounded to the nearest), if it is finite and they fit in an
// int64; the message names `input`.
Result<int64_t> SecondsToMilliseconds(std::string_view input, double seconds);

// `text` as a duration in milliseconds: ParseInteger with the unit "milliseconds".
Result<std::chrono::milliseconds> ParseMilliseconds(std::string_view input, std::string_view text,
                                                    int64_t min_ms, int64_t max_ms);

// Environment variable `name`: nullopt if it is unset or empty, else its value read as
// ParseInteger (ParseReal) reads text, the message naming the variable. Callers say what they do
// instead (a warning and the default, or a refusal to start).
Result<std::optional<int64_t>> IntegerFromEnv(const char* name, IntRange range);
Result<std::optional<double>> RealFromEnv(const char* name, RealRange range);

// "4096", "64K", "512M", "4G", "1T" (binary units; a trailing "B"/"iB" is allowed: "512MiB");
// more than 2^64 - 1 bytes is an error.
Result<uint64_t> ParseBytes(std::string_view text);

// The one message of a failed check (see the top of this file). `got` is what to show after
// "got ": the quoted text, or the number.
Status OutOfRange(std::string_view input, bool whole, std::string_view unit, std::string_view min,
                  std::string_view max, std::string_view got);

// ---- Arithmetic that cannot wrap ------------------------------------------------------------

// a + b and a * b, or nullopt if the result does not fit in T.
template <typename T>
std::optional<T> CheckedAdd(T a, T b) {
  T out;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}
template <typename T>
std::optional<T> CheckedMul(T a, T b) {
  T out;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// `value` in the integer type To, or To's nearest bound if it does not fit (a uint32 wire field
// carrying an int64 timeout: negative becomes 0, beyond 2^32 - 1 becomes 2^32 - 1).
template <typename To, typename From>
To SaturatingCast(From value) {
  static_assert(std::is_integral_v<To> && std::is_integral_v<From>, "integers only");
  using Wide = __int128;
  Wide v = static_cast<Wide>(value);
  if (v < static_cast<Wide>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
  if (v > static_cast<Wide>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
  return static_cast<To>(value);
}

// `d` as the duration type To, or To's max (min) if it does not fit: milliseconds::max() as
// nanoseconds is nanoseconds::max(), not a wrapped negative.
template <typename To, typename Rep, typename Period>
To SaturatingDurationCast(std::chrono::duration<Rep, Period> d) {
  static_assert(std::is_integral_v<Rep> && std::is_integral_v<typename To::rep>, "integers only");
  using Ratio = std::ratio_divide<Period, typename To::period>;  // one `d` tick in To ticks
  using Wide = __int128;
  Wide v = static_cast<Wide>(d.count());
  constexpr Wide kMax = std::numeric_limits<typename To::rep>::max();
  constexpr Wide kMin = std::numeric_limits<typename To::rep>::min();
  // Compare against the bounds divided by num before multiplying: the product then fits.
  if (v > 0 && v / Ratio::den > kMax / Ratio::num) return To::max();
  if (v < 0 && v / Ratio::den < kMin / Ratio::num) return To::min();
  Wide scaled = v * Ratio::num / Ratio::den;
  if (scaled > kMax) return To::max();
  if (scaled < kMin) return To::min();
  return To(static_cast<typename To::rep>(scaled));
}

// t + d, or the latest (earliest) time point t's type holds if the sum would not fit: a deadline
// "now + a timeout from outside" never wraps into the past.
template <typename Clock, typename Dur, typename Rep, typename Period>
std::chrono::time_point<Clock, Dur> SaturatingAdd(std::chrono::time_point<Clock, Dur> t,
                                                  std::chrono::duration<Rep, Period> d) {
  using TP = std::chrono::time_point<Clock, Dur>;
  Dur step = SaturatingDurationCast<Dur>(d);
  auto sum = CheckedAdd(t.time_since_epoch().count(), step.count());
  if (!sum) return step.count() > 0 ? TP::max() : TP::min();
  return TP(Dur(*sum));
}

// ---- Implementation of the template above ---------------------------------------------------

template <typename T>
Status CheckInteger(std::string_view input, T value, IntRange range) {
  static_assert(std::is_integral_v<T>, "CheckInteger takes integers; CheckReal takes reals");
  using Wide = __int128;
  Wide v = static_cast<Wide>(value);
  if (v >= static_cast<Wide>(range.min) && v <= static_cast<Wide>(range.max)) return Status();
  return OutOfRange(input, /*whole=*/true, range.unit, std::to_string(range.min),
                    std::to_string(range.max), std::to_string(value));
}

}  // namespace cumulus
