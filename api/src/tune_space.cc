#include "cumulus/tune_space.h"

#include "cumulus/internal/json.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace cumulus::tune {

std::string_view ValueTypeName(const Value& v) {
  switch (v.index()) {
    case 0:
      return "bool";
    case 1:
      return "int";
    case 2:
      return "double";
    default:
      return "string";
  }
}

std::string FormatValue(const Value& v) {
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.6g", *d);
    return buf;
  }
  return std::get<std::string>(v);
}

std::string_view ParamKindName(Param::Kind kind) {
  switch (kind) {
    case Param::Kind::kUniform:
      return "Uniform";
    case Param::Kind::kLogUniform:
      return "LogUniform";
    case Param::Kind::kQUniform:
      return "QUniform";
    case Param::Kind::kRandInt:
      return "RandInt";
    case Param::Kind::kChoice:
      return "Choice";
    case Param::Kind::kGrid:
      return "Grid";
    case Param::Kind::kConditional:
      return "Conditional";
  }
  return "?";
}

// ---- Config ---------------------------------------------------------------------------------

Config& Config::Set(std::string name, Value v) {
  values_[std::move(name)] = std::move(v);
  return *this;
}

const Value* Config::Find(std::string_view name, Status* missing) const {
  auto it = values_.find(std::string(name));
  if (it != values_.end()) return &it->second;
  std::string known;
  for (const auto& [k, _] : values_) known += (known.empty() ? "" : ", ") + k;
  *missing = Status::InvalidArgument("config has no key \"" + std::string(name) +
                                     "\" (it has: " + (known.empty() ? "nothing" : known) + ")");
  return nullptr;
}

std::string Config::ToString() const {
  std::string out = "{";
  for (const auto& [k, v] : values_) {
    if (out.size() > 1) out += ", ";
    out += k + "=" + FormatValue(v);
  }
  return out + "}";
}

namespace {

// Escapes \, tab and newline so that a field holds no separator.
std::string EscapeField(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

bool UnescapeField(std::string_view s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      *out += s[i];
      continue;
    }
    if (++i == s.size()) return false;
    if (s[i] == '\\') {
      *out += '\\';
    } else if (s[i] == 't') {
      *out += '\t';
    } else if (s[i] == 'n') {
      *out += '\n';
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string Config::ToJson() const {
  std::string out = "{";
  for (const auto& [k, v] : values_) {
    if (out.size() > 1) out += ", ";
    out += internal::JsonQuote(k);
    out += ": ";
    if (auto* d = std::get_if<double>(&v)) {
      if (!std::isfinite(*d)) {
        out += "null";
      } else {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g", *d);
        out += buf;
      }
    } else if (auto* s = std::get_if<std::string>(&v)) {
      out += internal::JsonQuote(*s);
    } else {
      out += FormatValue(v);
    }
  }
  return out + "}";
}

// One line per key: NAME \t TYPE \t VALUE, TYPE one of b i d s; doubles in hexadecimal (%a).
std::string Config::Encode() const {
  std::string out;
  for (const auto& [k, v] : values_) {
    out += EscapeField(k);
    out += '\t';
    if (auto* b = std::get_if<bool>(&v)) {
      out += std::string("b\t") + (*b ? "1" : "0");
    } else if (auto* i = std::get_if<int64_t>(&v)) {
      out += "i\t" + std::to_string(*i);
    } else if (auto* d = std::get_if<double>(&v)) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "%a", *d);
      out += std::string("d\t") + buf;
    } else {
      out += "s\t" + EscapeField(std::get<std::string>(v));
    }
    out += '\n';
  }
  return out;
}

Result<Config> Config::Decode(std::string_view text) {
  Config c;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos)
      return Status::InvalidArgument("encoded config: line " + std::to_string(line_no) +
                                     " does not end with a newline");
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    size_t t1 = line.find('\t');
    size_t t2 = t1 == std::string_view::npos ? t1 : line.find('\t', t1 + 1);
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument("encoded config: line " + std::to_string(line_no) + ": " +
                                     why);
    };
    if (t2 == std::string_view::npos || t2 != t1 + 2) return bad("not NAME<tab>TYPE<tab>VALUE");
    std::string name, raw;
    if (!UnescapeField(line.substr(0, t1), &name)) return bad("bad escape in the name");
    char type = line[t1 + 1];
    std::string_view value = line.substr(t2 + 1);
    if (!UnescapeField(value, &raw)) return bad("bad escape in the value");
    if (c.Has(name)) return bad("key \"" + name + "\" twice");
    switch (type) {
      case 'b':
        if (raw != "0" && raw != "1") return bad("a bool is 0 or 1");
        c.Set(name, raw == "1");
        break;
      case 'i': {
        errno = 0;
        char* end = nullptr;
        long long v = std::strtoll(raw.c_str(), &end, 10);
        if (raw.empty() || errno != 0 || *end != '\0') return bad("not an int64: " + raw);
        c.Set(name, static_cast<int64_t>(v));
        break;
      }
      case 'd': {
        char* end = nullptr;
        double v = std::strtod(raw.c_str(), &end);
        if (raw.empty() || *end != '\0') return bad("not a double: " + raw);
        c.Set(name, v);
        break;
      }
      case 's':
        c.Set(name, raw);
        break;
      default:
        return bad(std::string("unknown type '") + type + "'");
    }
  }
  return c;
}

