#include "runtime/base/numeric.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace cumulus {

namespace {

std::string Real(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

Status IntegerOutOfRange(std::string_view input, const IntRange& range, std::string_view got) {
  return OutOfRange(input, /*whole=*/true, range.unit, std::to_string(range.min),
                    std::to_string(range.max), got);
}

Status RealOutOfRange(std::string_view input, const RealRange& range, std::string_view got) {
  return OutOfRange(input, /*whole=*/false, range.unit, Real(range.min), Real(range.max), got);
}

}  // namespace

Status OutOfRange(std::string_view input, bool whole, std::string_view unit, std::string_view min,
                  std::string_view max, std::string_view got) {
  std::string kind = whole ? "a whole number" : "a number";
  if (!unit.empty()) kind += " of " + std::string(unit);
  return Status::InvalidArgument(std::string(input) + " must be " + kind + " from " +
                                 std::string(min) + " to " + std::string(max) + ", got " +
                                 std::string(got));
}

Result<int64_t> ParseInteger(std::string_view input, std::string_view text, IntRange range) {
  auto bad = [&] { return IntegerOutOfRange(input, range, Quoted(text)); };
  // from_chars alone would take "-" followed by nothing as an error and stop at the first
  // non-digit; the whole text must be the number.
  size_t digits_from = !text.empty() && text[0] == '-' ? 1 : 0;
  if (text.size() == digits_from) return bad();
  for (size_t i = digits_from; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return bad();
  }
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return bad();  // int64 overflow
  if (v < range.min || v > range.max) return bad();
  return v;
}

Result<double> ParseReal(std::string_view input, std::string_view text, RealRange range) {
  auto bad = [&] { return RealOutOfRange(input, range, Quoted(text)); };
  // Digits or '.' after the sign: keeps out "inf", "nan" and "infinity", which from_chars takes.
  size_t first = !text.empty() && text[0] == '-' ? 1 : 0;
  if (text.size() == first) return bad();
  if (!std::isdigit(static_cast<unsigned char>(text[first])) && text[first] != '.') return bad();
  double v = 0;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::general);
  // result_out_of_range: beyond a double either way ("1e400", "1e-400").
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) return bad();
  if (v == 0) v = 0;  // "-0" is 0 (never a negative zero in milliseconds or a message)
  if (v < range.min || v > range.max) return bad();
  return v;
}

Status CheckReal(std::string_view input, double value, RealRange range) {
  if (std::isfinite(value) && Within(value, range)) return Status();
  return RealOutOfRange(input, range, Real(value));
}

Result<int64_t> SecondsToMilliseconds(std::string_view input, double seconds) {
  // 2^63 ms, as a double: any product below it rounds to a value that fits.
  constexpr double kLimit = 9223372036854775808.0;
  double ms = seconds * 1000;
  if (!std::isfinite(ms) || std::nearbyint(ms) >= kLimit || std::nearbyint(ms) < -kLimit) {
    return OutOfRange(input, /*whole=*/false, "seconds", Real(-kLimit / 1000), Real(kLimit / 1000),
                      Real(seconds));
  }
  return static_cast<int64_t>(std::llround(ms));
}

Result<std::chrono::milliseconds> ParseMilliseconds(std::string_view input, std::string_view text,
                                                    int64_t min_ms, int64_t max_ms) {
  CUMULUS_ASSIGN_OR_RETURN(int64_t ms, ParseInteger(input, text, {min_ms, max_ms, "milliseconds"}));
  return std::chrono::milliseconds(ms);
}

Result<std::optional<int64_t>> IntegerFromEnv(const char* name, IntRange range) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::optional<int64_t>();
  CUMULUS_ASSIGN_OR_RETURN(int64_t n, ParseInteger(name, v, range));
  return std::optional<int64_t>(n);
}

Result<std::optional<double>> RealFromEnv(const char* name, RealRange range) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::optional<double>();
  CUMULUS_ASSIGN_OR_RETURN(double x, ParseReal(name, v, range));
  return std::optional<double>(x);
}

Result<uint64_t> ParseBytes(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a size (expected e.g. 1048576, 512M, 4G)");
  };
  size_t i = 0;
  uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    auto next = CheckedAdd<uint64_t>(value * 10, static_cast<uint64_t>(text[i] - '0'));
    if (value > UINT64_MAX / 10 || !next) return bad();
    value = *next;
    ++i;
  }
  if (i == 0) return bad();
  std::string unit(text.substr(i));
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "IB")
    unit.resize(unit.size() - 2);
  else if (!unit.empty() && unit.back() == 'B')
    unit.pop_back();
  int shift = 0;
  if (unit.empty())
    shift = 0;
  else if (unit == "K")
    shift = 10;
  else if (unit == "M")
    shift = 20;
  else if (unit == "G")
    shift = 30;
  else if (unit == "T")
    shift = 40;
  else
    return bad();
  if (shift && (value >> (64 - shift)) != 0) return bad();
  return value << shift;
}

}  // namespace cumulus
