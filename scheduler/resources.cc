#include "scheduler/resources.h"

#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "runtime/base/numeric.h"

namespace cumulus {

namespace {

bool ValidName(std::string_view name, bool allow_colon) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' &&
        c != '/' && !(allow_colon && c == ':')) {
      return false;
    }
  }
  return true;
}

std::string FormatAmount(double amount) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", amount);
  return buf;
}

// Parses an amount: a number (ParseReal's grammar), for "memory" with an optional binary size
// suffix (K, M, G, T; a trailing B is allowed). Range and steps are CheckAmount's.
Result<double> ParseAmount(const std::string& name, std::string_view text) {
  bool memory = name == "memory";
  RealRange range{0, ResourceSet::kMaxAmount, memory ? "bytes (or K/M/G/T)" : ""};
  std::string_view number = text;
  double scale = 1;
  if (memory && !number.empty()) {
    if (number.size() > 1 && (number.back() == 'B' || number.back() == 'b'))
      number.remove_suffix(1);
    switch (std::toupper(static_cast<unsigned char>(number.back()))) {
      case 'K':
        scale = 1024.0;
        break;
      case 'M':
        scale = 1024.0 * 1024;
        break;
      case 'G':
        scale = 1024.0 * 1024 * 1024;
        break;
      case 'T':
        scale = 1024.0 * 1024 * 1024 * 1024;
        break;
    }
    if (scale != 1) number.remove_suffix(1);
  }
  auto v = ParseReal("resource " + name, number, range);
  if (!v.ok()) {  // the message quotes the whole text, suffix included
    return OutOfRange("resource " + name, /*whole=*/false, range.unit, FormatAmount(range.min),
                      FormatAmount(range.max), "'" + std::string(text) + "'");
  }
  return *v * scale;
}

}  // namespace

std::vector<std::string_view> SplitList(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

Result<ResourceSet> ResourceSet::Parse(std::string_view spec) {
  ResourceSet out;
  if (spec.empty()) return out;
  for (std::string_view item : SplitList(spec, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument("resource '" + std::string(item) +
                                     "' must be NAME=AMOUNT (e.g. CPU=8,GPU=2,memory=32G)");
    }
    std::string name(item.substr(0, eq));
    if (!ValidName(name, true)) {
      return Status::InvalidArgument("'" + name + "' is not a valid resource name");
    }
    CUMULUS_ASSIGN_OR_RETURN(double amount, ParseAmount(name, item.substr(eq + 1)));
    CUMULUS_RETURN_IF_ERROR(CheckAmount(name, amount));
    if (out.Has(name) || out.zeros_.count(name)) {
      return Status::InvalidArgument("resource " + name + " is given twice");
    }
    out.Set(name, amount);
    if (!out.Has(name)) out.zeros_[name] = true;
  }
  return out;
}

Status ResourceSet::CheckAmount(const std::string& name, double amount) {
  constexpr RealRange kRange{0, kMaxAmount};
  if (!Within(amount, kRange)) return CheckReal("resource " + name, amount, kRange);
  if (amount > 0 && amount < 1.0 / kUnit) {
    return Status::InvalidArgument("resource " + name + " is too small (" + FormatAmount(amount) +
                                   "): amounts are counted in steps of 1/" + std::to_string(kUnit));
  }
  return Status();
}

void ResourceSet::Set(const std::string& name, double amount) {
  SetUnits(name, static_cast<int64_t>(std::llround(amount * kUnit)));
}

void ResourceSet::SetUnits(const std::string& name, int64_t units) {
  if (units <= 0)
    units_.erase(name);
  else
    units_[name] = units;
}

double ResourceSet::Get(const std::string& name) const {
  return static_cast<double>(GetUnits(name)) / kUnit;
}

int64_t ResourceSet::GetUnits(const std::string& name) const {
  auto it = units_.find(name);
  return it == units_.end() ? 0 : it->second;
}

bool ResourceSet::Contains(const ResourceSet& demand) const {
  for (auto& [name, units] : demand.units_) {
    if (GetUnits(name) < units) return false;
  }
  return true;
}

void ResourceSet::Subtract(const ResourceSet& demand) {
  for (auto& [name, units] : demand.units_) SetUnits(name, GetUnits(name) - units);
}

void ResourceSet::Add(const ResourceSet& other) {
  for (auto& [name, units] : other.units_) {
    int64_t have = GetUnits(name);
    SetUnits(name, have > INT64_MAX - units ? INT64_MAX : have + units);
  }
}

void ResourceSet::Override(const ResourceSet& other) {
  for (auto& [name, units] : other.units_) units_[name] = units;
  for (auto& [name, unused] : other.zeros_) units_.erase(name);
}

std::string ResourceSet::ToString() const {
  std::ostringstream os;
  bool first = true;
  for (auto& [name, units] : units_) {
    if (!first) os << ',';
    first = false;
    os << name << '=';
    if (units % kUnit == 0)
      os << units / kUnit;
    else
      os << static_cast<double>(units) / kUnit;
  }
  return os.str();
}

Result<Labels> ParseLabels(std::string_view spec) {
  Labels out;
  if (spec.empty()) return out;
  for (std::string_view item : SplitList(spec, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument("label '" + std::string(item) +
                                     "' must be KEY=VALUE (e.g. site=onprem)");
    }
    std::string key(item.substr(0, eq)), value(item.substr(eq + 1));
    if (!ValidName(key, false))
      return Status::InvalidArgument("'" + key + "' is not a valid label key");
    if (!ValidName(value, false)) {
      return Status::InvalidArgument("label " + key + ": '" + value +
                                     "' is not a valid label value");
    }
    if (out.count(key)) return Status::InvalidArgument("label " + key + " is given twice");
    out[key] = value;
  }
  return out;
}

std::string LabelsToString(const Labels& labels) {
  std::string out;
  for (auto& [k, v] : labels) {
    if (!out.empty()) out += ',';
    out += k + "=" + v;
  }
  return out;
}

}  // namespace cumulus
