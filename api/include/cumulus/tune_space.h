// Search spaces and trial configs for hyperparameter tuning (the values; the tuner is in tune.h).
//
//   cumulus::tune::SearchSpace space;
//   space.LogUniform("lr", 1e-4, 1e-1)
//       .Choice("width", {int64_t{64}, int64_t{128}, int64_t{256}})
//       .Grid("batch", {int64_t{32}, int64_t{128}})
//       .Conditional("momentum", [](const Config& c) {
//         return Value{c.Get<double>("lr") < 1e-2 ? 0.9 : 0.5};
//       });
//
// A trial's config is typed: `config.Get<double>("lr")` throws ConfigError naming the key and the
// type it holds if the key is missing or of another type (an int64 value reads as a double too);
// `TryGet<T>` returns the same as a Status. Configs and spaces are plain values: copy freely.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "cumulus/status.h"

namespace cumulus::tune {

// One hyperparameter's value.
using Value = std::variant<bool, int64_t, double, std::string>;

// "bool", "int", "double" or "string".
std::string_view ValueTypeName(const Value& v);
// The value as a person reads it: true, 12, 0.001, relu.
std::string FormatValue(const Value& v);

// Thrown by Config::Get for a missing key or a value of another type.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A trial's hyperparameters by name (sorted by name).
class Config {
 public:
  Config() = default;

  Config& Set(std::string name, Value v);
  bool Has(std::string_view name) const { return values_.find(std::string(name)) != values_.end(); }
  const std::map<std::string, Value>& values() const { return values_; }
  bool empty() const { return values_.empty(); }
  size_t size() const { return values_.size(); }

  // The value of `name` as T (bool, an integer type, double or std::string). An int64 value reads
  // as a double; an integer type narrower than int64 must hold the value.
  template <typename T>
  Result<T> TryGet(std::string_view name) const;
  // As TryGet, but throws ConfigError with the same message.
  template <typename T>
  T Get(std::string_view name) const {
    Result<T> r = TryGet<T>(name);
    if (!r.ok()) throw ConfigError(r.status().message());
    return std::move(r).value();
  }

  // {lr=0.001, width=128}
  std::string ToString() const;
  // {"lr": 0.001, "width": 128}
  std::string ToJson() const;
  // An exact, typed text form (doubles round-trip bit for bit) and its inverse.
  std::string Encode() const;
  static Result<Config> Decode(std::string_view text);

  bool operator==(const Config& o) const { return values_ == o.values_; }
  bool operator!=(const Config& o) const { return !(*this == o); }

 private:
  const Value* Find(std::string_view name, Status* missing) const;
  std::map<std::string, Value> values_;
};

// How one hyperparameter is drawn.
struct Param {
  enum class Kind {
    kUniform,      // double in [lo, hi)
    kLogUniform,   // double in [lo, hi), uniform in log space; 0 < lo
    kQUniform,     // double in [lo, hi], rounded to a multiple of q
    kRandInt,      // int64 in [lo, hi) (hi exclusive, as Ray's randint)
    kChoice,       // one of `values`, each equally likely
    kGrid,         // every one of `values`: the grid is the product of all grid parameters
    kConditional,  // fn(the values drawn so far, in the order parameters were added)
  };
  std::string name;
  Kind kind = Kind::kUniform;
  double lo = 0, hi = 0, q = 0;
  std::vector<Value> values;
  std::function<Value(const Config&)> fn;

  bool numeric() const {
    return kind == Kind::kUniform || kind == Kind::kLogUniform || kind == Kind::kQUniform ||
           kind == Kind::kRandInt;
  }
};
std::string_view ParamKindName(Param::Kind kind);

// The hyperparameters of an experiment, in the order they were added (a conditional parameter sees
// those added before it). The adders never fail; Validate() says what is wrong, once, by name.
class SearchSpace {
 public:
  SearchSpace& Uniform(std::string name, double lo, double hi);
  SearchSpace& LogUniform(std::string name, double lo, double hi);
  SearchSpace& QUniform(std::string name, double lo, double hi, double q);
  SearchSpace& RandInt(std::string name, int64_t lo, int64_t hi);
  SearchSpace& Choice(std::string name, std::vector<Value> values);
  SearchSpace& Grid(std::string name, std::vector<Value> values);
  SearchSpace& Conditional(std::string name, std::function<Value(const Config&)> fn);

  // InvalidArgument naming the parameter for: an empty space, a repeated name, bounds that are not
  // finite or not lo < hi (RandInt: lo < hi; QUniform: a multiple of q inside), LogUniform with
  // lo <= 0, q <= 0, an empty Choice or Grid, a Conditional without a function.
  Status Validate() const;

  const std::vector<Param>& params() const { return params_; }
  const Param* Find(std::string_view name) const;
  // The number of points in the grid (1 without grid parameters).
  uint64_t GridSize() const;
  // Adds a parameter as described (a copy of one from another space, say).
  SearchSpace& Add(Param p);

 private:
  std::vector<Param> params_;
};

// ---- implementation of the templates ------------------------------------------------------

template <typename T>
Result<T> Config::TryGet(std::string_view name) const {
  Status missing;
  const Value* v = Find(name, &missing);
  if (v == nullptr) return missing;
  auto wrong = [&](std::string_view want) {
    return Status::InvalidArgument("config key \"" + std::string(name) + "\" holds " +
                                   std::string(ValueTypeName(*v)) + " " + FormatValue(*v) +
                                   ", not " + std::string(want));
  };
  if constexpr (std::is_same_v<T, bool>) {
    if (auto* b = std::get_if<bool>(v)) return *b;
    return wrong("bool");
  } else if constexpr (std::is_integral_v<T>) {
    auto* i = std::get_if<int64_t>(v);
    if (i == nullptr) return wrong("an integer");
    if constexpr (std::is_signed_v<T>) {
      if (*i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          *i > static_cast<int64_t>(std::numeric_limits<T>::max()))
        return wrong("an integer of this width");
    } else {
      if (*i < 0 || static_cast<uint64_t>(*i) > std::numeric_limits<T>::max())
        return wrong("an unsigned integer of this width");
    }
    return static_cast<T>(*i);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (auto* d = std::get_if<double>(v)) return static_cast<T>(*d);
    if (auto* i = std::get_if<int64_t>(v)) return static_cast<T>(*i);
    return wrong("a number");
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (auto* s = std::get_if<std::string>(v)) return *s;
    return wrong("string");
  } else {
    static_assert(std::is_same_v<T, bool>,
                  "Config::Get<T>: T must be bool, integer, double or "
                  "std::string");
  }
}

}  // namespace cumulus::tune
