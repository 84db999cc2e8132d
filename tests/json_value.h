// JsonValue: a small, strict JSON reader for tests that check files the command line writes
// (objects, arrays, strings with escapes, numbers, true/false/null). Parse fails with the offset
// of the first error; nothing trailing is allowed.
#pragma once

#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace testjson {

struct Value {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  bool b = false;
  double n = 0;
  std::string s;
  std::vector<Value> a;
  std::map<std::string, Value> o;

  bool Has(const std::string& key) const { return type == kObject && o.count(key) > 0; }
  const Value& operator[](const std::string& key) const {
    static const Value null;
    auto it = o.find(key);
    return type == kObject && it != o.end() ? it->second : null;
  }
};

class Parser {
 public:
  explicit Parser(const std::string& text) : t_(text) {}
  // The document, or nullopt (error() says where).
  std::optional<Value> Parse() {
    Value v;
    if (!ParseValue(&v)) return std::nullopt;
    Skip();
    if (i_ != t_.size()) {
      Fail("trailing characters");
      return std::nullopt;
    }
    return v;
  }
  const std::string& error() const { return error_; }

 private:
  bool Fail(const std::string& what) {
    if (error_.empty()) error_ = what + " at offset " + std::to_string(i_);
    return false;
  }
  void Skip() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\t' || t_[i_] == '\r'))
      ++i_;
  }
  bool Literal(const char* word) {
    std::string w(word);
    if (t_.compare(i_, w.size(), w) != 0) return false;
    i_ += w.size();
    return true;
  }
  bool ParseString(std::string* out) {
    if (t_[i_] != '"') return false;
    ++i_;
    while (i_ < t_.size() && t_[i_] != '"') {
      char c = t_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (i_ >= t_.size()) return false;
      char e = t_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          *out += e;
          break;
        case 'n':
          *out += '\n';
          break;
        case 't':
          *out += '\t';
          break;
        case 'r':
          *out += '\r';
          break;
        case 'b':
          *out += '\b';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'u': {
          if (i_ + 4 > t_.size()) return false;
          unsigned code = std::stoul(t_.substr(i_, 4), nullptr, 16);
          i_ += 4;
          *out += code < 0x80 ? static_cast<char>(code) : '?';
          break;
        }
        default:
          return false;
      }
    }
    if (i_ >= t_.size()) return false;
    ++i_;
    return true;
  }
  bool ParseValue(Value* v) {
    Skip();
    if (i_ >= t_.size()) return Fail("unexpected end");
    char c = t_[i_];
    if (c == '{') {
      v->type = Value::kObject;
      ++i_;
      Skip();
      if (i_ < t_.size() && t_[i_] == '}') return ++i_, true;
      while (true) {
        Skip();
        std::string key;
        if (i_ >= t_.size() || !ParseString(&key)) return Fail("bad object key");
        Skip();
        if (i_ >= t_.size() || t_[i_++] != ':') return Fail("expected ':'");
        if (!ParseValue(&v->o[key])) return false;
        Skip();
        if (i_ < t_.size() && t_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < t_.size() && t_[i_] == '}') return ++i_, true;
        return Fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v->type = Value::kArray;
      ++i_;
      Skip();
      if (i_ < t_.size() && t_[i_] == ']') return ++i_, true;
      while (true) {
        v->a.emplace_back();
        if (!ParseValue(&v->a.back())) return false;
        Skip();
        if (i_ < t_.size() && t_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < t_.size() && t_[i_] == ']') return ++i_, true;
        return Fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      v->type = Value::kString;
      return ParseString(&v->s) || !Fail("bad string");
    }
    if (Literal("true")) {
      v->type = Value::kBool;
      v->b = true;
      return true;
    }
    if (Literal("false")) {
      v->type = Value::kBool;
      return true;
    }
    if (Literal("null")) return true;
    const char* start = t_.c_str() + i_;
    char* end = nullptr;
    v->n = std::strtod(start, &end);
    if (end == start) return Fail("unexpected character");
    v->type = Value::kNumber;
    i_ += static_cast<size_t>(end - start);
    return true;
  }

  const std::string& t_;
  size_t i_ = 0;
  std::string error_;
};

}  // namespace testjson
