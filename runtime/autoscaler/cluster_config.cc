#include "runtime/autoscaler/cluster_config.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "runtime/autoscaler/yaml_fields.h"

namespace cumulus {

namespace {

// The placeholders a command provider's argv templates may use.
const std::set<std::string> kPlaceholders = {"type",   "count",        "instance_id",
                                             "head",   "token_file",   "resources",
                                             "labels", "metrics_port", "cluster"};

bool LabelValueChars(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
          c == '/'))
      return false;
  }
  return true;
}

std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || base_dir.empty() || path[0] == '/') return path;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

class Parser {
 public:
  Parser(std::string file, std::string base_dir)
      : file_(std::move(file)), base_dir_(std::move(base_dir)) {}

  Result<ClusterConfig> Parse(const YAML::Node& root) {
    ClusterConfig c;
    c.file = file_;
    CUMULUS_ASSIGN_OR_RETURN(YamlMap top,
                             YamlMap::Open(file_, root, "",
                                           {"cluster_name", "head", "onprem_nodes", "providers",
                                            "node_types", "budget", "upscaling_speed"}));
    CUMULUS_RETURN_IF_ERROR(top.String("cluster_name", &c.cluster_name));
    if (!LabelValueChars(c.cluster_name)) {
      return top.Error("cluster_name", "cluster_name '" + c.cluster_name +
                                           "' may hold only letters, digits, '_', '-', '.', '/'");
    }
    CUMULUS_RETURN_IF_ERROR(ParseHead(top, &c.head));
    CUMULUS_RETURN_IF_ERROR(ParseOnprem(top, &c.onprem_nodes));
    CUMULUS_RETURN_IF_ERROR(ParseProviders(top, &c.providers));
    CUMULUS_RETURN_IF_ERROR(ParseTypes(top, c.providers, &c.node_types));
    CUMULUS_RETURN_IF_ERROR(ParseBudget(top, &c.budget));
    CUMULUS_RETURN_IF_ERROR(top.Real("upscaling_speed", {0.01, 1000}, &c.upscaling_speed));
    // A type whose price alone is over the hourly budget could never be launched.
    for (size_t i = 0; i < c.node_types.size(); ++i) {
      const NodeTypeConfig& t = c.node_types[i];
      if (t.price_per_hour > c.budget.per_hour) {
        YamlMap type_map = YamlMap::Unchecked(file_, top.Get("node_types")[i], "");
        std::ostringstream msg;
        msg << "node_types[" << t.name << "].price_per_hour (" << t.price_per_hour
            << ") is more than budget.per_hour (" << c.budget.per_hour
            << "): this type could never be launched; raise the budget or remove the type";
        return type_map.Error("price_per_hour", msg.str());
      }
    }
    // The policy launches a node only if its boot and idle timeout, paid at its price, fit in
    // what is left of the total budget (a learned idle timeout may fall to 0): a type that costs
    // more than the whole budget that way could never be launched.
    for (size_t i = 0; i < c.node_types.size(); ++i) {
      const NodeTypeConfig& t = c.node_types[i];
      double seconds = t.boot_time_s + (t.learn_idle_timeout ? 0 : t.idle_timeout_s);
      double least = t.price_per_hour * seconds / 3600;
      if (least > c.budget.total + 1e-9) {  // as the policy compares
        YamlMap budget = YamlMap::Unchecked(file_, top.Get("budget"), "budget");
        std::ostringstream msg;
        msg << "budget.total (" << c.budget.total << ") is less than one launch of node_types["
            << t.name << "] costs (" << least << ": its price for boot_time_s"
            << (t.learn_idle_timeout ? "" : " and idle_timeout_s")
            << "): this type could never be launched; raise the budget or remove the type";
        return budget.Error("total", msg.str());
      }
    }
    // The min counts are kept running: together they must fit the hourly budget.
    double min_hourly = 0;
    for (const NodeTypeConfig& t : c.node_types) min_hourly += t.min_count * t.price_per_hour;
    if (min_hourly > c.budget.per_hour + 1e-9) {  // as the policy compares
      YamlMap budget = YamlMap::Unchecked(file_, top.Get("budget"), "budget");
      std::ostringstream msg;
      msg << "budget.per_hour (" << c.budget.per_hour << ") is less than the min_count nodes cost ("
          << min_hourly << " per hour): they could never all run; raise the budget or lower "
          << "min_count";
      return budget.Error("per_hour", msg.str());
    }
    return c;
  }

