#include "runtime/autoscaler/yaml_fields.h"

#include <algorithm>
#include <set>

namespace cumulus {

namespace {

const char* KindName(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "nothing";
  }
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

Status YamlError(const std::string& file, const YAML::Node& node, const std::string& message) {
  std::string where = file;
  if (node.IsDefined()) {
    YAML::Mark mark = node.Mark();
    if (mark.line >= 0) {
      where += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
    }
  }
  return Status::InvalidArgument(where + ": " + message);
}

Result<YamlMap> YamlMap::Open(const std::string& file, const YAML::Node& node,
                              const std::string& path, const std::vector<std::string>& known) {
  YamlMap map(file, node, path);
  if (!node.IsDefined() || node.IsNull()) return map;
  if (!node.IsMap()) {
    return YamlError(file, node,
                     (path.empty() ? std::string("the file") : path) + " must be a mapping of " +
                         "keys (" + Join(known) + "), got " + KindName(node));
  }
  std::set<std::string> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) {
      return YamlError(file, kv.first,
                       "a key of " + (path.empty() ? "the file" : path) +
                           " must be a plain name, got " + KindName(kv.first));
    }
    std::string key = kv.first.Scalar();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return YamlError(file, kv.first,
                       "unknown key '" + map.PathOf(key) + "' (known here: " + Join(known) + ")");
    }
    if (!seen.insert(key).second) {
      return YamlError(file, kv.first, map.PathOf(key) + " is given twice");
    }
  }
  return map;
}

bool YamlMap::Has(const std::string& key) const {
  if (!node_.IsDefined() || !node_.IsMap()) return false;
  return node_[key].IsDefined();
}

YAML::Node YamlMap::Get(const std::string& key) const {
  if (!node_.IsDefined() || !node_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  return node_[key];
}

std::string YamlMap::PathOf(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

Status YamlMap::Error(const std::string& key, const std::string& message) const {
  YAML::Node at = Get(key);
  return YamlError(file_, at.IsDefined() ? at : node_, message);
}

Result<std::string> YamlMap::Scalar(const std::string& key, const char* what) const {
  YAML::Node v = Get(key);
  if (!v.IsScalar()) {
    return Error(key, PathOf(key) + " must be " + what + ", got " + KindName(v));
  }
  return v.Scalar();
}

Status YamlMap::String(const std::string& key, std::string* out) const {
  if (!Has(key)) return Status();
  CUMULUS_ASSIGN_OR_RETURN(*out, Scalar(key, "a string"));
  return Status();
}

Status YamlMap::Bool(const std::string& key, bool* out) const {
  if (!Has(key)) return Status();
  CUMULUS_ASSIGN_OR_RETURN(std::string text, Scalar(key, "true or false"));
  if (text == "true") {
    *out = true;
  } else if (text == "false") {
    *out = false;
  } else {
    return Error(key, PathOf(key) + " must be true or false, got '" + text + "'");
  }
  return Status();
}

Status YamlMap::Integer(const std::string& key, IntRange range, int64_t* out) const {
  if (!Has(key)) return Status();
  CUMULUS_ASSIGN_OR_RETURN(std::string text, Scalar(key, "a whole number"));
  auto v = ParseInteger(PathOf(key), text, range);
  if (!v.ok()) return Error(key, v.status().message());
  *out = *v;
  return Status();
}

Status YamlMap::Real(const std::string& key, RealRange range, double* out) const {
  if (!Has(key)) return Status();
  CUMULUS_ASSIGN_OR_RETURN(std::string text, Scalar(key, "a number"));
  auto v = ParseReal(PathOf(key), text, range);
  if (!v.ok()) return Error(key, v.status().message());
  *out = *v;
  return Status();
}

Status YamlMap::StringList(const std::string& key, std::vector<std::string>* out) const {
  if (!Has(key)) return Status();
  YAML::Node v = Get(key);
  if (!v.IsSequence()) {
    return Error(key,
                 PathOf(key) + " must be a list of strings ([\"a\", \"b\"]), got " + KindName(v));
  }
  std::vector<std::string> items;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].IsScalar()) {
      return YamlError(
          file_, v[i],
          PathOf(key) + "[" + std::to_string(i) + "] must be a string, got " + KindName(v[i]));
    }
    items.push_back(v[i].Scalar());
  }
  *out = std::move(items);
  return Status();
}

Result<std::string> YamlMap::KeyValueList(const std::string& key, const char* what) const {
  YAML::Node v = Get(key);
  if (v.IsScalar()) return v.Scalar();
  if (!v.IsMap()) {
    return Error(key, PathOf(key) + " must be " + what + ", got " + KindName(v));
  }
  std::string spec;
  for (const auto& kv : v) {
    if (!kv.first.IsScalar() || !kv.second.IsScalar()) {
      return YamlError(file_, kv.first,
                       PathOf(key) + " must be " + what + ": each entry NAME: VALUE");
    }
    spec += (spec.empty() ? "" : ",") + kv.first.Scalar() + "=" + kv.second.Scalar();
  }
  return spec;
}

Status YamlMap::Resources(const std::string& key, ResourceSet* out) const {
  if (!Has(key)) return Status();
  CUMULUS_ASSIGN_OR_RETURN(
      std::string spec,
      KeyValueList(key, "resources as \"CPU=8,GPU=1,memory=32G\" or a mapping {CPU: 8}"));
  auto parsed = ResourceSet::Parse(spec);
  if (!parsed.ok()) return Error(key, PathOf(key) + ": " + parsed.status().message());
  *out = *parsed;
  return Status();
}

Status YamlMap::LabelSet(const std::string& key, Labels* out) const {
  if (!Has(key)) return Status();
  CUMULUS_ASSIGN_OR_RETURN(std::string spec,
                           KeyValueList(key, "labels as \"site=cloud,region=x\" or a mapping"));
  auto parsed = ParseLabels(spec);
  if (!parsed.ok()) return Error(key, PathOf(key) + ": " + parsed.status().message());
  *out = *parsed;
  return Status();
}

}  // namespace cumulus
