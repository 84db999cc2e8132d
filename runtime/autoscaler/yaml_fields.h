// YamlMap: reads one YAML mapping of a config file field by field, with the checks every field
// needs (its type, its range, no unknown or repeated keys), each failure one InvalidArgument
//   FILE:LINE:COLUMN: PATH.KEY what is wrong
// Used by the cluster file parser; yaml-cpp stays inside runtime/autoscaler/*.cc.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cumulus/status.h"
#include "runtime/base/numeric.h"
#include "scheduler/resources.h"

namespace cumulus {

// "FILE:LINE:COLUMN: " + message, at `node`'s position (1-based, as editors count).
Status YamlError(const std::string& file, const YAML::Node& node, const std::string& message);

class YamlMap {
 public:
  // Checks that `node` is a mapping (or absent/null: an empty one) whose keys are all in `known`
  // and none is repeated. `path` names it in messages ("" at the top level).
  static Result<YamlMap> Open(const std::string& file, const YAML::Node& node,
                              const std::string& path, const std::vector<std::string>& known);

  // The same mapping, unchecked (for a message at one of its keys).
  static YamlMap Unchecked(const std::string& file, const YAML::Node& node,
                           const std::string& path) {
    return YamlMap(file, node, path);
  }
  // The same mapping, named `path` in messages from now on.
  YamlMap WithPath(const std::string& path) const { return YamlMap(file_, node_, path); }

  bool Has(const std::string& key) const;
  // The value under `key` (an undefined node if absent).
  YAML::Node Get(const std::string& key) const;
  // "PATH.KEY" (or "KEY" at the top level).
  std::string PathOf(const std::string& key) const;
  // The error at `key`'s value (at the mapping if the key is absent).
  Status Error(const std::string& key, const std::string& message) const;

  // Each reader leaves *out unchanged when the key is absent (the default stays). A value of
  // the wrong type, out of range or malformed is an error naming the key.
  Status String(const std::string& key, std::string* out) const;
  Status Bool(const std::string& key, bool* out) const;  // true/false only
  Status Integer(const std::string& key, IntRange range, int64_t* out) const;
  Status Real(const std::string& key, RealRange range, double* out) const;
  // A sequence of scalars: ["a", "b"].
  Status StringList(const std::string& key, std::vector<std::string>* out) const;
  // "CPU=8,GPU=1,memory=32G" or a mapping {CPU: 8, memory: 32G} (ResourceSet::Parse).
  Status Resources(const std::string& key, ResourceSet* out) const;
  // "site=cloud,region=x" or a mapping {site: cloud} (ParseLabels).
  Status LabelSet(const std::string& key, Labels* out) const;

  const YAML::Node& node() const { return node_; }

 private:
  YamlMap(std::string file, YAML::Node node, std::string path)
      : file_(std::move(file)), node_(std::move(node)), path_(std::move(path)) {}
  Result<std::string> Scalar(const std::string& key, const char* what) const;
  // "k=v,k2=v2" from a scalar or a mapping of scalars.
  Result<std::string> KeyValueList(const std::string& key, const char* what) const;

  std::string file_;
  YAML::Node node_;
  std::string path_;
};

}  // namespace cumulus