 private:
  Status ParseHead(const YamlMap& top, HeadConfig* head) {
    CUMULUS_ASSIGN_OR_RETURN(
        YamlMap m, YamlMap::Open(file_, top.Get("head"), "head", {"host", "port", "data_dir"}));
    CUMULUS_RETURN_IF_ERROR(m.String("host", &head->host));
    if (head->host.empty()) return m.Error("host", "head.host must not be empty");
    int64_t port = head->port;
    CUMULUS_RETURN_IF_ERROR(m.Integer("port", {0, 65535}, &port));
    head->port = static_cast<uint16_t>(port);
    CUMULUS_RETURN_IF_ERROR(m.String("data_dir", &head->data_dir));
    head->data_dir = Resolve(base_dir_, head->data_dir);
    return Status();
  }

  Status ParseOnprem(const YamlMap& top, std::vector<StaticNodeConfig>* out) {
    YAML::Node list = top.Get("onprem_nodes");
    if (!list.IsDefined() || list.IsNull()) return Status();
    if (!list.IsSequence()) {
      return top.Error("onprem_nodes", "onprem_nodes must be a list of nodes (- resources: ...)");
    }
    std::set<std::string> names;
    for (size_t i = 0; i < list.size(); ++i) {
      std::string path = "onprem_nodes[" + std::to_string(i) + "]";
      CUMULUS_ASSIGN_OR_RETURN(
          YamlMap m, YamlMap::Open(file_, list[i], path, {"name", "host", "resources", "labels"}));
      StaticNodeConfig n;
      n.name = "onprem-" + std::to_string(i);
      CUMULUS_RETURN_IF_ERROR(m.String("name", &n.name));
      if (!names.insert(n.name).second) {
        return m.Error("name", path + ".name '" + n.name + "' is used by another on-prem node");
      }
      CUMULUS_RETURN_IF_ERROR(m.String("host", &n.host));
      if (!m.Has("resources")) {
        return YamlError(file_, list[i], path + " needs resources (e.g. resources: CPU=8)");
      }
      CUMULUS_RETURN_IF_ERROR(m.Resources("resources", &n.resources));
      if (n.resources.empty()) {
        return m.Error("resources", path + ".resources has no amount above 0: no work could run");
      }
      CUMULUS_RETURN_IF_ERROR(CheckWholeGpus(m, path, n.resources));
      CUMULUS_RETURN_IF_ERROR(m.LabelSet("labels", &n.labels));
      CUMULUS_RETURN_IF_ERROR(CheckReservedLabels(m, path, n.labels));
      n.labels.emplace("site", "onprem");
      out->push_back(std::move(n));
    }
    return Status();
  }

