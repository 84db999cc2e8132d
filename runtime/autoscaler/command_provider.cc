#include "runtime/autoscaler/command_provider.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "runtime/autoscaler/run_program.h"

namespace cumulus {

namespace {

const std::map<std::string, std::string> kEnvNames = {{"type", "CUMULUS_NODE_TYPE"},
                                                      {"count", "CUMULUS_COUNT"},
                                                      {"instance_id", "CUMULUS_INSTANCE_ID"},
                                                      {"head", "CUMULUS_HEAD"},
                                                      {"token_file", "CUMULUS_TOKEN_FILE"},
                                                      {"resources", "CUMULUS_RESOURCES"},
                                                      {"labels", "CUMULUS_LABELS"},
                                                      {"cluster", "CUMULUS_CLUSTER"},
                                                      {"metrics_port", "CUMULUS_METRICS_PORT"}};

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::string Clip(const std::string& s) { return s.size() > 120 ? s.substr(0, 120) + "..." : s; }

}  // namespace

bool ValidInstanceId(const std::string& id) {
  if (id.empty() || id.size() > 256) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
           c == '/';
  });
}

std::string FillPlaceholders(const std::string& text,
                             const std::map<std::string, std::string>& vars) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find('{', i);
    if (open == std::string::npos) break;
    size_t close = text.find('}', open);
    if (close == std::string::npos) break;
    out += text.substr(i, open - i);
    auto it = vars.find(text.substr(open + 1, close - open - 1));
    out += it != vars.end() ? it->second : text.substr(open, close - open + 1);
    i = close + 1;
  }
  return out + text.substr(std::min(i, text.size()));
}

Result<std::string> CommandProvider::Run(const char* which,
                                         const std::vector<std::string>& argv_template,
                                         const Vars& vars, TimePoint deadline) {
  std::vector<std::string> argv;
  for (auto& item : argv_template) argv.push_back(FillPlaceholders(item, vars));
  RunProgramOptions options;
  for (auto& [key, value] : vars) options.env.emplace_back(kEnvNames.at(key), value);
  TimePoint start = SystemClock::Get().Now();
  TimePoint until =
      std::min(deadline, start + std::chrono::duration_cast<Duration>(
                                     std::chrono::duration<double>(options_.settings.timeout_s)));
  std::string what =
      "command provider " + options_.name + ": " + which + " (" + Clip(ShowArgv(argv)) + ")";
  auto r = RunProgram(argv, until, options);
  if (!r.ok()) return r.status().WithContext("command provider " + options_.name + ": " + which);
  if (!r->ok()) {
    return ProgramFailure(what, *r, std::chrono::duration<double>(until - start).count());
  }
  return r->out;
}

Result<std::vector<std::string>> CommandProvider::Launch(const NodeTypeConfig& type, int count,
                                                         const LaunchSpec& spec,
                                                         TimePoint deadline) {
  if (count < 1) return Status::InvalidArgument("Launch: count must be at least 1");
  Labels labels = type.labels;
  labels[kNodeTypeLabel] = type.name;
  std::string resources = type.resources.ToString();
  if (!type.resources.Has("GPU")) resources += ",GPU=0";
  Vars vars = {{"type", type.name},
               {"count", std::to_string(count)},
               {"instance_id", ""},
               {"head", spec.head_address},
               {"token_file", spec.token_file},
               {"resources", resources},
               {"labels", LabelsToString(labels)},
               {"metrics_port", spec.metrics_port >= 0 ? std::to_string(spec.metrics_port) : ""},
               {"cluster", options_.cluster_name}};
  CUMULUS_ASSIGN_OR_RETURN(std::string out,
                           Run("launch", options_.settings.launch, vars, deadline));
  std::vector<std::string> ids;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    line = Trim(line);
    if (line.empty()) continue;
    if (!ValidInstanceId(line)) {
      return Status::Unavailable("command provider " + options_.name +
                                 ": the launch program printed '" + Clip(line) +
                                 "', not an instance id (one id per line: letters, digits, "
                                 "'_', '-', '.', '/')");
    }
    ids.push_back(line);
  }
  if (ids.empty()) {
    return Status::Unavailable("command provider " + options_.name +
                               ": the launch program exited 0 but printed no instance id");
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& id : ids) types_[id] = type.name;
  return ids;
}

Result<std::vector<Instance>> CommandProvider::List(TimePoint deadline) {
  Vars vars = {{"cluster", options_.cluster_name}};
  CUMULUS_ASSIGN_OR_RETURN(std::string out, Run("list", options_.settings.list, vars, deadline));
  std::vector<Instance> instances;
  std::istringstream lines(out);
  std::string line;
  int number = 0;
  std::lock_guard<std::mutex> lock(mu_);
  while (std::getline(lines, line)) {
    ++number;
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string id, state, node_id, type, extra;
    words >> id >> state >> node_id >> type >> extra;
    auto bad = [&](const std::string& why) {
      return Status::Unavailable("command provider " + options_.name + ": line " +
                                 std::to_string(number) + " of the list program's output ('" +
                                 Clip(line) + "') " + why +
                                 "; each line must be: ID STATE [NODE_ID|- [TYPE]]");
    };
    if (!ValidInstanceId(id)) return bad("does not start with an instance id");
    auto parsed = ParseInstanceState(state);
    if (!parsed.ok()) return bad("has " + parsed.status().message());
    if (!extra.empty()) return bad("has more than four fields");
    Instance in;
    in.id = id;
    in.state = *parsed;
    in.node_id = node_id == "-" ? "" : node_id;
    in.node_type = type;
    if (in.node_type.empty()) {
      auto it = types_.find(id);
      if (it != types_.end()) in.node_type = it->second;
    }
    instances.push_back(std::move(in));
  }
  return instances;
}

Status CommandProvider::Terminate(const std::string& id, TimePoint deadline) {
  if (!ValidInstanceId(id)) {
    return Status::InvalidArgument("command provider " + options_.name + ": '" + Clip(id) +
                                   "' is not an instance id");
  }
  Vars vars = {{"instance_id", id}, {"cluster", options_.cluster_name}};
  auto out = Run("terminate", options_.settings.terminate, vars, deadline);
  return out.ok() ? Status() : out.status();
}

}  // namespace cumulus
