// A small, strict flag parser for the cumulus command line: `--name value`, `--name=value` and
// boolean `--name`. Unknown flags and stray arguments are errors that name the culprit.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "cumulus/status.h"

namespace cumulus::cli {

class Flags {
 public:
  // `with_value`: flags that take a value; `booleans`: flags that do not.
  Flags(std::set<std::string> with_value, std::set<std::string> booleans)
      : with_value_(std::move(with_value)), booleans_(std::move(booleans)) {}

  Status Parse(const std::vector<std::string>& args) { return Parse(args, nullptr); }

  // As Parse, and the arguments that are not flags go to *positional in order, wherever they
  // stand among the flags (`cumulus up --insecure FILE`); after a lone "--" every argument is one.
  Status Parse(const std::vector<std::string>& args, std::vector<std::string>* positional) {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (positional && a == "--") {
        positional->insert(positional->end(), args.begin() + static_cast<long>(i) + 1, args.end());
        break;
      }
      if (a.rfind("--", 0) != 0 || a.size() == 2) {
        if (positional) {
          positional->push_back(a);
          continue;
        }
        return Status::InvalidArgument("unexpected argument '" + a + "'");
      }
      std::string name = a.substr(2), value;
      bool has_value = false;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
        has_value = true;
      }
      if (booleans_.count(name)) {
        if (has_value) return Status::InvalidArgument("--" + name + " takes no value");
        values_[name] = "true";
      } else if (with_value_.count(name)) {
        if (!has_value) {
          if (i + 1 >= args.size()) return Status::InvalidArgument("--" + name + " needs a value");
          value = args[++i];
        }
        values_[name] = value;
        all_[name].push_back(value);
      } else {
        return Status::InvalidArgument("unknown flag '--" + name + "'");
      }
    }
    return Status();
  }

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  std::string Get(const std::string& name, const std::string& fallback = "") const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
  }

  // Every value of a flag given more than once (Get returns the last).
  std::vector<std::string> GetAll(const std::string& name) const {
    auto it = all_.find(name);
    return it == all_.end() ? std::vector<std::string>() : it->second;
  }

 private:
  std::set<std::string> with_value_, booleans_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> all_;
};

}  // namespace cumulus::cli