  Status ParseProviders(const YamlMap& top, std::map<std::string, ProviderConfig>* out) {
    YAML::Node providers = top.Get("providers");
    if (!providers.IsDefined() || providers.IsNull()) return Status();
    if (!providers.IsMap()) {
      return top.Error("providers",
                       "providers must be a mapping NAME: {kind: local|command|slurm, ...}");
    }
    for (const auto& kv : providers) {
      if (!kv.first.IsScalar()) {
        return YamlError(file_, kv.first, "a key of providers must be a plain name");
      }
      std::string name = kv.first.Scalar();
      std::string path = "providers." + name;
      if (!LabelValueChars(name)) {
        return YamlError(file_, kv.first,
                         path +
                             ": a provider's name may hold only letters, "
                             "digits, '_', '-', '.', '/'");
      }
      if (out->count(name)) return YamlError(file_, kv.first, path + " is defined twice");
      ProviderConfig p;
      p.name = name;
      // The kind decides which keys are known: read it first.
      CUMULUS_ASSIGN_OR_RETURN(YamlMap probe, YamlMap::Open(file_, kv.second, path, KnownKeys()));
      if (!probe.Has("kind")) {
        return YamlError(file_, kv.first, path + " needs kind: local, command or slurm");
      }
      std::string kind;
      CUMULUS_RETURN_IF_ERROR(probe.String("kind", &kind));
      if (kind == "local") {
        p.kind = ProviderKind::kLocal;
      } else if (kind == "command") {
        p.kind = ProviderKind::kCommand;
      } else if (kind == "slurm") {
        p.kind = ProviderKind::kSlurm;
      } else {
        return probe.Error("kind",
                           path + ".kind '" + kind +
                               "' is not a provider this build knows (local, command, slurm)");
      }
      Status st;
      switch (p.kind) {
        case ProviderKind::kLocal:
          st = ParseLocal(kv.second, path, &p.local);
          break;
        case ProviderKind::kCommand:
          st = ParseCommand(kv.second, path, &p.command);
          break;
        case ProviderKind::kSlurm:
          st = ParseSlurm(kv.second, path, &p.slurm);
          break;
      }
      CUMULUS_RETURN_IF_ERROR(st);
      (*out)[name] = std::move(p);
    }
    return Status();
  }

  static std::vector<std::string> KnownKeys() {
    std::vector<std::string> all = {"kind"};
    for (auto* keys : {&kLocalKeys, &kCommandKeys, &kSlurmKeys}) {
      for (auto& k : *keys) {
        if (std::find(all.begin(), all.end(), k) == all.end()) all.push_back(k);
      }
    }
    return all;
  }
  static inline const std::vector<std::string> kLocalKeys = {
      "kind",      "boot_delay_s",        "failure_rate",  "seed",
      "state_dir", "object_store_memory", "cumulus_binary"};
  static inline const std::vector<std::string> kCommandKeys = {"kind", "launch", "list",
                                                               "terminate", "timeout_s"};
  static inline const std::vector<std::string> kSlurmKeys = {
      "kind",          "partition",           "sbatch_args", "job_name_prefix", "output_dir",
      "node_data_dir", "object_store_memory", "slurm_conf",  "cumulus_binary",  "timeout_s"};

