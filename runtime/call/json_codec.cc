// JSON <-> serialized bytes, driven by type descriptors (json_codec.h).
#include "runtime/call/json_codec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace cumulus {

namespace {

Status Wrong(const std::string& path, const TypeNode& type, const std::string& got) {
  return Status::InvalidArgument(path + ": expected " + type.Display() + ", got " + got);
}

void PutRaw(std::string& out, const void* p, size_t n) {
  out.append(static_cast<const char*>(p), n);
}
void PutCount(std::string& out, uint64_t n) { PutRaw(out, &n, sizeof(n)); }

Status EncodeInt(const JsonValue& v, const TypeNode& type, const std::string& path,
                 std::string& out) {
  if (v.kind != JsonValue::kNumber) return Wrong(path, type, v.KindName());
  if (!v.IsIntegerText()) return Wrong(path, type, v.text + " (not an integer)");
  const char* b = v.text.data();
  const char* e = b + v.text.size();
  int bits = type.bits;
  std::string range = type.is_signed
                          ? std::to_string(bits == 64 ? std::numeric_limits<int64_t>::min()
                                                      : -(int64_t{1} << (bits - 1))) +
                                ".." +
                                std::to_string(bits == 64 ? std::numeric_limits<int64_t>::max()
                                                          : (int64_t{1} << (bits - 1)) - 1)
                          : "0.." + std::to_string(bits == 64 ? std::numeric_limits<uint64_t>::max()
                                                              : (uint64_t{1} << bits) - 1);
  auto out_of_range = [&] {
    return Status::InvalidArgument(path + ": " + v.text + " is out of range for " + type.Display() +
                                   " (" + range + ")");
  };
  uint64_t raw = 0;
  if (type.is_signed) {
    int64_t x = 0;
    auto r = std::from_chars(b, e, x);
    if (r.ec != std::errc() || r.ptr != e) return out_of_range();
    if (bits < 64 && (x < -(int64_t{1} << (bits - 1)) || x > (int64_t{1} << (bits - 1)) - 1)) {
      return out_of_range();
    }
    raw = static_cast<uint64_t>(x);
  } else {
    if (v.text[0] == '-') return out_of_range();
    auto r = std::from_chars(b, e, raw);
    if (r.ec != std::errc() || r.ptr != e) return out_of_range();
    if (bits < 64 && raw > (uint64_t{1} << bits) - 1) return out_of_range();
  }
  // Little-endian, as the serializer's memcpy of the integer on the machines Cumulus runs on.
  PutRaw(out, &raw, static_cast<size_t>(bits / 8));
  return Status();
}

Status EncodeFloat(const JsonValue& v, const TypeNode& type, const std::string& path,
                   std::string& out) {
  double d = 0;
  if (v.kind == JsonValue::kString) {
    if (v.text == "NaN") {
      d = std::numeric_limits<double>::quiet_NaN();
    } else if (v.text == "Infinity") {
      d = std::numeric_limits<double>::infinity();
    } else if (v.text == "-Infinity") {
      d = -std::numeric_limits<double>::infinity();
    } else {
      return Wrong(path, type, "a string");  // (only "NaN", "Infinity", "-Infinity" are numbers)
    }
    if (type.bits == 32) {
      float f = static_cast<float>(d);
      PutRaw(out, &f, sizeof(f));
    } else {
      PutRaw(out, &d, sizeof(d));
    }
    return Status();
  }
  if (v.kind != JsonValue::kNumber) return Wrong(path, type, v.KindName());
  const char* b = v.text.data();
  const char* e = b + v.text.size();
  if (type.bits == 32) {
    float f = 0;
    auto r = std::from_chars(b, e, f);
    if (r.ec != std::errc() || r.ptr != e || !std::isfinite(f)) {
      return Status::InvalidArgument(path + ": " + v.text + " is out of range for float32");
    }
    PutRaw(out, &f, sizeof(f));
  } else {
    auto r = std::from_chars(b, e, d);
    if (r.ec != std::errc() || r.ptr != e || !std::isfinite(d)) {
      return Status::InvalidArgument(path + ": " + v.text + " is out of range for float64");
    }
    PutRaw(out, &d, sizeof(d));
  }
  return Status();
}

Status Encode(const JsonValue& v, const TypeNode& type, const std::string& path, std::string& out);

Status EncodeItems(const std::vector<JsonValue>& items, const TypeNode& elem,
                   const std::string& path, std::string& out) {
  for (size_t i = 0; i < items.size(); ++i) {
    CUMULUS_RETURN_IF_ERROR(Encode(items[i], elem, path + "[" + std::to_string(i) + "]", out));
  }
  return Status();
}

Status Encode(const JsonValue& v, const TypeNode& type, const std::string& path, std::string& out) {
  switch (type.kind) {
    case TypeNode::kBool:
      if (v.kind != JsonValue::kBool) return Wrong(path, type, v.KindName());
      out += static_cast<char>(v.boolean ? 1 : 0);
      return Status();
    case TypeNode::kInt:
      return EncodeInt(v, type, path, out);
    case TypeNode::kEnum:
      return EncodeInt(v, type.children[0], path, out);
    case TypeNode::kFloat:
      return EncodeFloat(v, type, path, out);
    case TypeNode::kString:
      if (v.kind != JsonValue::kString) return Wrong(path, type, v.KindName());
      PutCount(out, v.text.size());
      out += v.text;
      return Status();
    case TypeNode::kVoid:
      if (v.kind != JsonValue::kNull) return Wrong(path, type, v.KindName());
      return Status();
    case TypeNode::kVector:
    case TypeNode::kSet:
      if (v.kind != JsonValue::kArray) return Wrong(path, type, v.KindName());
      PutCount(out, v.items.size());
      return EncodeItems(v.items, type.children[0], path, out);
    case TypeNode::kArray:
      if (v.kind != JsonValue::kArray) return Wrong(path, type, v.KindName());
      if (v.items.size() != type.length) {
        return Wrong(path, type, "an array of " + std::to_string(v.items.size()));
      }
      return EncodeItems(v.items, type.children[0], path, out);
    case TypeNode::kTuple: {
      if (v.kind != JsonValue::kArray) return Wrong(path, type, v.KindName());
      if (v.items.size() != type.children.size()) {
        return Wrong(path, type, "an array of " + std::to_string(v.items.size()));
      }
      for (size_t i = 0; i < v.items.size(); ++i) {
        CUMULUS_RETURN_IF_ERROR(
            Encode(v.items[i], type.children[i], path + "[" + std::to_string(i) + "]", out));
      }
      return Status();
    }
    case TypeNode::kOptional:
      if (v.kind == JsonValue::kNull) {
        out += '\0';
        return Status();
      }
      out += '\1';
      return Encode(v, type.children[0], path, out);
    case TypeNode::kMap: {
      const TypeNode& key = type.children[0];
      const TypeNode& value = type.children[1];
      if (key.kind == TypeNode::kString) {
        if (v.kind != JsonValue::kObject) return Wrong(path, type, v.KindName());
        PutCount(out, v.members.size());
        for (auto& [k, item] : v.members) {
          PutCount(out, k.size());
          out += k;
          CUMULUS_RETURN_IF_ERROR(Encode(item, value, path + "[" + JsonQuoteUtf8(k) + "]", out));
        }
        return Status();
      }
      if (v.kind != JsonValue::kArray) {
        return Wrong(path, type,
                     std::string(v.KindName()) + " (a map whose keys are not " +
                         "strings is an array of [key, value] pairs)");
      }
      PutCount(out, v.items.size());
      for (size_t i = 0; i < v.items.size(); ++i) {
        std::string at = path + "[" + std::to_string(i) + "]";
        const JsonValue& pair = v.items[i];
        if (pair.kind != JsonValue::kArray || pair.items.size() != 2) {
          return Status::InvalidArgument(at + ": expected a [key, value] pair, got " +
                                         (pair.kind == JsonValue::kArray
                                              ? "an array of " + std::to_string(pair.items.size())
                                              : std::string(pair.KindName())));
        }
        CUMULUS_RETURN_IF_ERROR(Encode(pair.items[0], key, at + "[0]", out));
        CUMULUS_RETURN_IF_ERROR(Encode(pair.items[1], value, at + "[1]", out));
      }
      return Status();
    }
    case TypeNode::kStruct: {
      if (v.kind != JsonValue::kObject) return Wrong(path, type, v.KindName());
      std::string names;
      for (auto& n : type.field_names) names += (names.empty() ? "" : ", ") + n;
      for (auto& [k, item] : v.members) {
        bool known = false;
        for (auto& n : type.field_names) known = known || n == k;
        if (!known) {
          return Status::InvalidArgument(path + ": " + type.Display() + " has no field " +
                                         JsonQuoteUtf8(k) + " (its fields: " + names + ")");
        }
      }
      for (size_t i = 0; i < type.field_names.size(); ++i) {
        const JsonValue* item = nullptr;
        for (auto& [k, m] : v.members) {
          if (k == type.field_names[i]) item = &m;
        }
        if (!item) {
          return Status::InvalidArgument(path + ": field \"" + type.field_names[i] +
                                         "\" is missing (every field must be given: " + names +
                                         ")");
        }
        CUMULUS_RETURN_IF_ERROR(
            Encode(*item, type.children[i], path + "." + type.field_names[i], out));
      }
      return Status();
    }
    case TypeNode::kOpaque:
      return Status::InvalidArgument(path + ": " + type.Display());
  }
  return Status::Internal("unknown type kind");
}

// ---- bytes -> JSON --------------------------------------------------------------------------

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  bool Take(void* p, size_t n) {
    if (n > in_.size() - pos_) {
      return Fail("needs " + std::to_string(n) + " more bytes at offset " + std::to_string(pos_) +
                  " of " + std::to_string(in_.size()));
    }
    std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool Count(uint64_t* n) {
    if (!Take(n, sizeof(*n))) return false;
    if (*n > remaining()) {  // every element takes at least... nothing more than the bytes left
      return Fail("a count of " + std::to_string(*n) + " at offset " + std::to_string(pos_ - 8) +
                  " is more than the " + std::to_string(remaining()) + " bytes left");
    }
    return true;
  }
  bool Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return false;
  }
  size_t remaining() const { return in_.size() - pos_; }
  const std::string& error() const { return error_; }
  std::string_view Bytes(size_t n) {
    std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  std::string error_;
};

bool Decode(ByteReader& r, const TypeNode& type, std::string& out);

// The fewest bytes a value of `type` takes (saturating).
uint64_t MinBytes(const TypeNode& type) {
  constexpr uint64_t kMax = uint64_t{1} << 40;
  switch (type.kind) {
    case TypeNode::kBool:
    case TypeNode::kOptional:
      return 1;
    case TypeNode::kInt:
    case TypeNode::kFloat:
      return static_cast<uint64_t>(type.bits / 8);
    case TypeNode::kEnum:
      return MinBytes(type.children[0]);
    case TypeNode::kString:
    case TypeNode::kVector:
    case TypeNode::kSet:
    case TypeNode::kMap:
      return 8;
    case TypeNode::kArray: {
      uint64_t each = MinBytes(type.children[0]);
      return each == 0 ? 0 : std::min(kMax, type.length > kMax / each ? kMax : type.length * each);
    }
    case TypeNode::kTuple:
    case TypeNode::kStruct: {
      uint64_t sum = 0;
      for (auto& c : type.children) sum = std::min(kMax, sum + MinBytes(c));
      return sum;
    }
    case TypeNode::kVoid:
    case TypeNode::kOpaque:
      return 0;
  }
  return 0;
}

bool DecodeInt(ByteReader& r, const TypeNode& type, std::string& out) {
  uint64_t raw = 0;
  if (!r.Take(&raw, static_cast<size_t>(type.bits / 8))) return false;
  if (type.is_signed) {
    int shift = 64 - type.bits;
    int64_t x = static_cast<int64_t>(raw << shift) >> shift;  // sign-extend
    out += std::to_string(x);
  } else {
    out += std::to_string(raw);
  }
  return true;
}

bool DecodeString(ByteReader& r, std::string& out) {
  uint64_t n = 0;
  if (!r.Count(&n)) return false;
  out += JsonQuoteUtf8(r.Bytes(static_cast<size_t>(n)));
  return true;
}

bool DecodeItems(ByteReader& r, const TypeNode& elem, uint64_t n, std::string& out) {
  out += '[';
  for (uint64_t i = 0; i < n; ++i) {
    if (i) out += ',';
    if (!Decode(r, elem, out)) return false;
  }
  out += ']';
  return true;
}

bool Decode(ByteReader& r, const TypeNode& type, std::string& out) {
  switch (type.kind) {
    case TypeNode::kBool: {
      uint8_t b = 0;
      if (!r.Take(&b, 1)) return false;
      if (b > 1) return r.Fail("a bool byte is " + std::to_string(b));
      out += b ? "true" : "false";
      return true;
    }
    case TypeNode::kInt:
      return DecodeInt(r, type, out);
    case TypeNode::kEnum:
      return DecodeInt(r, type.children[0], out);
    case TypeNode::kFloat:
      if (type.bits == 32) {
        float f = 0;
        if (!r.Take(&f, sizeof(f))) return false;
        out += JsonFloat(f);
      } else {
        double d = 0;
        if (!r.Take(&d, sizeof(d))) return false;
        out += JsonDouble(d);
      }
      return true;
    case TypeNode::kString:
      return DecodeString(r, out);
    case TypeNode::kVoid:
      out += "null";
      return true;
    case TypeNode::kVector:
    case TypeNode::kSet: {
      uint64_t n = 0;
      return r.Count(&n) && DecodeItems(r, type.children[0], n, out);
    }
    case TypeNode::kArray: {
      // Bounded by the bytes there are (elements of no bytes: by a fixed number).
      uint64_t each = MinBytes(type.children[0]);
      if (each > 0 ? type.length > r.remaining() / each : type.length > (1u << 20)) {
        return r.Fail("an array of " + std::to_string(type.length) + " is longer than the bytes");
      }
      return DecodeItems(r, type.children[0], type.length, out);
    }
    case TypeNode::kTuple:
      out += '[';
      for (size_t i = 0; i < type.children.size(); ++i) {
        if (i) out += ',';
        if (!Decode(r, type.children[i], out)) return false;
      }
      out += ']';
      return true;
    case TypeNode::kOptional: {
      uint8_t has = 0;
      if (!r.Take(&has, 1)) return false;
      if (!has) {
        out += "null";
        return true;
      }
      return Decode(r, type.children[0], out);
    }
    case TypeNode::kMap: {
      uint64_t n = 0;
      if (!r.Count(&n)) return false;
      bool object = type.children[0].kind == TypeNode::kString;
      out += object ? '{' : '[';
      for (uint64_t i = 0; i < n; ++i) {
        if (i) out += ',';
        if (object) {
          if (!DecodeString(r, out)) return false;
          out += ':';
        } else {
          out += '[';
          if (!Decode(r, type.children[0], out)) return false;
          out += ',';
        }
        if (!Decode(r, type.children[1], out)) return false;
        if (!object) out += ']';
      }
      out += object ? '}' : ']';
      return true;
    }
    case TypeNode::kStruct:
      out += '{';
      for (size_t i = 0; i < type.children.size(); ++i) {
        if (i) out += ',';
        out += JsonQuoteUtf8(type.field_names[i]) + ":";
        if (!Decode(r, type.children[i], out)) return false;
      }
      out += '}';
      return true;
    case TypeNode::kOpaque:
      return r.Fail(type.Display());
  }
  return r.Fail("unknown type kind");
}

}  // namespace

