// A small, strict JSON parser (RFC 8259) for what a user types on the command line and for the
// function catalogs drivers publish: no comments, no trailing commas, no NaN literals, no leading
// zeros; strings must be UTF-8 (escapes, surrogate pairs included, are decoded to UTF-8). Numbers
// keep their text, so that a 64-bit integer is read exactly by whoever knows its type. Bounded:
// nesting depth (JsonLimits::max_depth) and input size; an error says what and at which column.
//
// Also the writing side: quoting a string and printing a double the shortest way that reads back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cumulus/status.h"

namespace cumulus {

struct JsonValue {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = kNull;
  bool boolean = false;
  std::string text;              // kNumber: as written; kString: the decoded UTF-8
  std::vector<JsonValue> items;  // kArray
  std::vector<std::pair<std::string, JsonValue>> members;  // kObject, in the order written
  size_t column = 0;  // 1-based byte column where the value starts

  // "a string", "an array", ... for error messages.
  const char* KindName() const;
  // kNumber written without fraction or exponent.
  bool IsIntegerText() const;
  // The first member called `name` of an object; null if there is none or this is no object.
  const JsonValue* Member(std::string_view name) const;
};

struct JsonLimits {
  size_t max_depth = 64;         // arrays and objects nested deeper are refused
  size_t max_bytes = 16u << 20;  // longer input is refused
};

// The one value `text` holds (surrounding whitespace allowed). InvalidArgument
// "bad JSON at column N: ..." otherwise.
Result<JsonValue> ParseJson(std::string_view text, const JsonLimits& limits = {});

// `s` as a JSON string literal. Bytes that are not UTF-8 are written as U+FFFD.
std::string JsonQuoteUtf8(std::string_view s);
// The shortest decimal that reads back as `v`; "NaN", "Infinity", "-Infinity" quoted (JSON has
// no literal for them).
std::string JsonDouble(double v);
std::string JsonFloat(float v);

}  // namespace cumulus