  Status ParseLocal(const YAML::Node& node, const std::string& path, LocalProviderSettings* s) {
    CUMULUS_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Open(file_, node, path, kLocalKeys));
    CUMULUS_RETURN_IF_ERROR(m.Real("boot_delay_s", {0, 3600, "seconds"}, &s->boot_delay_s));
    CUMULUS_RETURN_IF_ERROR(m.Real("failure_rate", {0, 1}, &s->failure_rate));
    CUMULUS_RETURN_IF_ERROR(m.Integer("seed", {0, std::numeric_limits<int64_t>::max()}, &s->seed));
    CUMULUS_RETURN_IF_ERROR(m.String("state_dir", &s->state_dir));
    s->state_dir = Resolve(base_dir_, s->state_dir);
    CUMULUS_RETURN_IF_ERROR(Bytes(m, "object_store_memory", &s->object_store_memory));
    CUMULUS_RETURN_IF_ERROR(m.String("cumulus_binary", &s->cumulus_binary));
    s->cumulus_binary = Resolve(base_dir_, s->cumulus_binary);
    return Status();
  }

  Status ParseCommand(const YAML::Node& node, const std::string& path, CommandProviderSettings* s) {
    CUMULUS_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Open(file_, node, path, kCommandKeys));
    for (auto [key, argv] : {std::pair{"launch", &s->launch}, std::pair{"list", &s->list},
                             std::pair{"terminate", &s->terminate}}) {
      if (!m.Has(key)) {
        return YamlError(file_, node,
                         path + " (kind: command) needs " + key + ": [PROGRAM, ARG, ...]");
      }
      CUMULUS_RETURN_IF_ERROR(m.StringList(key, argv));
      if (argv->empty() || (*argv)[0].empty()) {
        return m.Error(key, m.PathOf(key) + " must name a program to run");
      }
      if ((*argv)[0].find('/') != std::string::npos) (*argv)[0] = Resolve(base_dir_, (*argv)[0]);
      for (const std::string& item : *argv) {
        if (item == "{metrics_port}") {
          // Empty when metrics are off: as an argument of its own it would be an empty value
          // (`--metrics-port ""`), and every node start would fail.
          return m.Error(key, m.PathOf(key) +
                                  ": {metrics_port} cannot be an argument of its own (it is "
                                  "empty when metrics are off); pass --metrics-port from a "
                                  "script only when CUMULUS_METRICS_PORT is not empty");
        }
        static const std::regex kBrace(R"(\{([^{}]*)\})");
        for (std::sregex_iterator it(item.begin(), item.end(), kBrace), end; it != end; ++it) {
          std::string name = (*it)[1];
          if (!kPlaceholders.count(name)) {
            return m.Error(key, m.PathOf(key) + ": unknown placeholder {" + name +
                                    "} (known: {type} {count} {instance_id} {head} {token_file} "
                                    "{resources} {labels} {metrics_port} {cluster})");
          }
        }
      }
    }
    CUMULUS_RETURN_IF_ERROR(m.Real("timeout_s", {1, 3600, "seconds"}, &s->timeout_s));
    return Status();
  }

  Status ParseSlurm(const YAML::Node& node, const std::string& path, SlurmProviderSettings* s) {
    CUMULUS_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Open(file_, node, path, kSlurmKeys));
    CUMULUS_RETURN_IF_ERROR(m.String("partition", &s->partition));
    CUMULUS_RETURN_IF_ERROR(m.StringList("sbatch_args", &s->sbatch_args));
    CUMULUS_RETURN_IF_ERROR(m.String("job_name_prefix", &s->job_name_prefix));
    if (!s->job_name_prefix.empty() && !LabelValueChars(s->job_name_prefix)) {
      return m.Error("job_name_prefix", path +
                                            ".job_name_prefix may hold only letters, digits, "
                                            "'_', '-', '.', '/'");
    }
    CUMULUS_RETURN_IF_ERROR(m.String("output_dir", &s->output_dir));
    s->output_dir = Resolve(base_dir_, s->output_dir);
    CUMULUS_RETURN_IF_ERROR(m.String("node_data_dir", &s->node_data_dir));
    if (s->node_data_dir.empty() || s->node_data_dir[0] != '/') {
      return m.Error("node_data_dir", path +
                                          ".node_data_dir must be an absolute path (it is "
                                          "used on the SLURM nodes)");
    }
    CUMULUS_RETURN_IF_ERROR(Bytes(m, "object_store_memory", &s->object_store_memory));
    CUMULUS_RETURN_IF_ERROR(m.String("slurm_conf", &s->slurm_conf));
    s->slurm_conf = Resolve(base_dir_, s->slurm_conf);
    CUMULUS_RETURN_IF_ERROR(m.String("cumulus_binary", &s->cumulus_binary));
    s->cumulus_binary = Resolve(base_dir_, s->cumulus_binary);
    CUMULUS_RETURN_IF_ERROR(m.Real("timeout_s", {1, 3600, "seconds"}, &s->timeout_s));
    return Status();
  }

  Status Bytes(const YamlMap& m, const std::string& key, std::string* out) {
    if (!m.Has(key)) return Status();
    std::string text;
    CUMULUS_RETURN_IF_ERROR(m.String(key, &text));
    auto bytes = ParseBytes(text);
    if (!bytes.ok()) return m.Error(key, m.PathOf(key) + ": " + bytes.status().message());
    *out = text;
    return Status();
  }

  Status CheckWholeGpus(const YamlMap& m, const std::string& path, const ResourceSet& r) {
    if (r.GetUnits("GPU") % ResourceSet::kUnit != 0) {
      return m.Error("resources", path + ".resources: a node's GPU count must be a whole number");
    }
    return Status();
  }

  Status CheckReservedLabels(const YamlMap& m, const std::string& path, const Labels& labels) {
    for (auto& [k, v] : labels) {
      if (k.rfind("cumulus.", 0) == 0) {
        return m.Error("labels", path + ".labels: '" + k +
                                     "' is reserved (labels cumulus.* are set by the autoscaler)");
      }
    }
    return Status();
  }

  Status ParseTypes(const YamlMap& top, const std::map<std::string, ProviderConfig>& providers,
                    std::vector<NodeTypeConfig>* out) {
    YAML::Node list = top.Get("node_types");
    if (!list.IsDefined() || list.IsNull()) return Status();
    if (!list.IsSequence()) {
      return top.Error("node_types", "node_types must be a list of types (- name: ...)");
    }
    std::map<std::string, size_t> names;
    for (size_t i = 0; i < list.size(); ++i) {
      std::string index_path = "node_types[" + std::to_string(i) + "]";
      // Messages name the type by its name once it has one (node_types[gpu-a100].max_count).
      std::string path = index_path;
      if (list[i].IsMap() && list[i]["name"].IsScalar() &&
          LabelValueChars(list[i]["name"].Scalar())) {
        path = "node_types[" + list[i]["name"].Scalar() + "]";
      }
      CUMULUS_ASSIGN_OR_RETURN(
          YamlMap m,
          YamlMap::Open(file_, list[i], path,
                        {"name", "provider", "resources", "labels", "gpu_model", "price_per_hour",
                         "boot_time_s", "min_count", "max_count", "spot", "idle_timeout_s",
                         "learn_idle_timeout", "launch_after_waiting_s"}));
      NodeTypeConfig t;
      if (!m.Has("name")) return YamlError(file_, list[i], index_path + " needs a name");
      CUMULUS_RETURN_IF_ERROR(m.String("name", &t.name));
      if (!LabelValueChars(t.name)) {
        return m.Error("name", index_path + ".name '" + t.name +
                                   "' may hold only letters, digits, '_', '-', '.', '/' (it "
                                   "becomes the label cumulus.node_type)");
      }
      if (names.count(t.name)) {
        return m.Error("name", index_path + ".name '" + t.name +
                                   "' is already the name of node_types[" +
                                   std::to_string(names[t.name]) + "]");
      }
      names[t.name] = i;
      if (!m.Has("provider")) {
        return YamlError(file_, list[i], path + " needs provider: NAME (a key of providers:)");
      }
      CUMULUS_RETURN_IF_ERROR(m.String("provider", &t.provider));
      if (!providers.count(t.provider)) {
        std::string known;
        for (auto& [name, p] : providers) known += (known.empty() ? "" : ", ") + name;
        return m.Error("provider", path + ".provider '" + t.provider +
                                       "' is not defined under providers: (defined: " +
                                       (known.empty() ? "none" : known) + ")");
      }
      if (!m.Has("resources")) {
        return YamlError(file_, list[i], path + " needs resources (e.g. resources: CPU=8,GPU=1)");
      }
      CUMULUS_RETURN_IF_ERROR(m.Resources("resources", &t.resources));
      if (t.resources.empty()) {
        return m.Error("resources", path +
                                        ".resources has no amount above 0: no work could use "
                                        "this type");
      }
      CUMULUS_RETURN_IF_ERROR(CheckWholeGpus(m, path, t.resources));
      CUMULUS_RETURN_IF_ERROR(m.LabelSet("labels", &t.labels));
      CUMULUS_RETURN_IF_ERROR(CheckReservedLabels(m, path, t.labels));
      CUMULUS_RETURN_IF_ERROR(m.String("gpu_model", &t.gpu_model));
      if (!t.gpu_model.empty()) {
        if (!LabelValueChars(t.gpu_model)) {
          return m.Error("gpu_model", path + ".gpu_model '" + t.gpu_model +
                                          "' may hold only letters, digits, '_', '-', '.', '/'");
        }
        if (t.resources.GetUnits("GPU") == 0) {
          return m.Error("gpu_model", path + ".gpu_model is set but resources have no GPU");
        }
        auto it = t.labels.find("gpu_model");
        if (it != t.labels.end() && it->second != t.gpu_model) {
          return m.Error("labels", path + ".labels: gpu_model=" + it->second +
                                       " disagrees with gpu_model: " + t.gpu_model);
        }
        t.labels["gpu_model"] = t.gpu_model;
      }
      t.labels.emplace("site", "cloud");
      CUMULUS_RETURN_IF_ERROR(m.Real("price_per_hour", {0, 1e6}, &t.price_per_hour));
      CUMULUS_RETURN_IF_ERROR(m.Real("boot_time_s", {0, 86400, "seconds"}, &t.boot_time_s));
      CUMULUS_RETURN_IF_ERROR(m.Integer("min_count", {0, 10000}, &t.min_count));
      CUMULUS_RETURN_IF_ERROR(m.Integer("max_count", {1, 10000}, &t.max_count));
      if (t.max_count < t.min_count) {
        return m.Error(m.Has("max_count") ? "max_count" : "min_count",
                       path + ".max_count (" + std::to_string(t.max_count) +
                           ") is less than min_count (" + std::to_string(t.min_count) + ")");
      }
      CUMULUS_RETURN_IF_ERROR(m.Bool("spot", &t.spot));
      t.idle_timeout_s = 2 * t.boot_time_s;  // unless given
      CUMULUS_RETURN_IF_ERROR(m.Real("idle_timeout_s", {0, 604800, "seconds"}, &t.idle_timeout_s));
      CUMULUS_RETURN_IF_ERROR(m.Bool("learn_idle_timeout", &t.learn_idle_timeout));
      CUMULUS_RETURN_IF_ERROR(
          m.Real("launch_after_waiting_s", {0, 86400, "seconds"}, &t.launch_after_waiting_s));
      out->push_back(std::move(t));
    }
    return Status();
  }

  Status ParseBudget(const YamlMap& top, BudgetConfig* b) {
    CUMULUS_ASSIGN_OR_RETURN(
        YamlMap m, YamlMap::Open(file_, top.Get("budget"), "budget", {"per_hour", "total"}));
    CUMULUS_RETURN_IF_ERROR(m.Real("per_hour", {0, 1e12}, &b->per_hour));
    CUMULUS_RETURN_IF_ERROR(m.Real("total", {0, 1e15}, &b->total));
    return Status();
  }

  std::string file_;
  std::string base_dir_;
};

}  // namespace