Result<std::string> JsonToBytes(const JsonValue& value, const TypeNode& type, uint64_t fingerprint,
                                const std::string& path) {
  std::string out;
  PutRaw(out, &fingerprint, sizeof(fingerprint));
  CUMULUS_RETURN_IF_ERROR(Encode(value, type, path, out));
  return out;
}

Result<std::string> BytesToJson(std::string_view bytes, const TypeNode& type,
                                uint64_t fingerprint) {
  if (const TypeNode* opaque = type.FirstOpaque()) {
    return Status::InvalidArgument("a " + opaque->Display() + " cannot be shown as JSON");
  }
  ByteReader r(bytes);
  uint64_t written_as = 0;
  if (!r.Take(&written_as, sizeof(written_as)) || written_as != fingerprint) {
    return Status::InvalidArgument(
        "the value is not a " + type.Display() +
        (r.error().empty() ? " (it was written as another type)" : " (" + r.error() + ")"));
  }
  std::string out;
  if (!Decode(r, type, out)) {
    return Status::InvalidArgument("cannot read a " + type.Display() + ": " + r.error());
  }
  if (r.remaining() != 0) {
    return Status::InvalidArgument("cannot read a " + type.Display() + ": " +
                                   std::to_string(r.remaining()) + " bytes left over");
  }
  return out;
}

}  // namespace cumulus