// ---- SearchSpace ------------------------------------------------------------------------------

SearchSpace& SearchSpace::Add(Param p) {
  params_.push_back(std::move(p));
  return *this;
}

SearchSpace& SearchSpace::Uniform(std::string name, double lo, double hi) {
  Param p;
  p.name = std::move(name), p.kind = Param::Kind::kUniform, p.lo = lo, p.hi = hi;
  return Add(std::move(p));
}
SearchSpace& SearchSpace::LogUniform(std::string name, double lo, double hi) {
  Param p;
  p.name = std::move(name), p.kind = Param::Kind::kLogUniform, p.lo = lo, p.hi = hi;
  return Add(std::move(p));
}
SearchSpace& SearchSpace::QUniform(std::string name, double lo, double hi, double q) {
  Param p;
  p.name = std::move(name), p.kind = Param::Kind::kQUniform, p.lo = lo, p.hi = hi, p.q = q;
  return Add(std::move(p));
}
SearchSpace& SearchSpace::RandInt(std::string name, int64_t lo, int64_t hi) {
  Param p;
  p.name = std::move(name), p.kind = Param::Kind::kRandInt;
  p.lo = static_cast<double>(lo), p.hi = static_cast<double>(hi);
  return Add(std::move(p));
}
SearchSpace& SearchSpace::Choice(std::string name, std::vector<Value> values) {
  Param p;
  p.name = std::move(name), p.kind = Param::Kind::kChoice, p.values = std::move(values);
  return Add(std::move(p));
}
SearchSpace& SearchSpace::Grid(std::string name, std::vector<Value> values) {
  Param p;
  p.name = std::move(name), p.kind = Param::Kind::kGrid, p.values = std::move(values);
  return Add(std::move(p));
}
SearchSpace& SearchSpace::Conditional(std::string name, std::function<Value(const Config&)> fn) {
  Param p;
  p.name = std::move(name), p.kind = Param::Kind::kConditional, p.fn = std::move(fn);
  return Add(std::move(p));
}

const Param* SearchSpace::Find(std::string_view name) const {
  for (const Param& p : params_)
    if (p.name == name) return &p;
  return nullptr;
}

uint64_t SearchSpace::GridSize() const {
  uint64_t n = 1;
  for (const Param& p : params_) {
    if (p.kind != Param::Kind::kGrid || p.values.empty()) continue;
    if (n > UINT64_MAX / p.values.size()) return UINT64_MAX;
    n *= p.values.size();
  }
  return n;
}

Status SearchSpace::Validate() const {
  if (params_.empty())
    return Status::InvalidArgument(
        "the search space is empty: add at least one parameter (Uniform, Choice, Grid, ...)");
  std::set<std::string> seen;
  for (const Param& p : params_) {
    std::string what =
        "search space parameter \"" + p.name + "\" (" + std::string(ParamKindName(p.kind)) + ")";
    if (p.name.empty()) return Status::InvalidArgument("a search space parameter has no name");
    if (!seen.insert(p.name).second)
      return Status::InvalidArgument("search space parameter \"" + p.name +
                                     "\" is defined twice: give each parameter one name");
    switch (p.kind) {
      case Param::Kind::kUniform:
      case Param::Kind::kLogUniform:
      case Param::Kind::kQUniform:
      case Param::Kind::kRandInt: {
        if (!std::isfinite(p.lo) || !std::isfinite(p.hi))
          return Status::InvalidArgument(what + ": bounds must be finite numbers");
        if (!(p.lo < p.hi)) {
          char buf[96];
          std::snprintf(buf, sizeof buf, ": the lower bound %g is not below the upper bound %g",
                        p.lo, p.hi);
          return Status::InvalidArgument(what + buf);
        }
        if (p.kind == Param::Kind::kLogUniform && !(p.lo > 0))
          return Status::InvalidArgument(what + ": a log-uniform range must be above 0");
        if (p.kind == Param::Kind::kQUniform) {
          if (!std::isfinite(p.q) || !(p.q > 0))
            return Status::InvalidArgument(what + ": the step q must be a number above 0");
          if (std::ceil(p.lo / p.q) * p.q > p.hi)
            return Status::InvalidArgument(what + ": no multiple of q lies between the bounds");
        }
        break;
      }
      case Param::Kind::kChoice:
      case Param::Kind::kGrid:
        if (p.values.empty()) return Status::InvalidArgument(what + ": it has no values");
        for (const Value& v : p.values)
          if (auto* d = std::get_if<double>(&v); d != nullptr && std::isnan(*d))
            return Status::InvalidArgument(what + ": NaN is not a value");
        break;
      case Param::Kind::kConditional:
        if (!p.fn) return Status::InvalidArgument(what + ": it has no function");
        break;
    }
  }
  return Status::OK();
}

}  // namespace cumulus::tune