const char* ProviderKindName(ProviderKind kind) {
  switch (kind) {
    case ProviderKind::kLocal:
      return "local";
    case ProviderKind::kCommand:
      return "command";
    case ProviderKind::kSlurm:
      return "slurm";
  }
  return "unknown";
}

const NodeTypeConfig* ClusterConfig::FindType(const std::string& name) const {
  for (auto& t : node_types) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Result<ClusterConfig> ParseClusterConfig(const std::string& text, const std::string& file,
                                         const std::string& base_dir) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(file + ":" + std::to_string(e.mark.line + 1) + ":" +
                                   std::to_string(e.mark.column + 1) +
                                   ": not valid YAML: " + e.msg);
  }
  try {
    auto config = Parser(file, base_dir).Parse(root);
    if (config.ok()) config->text = text;
    return config;
  } catch (const YAML::Exception& e) {  // not expected: every access above is checked first
    return Status::InvalidArgument(file + ": cannot read the cluster file: " + e.msg);
  }
}

Result<ClusterConfig> LoadClusterConfig(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument("cannot read the cluster file " + path +
                                   ": it is a directory; give the YAML file in it");
  }
  std::ifstream in(path);
  if (!in) {
    return Status::InvalidArgument("cannot read the cluster file " + path + ": " +
                                   std::strerror(errno));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return Status::InvalidArgument("cannot read the cluster file " + path + ": " +
                                   std::strerror(errno));
  }
  std::string dir = std::filesystem::absolute(path).parent_path().string();
  return ParseClusterConfig(text.str(), path, dir);
}

}  // namespace cumulus
