// A strict JSON parser and the writing helpers (json_value.h).
#include "runtime/call/json_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace cumulus {

const char* JsonValue::KindName() const {
  switch (kind) {
    case kNull:
      return "null";
    case kBool:
      return "a boolean";
    case kNumber:
      return "a number";
    case kString:
      return "a string";
    case kArray:
      return "an array";
    case kObject:
      return "an object";
  }
  return "a value";
}

bool JsonValue::IsIntegerText() const {
  return kind == kNumber && text.find_first_of(".eE") == std::string::npos;
}

const JsonValue* JsonValue::Member(std::string_view name) const {
  if (kind != kObject) return nullptr;
  for (auto& [k, m] : members)
    if (k == name) return &m;
  return nullptr;
}

namespace {

// The length of the UTF-8 sequence starting at s[i] (0 if it is not a valid one).
size_t Utf8Length(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // a surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  Parser(std::string_view in, const JsonLimits& limits) : in_(in), limits_(limits) {}

  Result<JsonValue> Document() {
    if (in_.size() > limits_.max_bytes) {
      return Status::InvalidArgument("JSON text of " + std::to_string(in_.size()) +
                                     " bytes is over the limit of " +
                                     std::to_string(limits_.max_bytes));
    }
    JsonValue v;
    SkipSpace();
    if (!Value(&v, 0)) return Error();
    SkipSpace();
    if (pos_ != in_.size()) {
      Fail("unexpected " + Describe(pos_) + " after the value");
      return Error();
    }
    return v;
  }

 private:
  Status Error() const {
    return Status::InvalidArgument("bad JSON at column " + std::to_string(error_pos_ + 1) + ": " +
                                   error_);
  }
  bool Fail(std::string why) { return Fail(pos_, std::move(why)); }
  bool Fail(size_t at, std::string why) {
    error_pos_ = at;
    error_ = std::move(why);
    return false;
  }
  std::string Describe(size_t at) const {
    if (at >= in_.size()) return "end of input";
    unsigned char c = static_cast<unsigned char>(in_[at]);
    if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
    char buf[16];
    std::snprintf(buf, sizeof(buf), "byte 0x%02x", c);
    return buf;
  }
  void SkipSpace() {
    while (pos_ < in_.size() &&
           (in_[pos_] == ' ' || in_[pos_] == '\t' || in_[pos_] == '\n' || in_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Literal(std::string_view word) {
    if (in_.substr(pos_, word.size()) != word) {
      return Fail("unexpected " + Describe(pos_) + " (expected " + std::string(word) + ")");
    }
    pos_ += word.size();
    return true;
  }

  bool Value(JsonValue* v, size_t depth) {
    v->column = pos_ + 1;
    if (pos_ >= in_.size()) return Fail("unexpected end of input (expected a value)");
    char c = in_[pos_];
    switch (c) {
      case 'n':
        v->kind = JsonValue::kNull;
        return Literal("null");
      case 't':
        v->kind = JsonValue::kBool;
        v->boolean = true;
        return Literal("true");
      case 'f':
        v->kind = JsonValue::kBool;
        return Literal("false");
      case '"':
        v->kind = JsonValue::kString;
        return String(&v->text);
      case '[':
        return Array(v, depth + 1);
      case '{':
        return Object(v, depth + 1);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return Number(v);
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
          return Fail("unexpected " + Describe(pos_) +
                      " (a string is written in double quotes, e.g. '\"text\"')");
        }
        return Fail("unexpected " + Describe(pos_) + " (expected a value)");
    }
  }

  bool Number(JsonValue* v) {
    size_t start = pos_;
    auto digit = [&] { return pos_ < in_.size() && in_[pos_] >= '0' && in_[pos_] <= '9'; };
    if (in_[pos_] == '-') ++pos_;
    if (!digit()) return Fail("expected a digit after '-'");
    if (in_[pos_] == '0') {
      ++pos_;
      if (digit()) return Fail(start, "a number may not have a leading zero");
    } else {
      while (digit()) ++pos_;
    }
    if (pos_ < in_.size() && in_[pos_] == '.') {
      ++pos_;
      if (!digit()) return Fail("expected a digit after '.'");
      while (digit()) ++pos_;
    }
    if (pos_ < in_.size() && (in_[pos_] == 'e' || in_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < in_.size() && (in_[pos_] == '+' || in_[pos_] == '-')) ++pos_;
      if (!digit()) return Fail("expected a digit in the exponent");
      while (digit()) ++pos_;
    }
    v->kind = JsonValue::kNumber;
    v->text = std::string(in_.substr(start, pos_ - start));
    return true;
  }

  bool Hex4(uint32_t* out) {
    if (pos_ + 4 > in_.size()) return Fail("a \\u escape needs 4 hex digits");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = in_[pos_ + i];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return Fail(pos_ + i, "a \\u escape needs 4 hex digits");
      }
    }
    pos_ += 4;
    *out = v;
    return true;
  }

  bool String(std::string* out) {
    ++pos_;  // the opening quote
    while (true) {
      if (pos_ >= in_.size()) return Fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(in_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return Fail("a control character in a string must be escaped");
      if (c == '\\') {
        size_t at = pos_;
        if (++pos_ >= in_.size()) return Fail("unterminated string");
        char e = in_[pos_++];
        switch (e) {
          case '"':
          case '\\':
          case '/':
            *out += e;
            break;
          case 'b':
            *out += '\b';
            break;
          case 'f':
            *out += '\f';
            break;
          case 'n':
            *out += '\n';
            break;
          case 'r':
            *out += '\r';
            break;
          case 't':
            *out += '\t';
            break;
          case 'u': {
            uint32_t cp = 0;
            if (!Hex4(&cp)) return false;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              uint32_t low = 0;
              if (in_.substr(pos_, 2) != "\\u") return Fail(at, "a lone high surrogate");
              pos_ += 2;
              if (!Hex4(&low)) return false;
              if (low < 0xDC00 || low > 0xDFFF) return Fail(at, "a lone high surrogate");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
              return Fail(at, "a lone low surrogate");
            }
            AppendUtf8(*out, cp);
            break;
          }
          default:
            return Fail(at, "unknown escape \\" + std::string(1, e));
        }
        continue;
      }
      size_t n = Utf8Length(in_, pos_);
      if (n == 0) return Fail("a string is not UTF-8 here");
      out->append(in_.substr(pos_, n));
      pos_ += n;
    }
  }

  bool Deeper(size_t depth) {
    if (depth > limits_.max_depth) {
      return Fail("nested deeper than " + std::to_string(limits_.max_depth) + " levels");
    }
    return true;
  }

  bool Array(JsonValue* v, size_t depth) {
    if (!Deeper(depth)) return false;
    v->kind = JsonValue::kArray;
    ++pos_;
    SkipSpace();
    if (pos_ < in_.size() && in_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      v->items.emplace_back();
      SkipSpace();
      if (!Value(&v->items.back(), depth)) return false;
      SkipSpace();
      if (pos_ < in_.size() && in_[pos_] == ',') {
        ++pos_;
        SkipSpace();
        if (pos_ < in_.size() && in_[pos_] == ']') return Fail("a trailing comma in an array");
        continue;
      }
      if (pos_ < in_.size() && in_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return Fail("unexpected " + Describe(pos_) + " in an array (expected ',' or ']')");
    }
  }

  bool Object(JsonValue* v, size_t depth) {
    if (!Deeper(depth)) return false;
    v->kind = JsonValue::kObject;
    ++pos_;
    SkipSpace();
    if (pos_ < in_.size() && in_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      SkipSpace();
      if (pos_ >= in_.size() || in_[pos_] != '"') {
        return Fail("unexpected " + Describe(pos_) + " (expected a member name in double quotes)");
      }
      size_t key_at = pos_;
      std::string key;
      if (!String(&key)) return false;
      for (auto& [k, ignored] : v->members) {
        if (k == key) return Fail(key_at, "member \"" + key + "\" appears twice");
      }
      SkipSpace();
      if (pos_ >= in_.size() || in_[pos_] != ':') {
        return Fail("unexpected " + Describe(pos_) + " (expected ':')");
      }
      ++pos_;
      SkipSpace();
      v->members.emplace_back(std::move(key), JsonValue());
      if (!Value(&v->members.back().second, depth)) return false;
      SkipSpace();
      if (pos_ < in_.size() && in_[pos_] == ',') {
        ++pos_;
        SkipSpace();
        if (pos_ < in_.size() && in_[pos_] == '}') return Fail("a trailing comma in an object");
        continue;
      }
      if (pos_ < in_.size() && in_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return Fail("unexpected " + Describe(pos_) + " in an object (expected ',' or '}')");
    }
  }

  std::string_view in_;
  const JsonLimits& limits_;
  size_t pos_ = 0;
  size_t error_pos_ = 0;
  std::string error_;
};

}  // namespace

Result<JsonValue> ParseJson(std::string_view text, const JsonLimits& limits) {
  return Parser(text, limits).Document();
}

std::string JsonQuoteUtf8(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else if (c >= 0x80) {
      size_t n = Utf8Length(s, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD
        ++i;
        continue;
      }
      out.append(s.substr(i, n));
      i += n;
      continue;
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  return out + "\"";
}

namespace {
template <typename F>
std::string ShortestFloat(F v) {
  if (std::isnan(v)) return "\"NaN\"";
  if (std::isinf(v)) return v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  std::string out(buf, r.ptr);
  // "1e+20" is JSON; "inf" cannot happen here.
  return out;
}
}  // namespace

std::string JsonDouble(double v) { return ShortestFloat(v); }
std::string JsonFloat(float v) { return ShortestFloat(v); }

}  // namespace cumulus
