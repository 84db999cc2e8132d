// What Tab offers in the shell: see completion.h.
#include "runtime/cli/shell/completion.h"

#include <algorithm>
#include <sstream>

#include "runtime/cli/command_table.h"

namespace cumulus::cli::shell {

namespace {

std::vector<std::string> Matching(const std::vector<std::string>& words, const std::string& partial,
                                  const std::string& prefix = "") {
  std::vector<std::string> out;
  for (const std::string& w : words) {
    std::string full = prefix + w;
    if (full.rfind(partial, 0) == 0) out.push_back(full);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> Split(const char* s) {
  std::vector<std::string> out;
  std::istringstream in(s ? s : "");
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The flags of the shell's own commands.
std::vector<std::string> BuiltinFlags(const std::string& name) {
  if (name == "watch") return {"--interval"};
  if (name == "top") return {"--interval"};
  return {};
}

// The id kind a --filter KEY= takes.
std::string FilterKind(const std::string& key) {
  if (key == "node" || key == "job" || key == "task" || key == "object") return key;
  if (key == "node_type") return key;
  if (key == "id") return "group";
  if (key == "name") return "actor";
  if (key == "actor") return "actor_id";
  return "";
}

}  // namespace

const std::vector<std::string>& BuiltinNames() {
  static const auto* names = new std::vector<std::string>{"watch", "top", "help", "exit", "quit"};
  return *names;
}

std::string CommonPrefix(const std::vector<std::string>& words) {
  if (words.empty()) return "";
  std::string p = words[0];
  for (const std::string& w : words) {
    size_t n = 0;
    while (n < p.size() && n < w.size() && p[n] == w[n]) ++n;
    p.resize(n);
  }
  return p;
}

std::vector<std::string> Completer::Ids(const std::string& kind, const std::string& partial) {
  if (kind.empty() || !live_) return {};
  return Matching(live_->Get(kind), partial);
}

std::vector<std::string> Completer::Complete(std::vector<std::string> before,
                                             const std::string& partial) {
  if (!before.empty() && before[0] == "cumulus") before.erase(before.begin());
  // watch [--interval S] CMD ...: complete CMD ... as a line of its own.
  while (!before.empty() && before[0] == "watch") {
    size_t skip = 1;
    while (skip < before.size() && before[skip].rfind("-", 0) == 0) {
      skip += before[skip].find('=') == std::string::npos ? 2 : 1;
    }
    if (skip > before.size()) return {};  // completing the --interval value
    if (skip == before.size() && partial.rfind("-", 0) == 0)
      return Matching({"--interval"}, partial);
    before.erase(before.begin(), before.begin() + static_cast<long>(skip));
  }
  if (before.empty()) {
    std::vector<std::string> names = BuiltinNames();
    for (const Command& c : Commands()) {
      if (std::string(c.name).find(' ') == std::string::npos) names.push_back(c.name);
    }
    return Matching(names, partial);
  }
  const std::string name = before[0];
  // A sub-form ("stop trial"): its own flags and first word; the SUB word is not positional.
  size_t used = 1;
  const Command* command =
      FindCommand(name, std::vector<std::string>(before.begin() + 1, before.end()), &used);
  if (used == 2) before.erase(before.begin() + 1);
  if (!command)
    return partial.rfind("-", 0) == 0 ? Matching(BuiltinFlags(name), partial)
                                      : std::vector<std::string>{};
  const std::string previous = before.back();
  // The value of a flag.
  if (previous == "--filter") {
    size_t eq = partial.find('=');
    if (eq == std::string::npos) {
      return Matching({"node=", "job=", "task=", "object=", "id=", "name=", "actor=", "state=",
                       "site=", "node_type="},
                      partial);
    }
    std::string key = partial.substr(0, eq);
    return Matching(live_ ? live_->Get(FilterKind(key)) : std::vector<std::string>{}, partial,
                    key + "=");
  }
  // logs JOB --trial T: the trial ids (and EXPERIMENT/TRIAL) of the tuning experiments.
  if (previous == "--trial") return Ids("trial", partial);
  if (previous.rfind("--", 0) == 0 && previous.find('=') == std::string::npos) {
    static const std::vector<std::string> kValued = {
        "--address",      "--token-file",   "--limit",   "--name",           "--resources",
        "--working-dir",  "--grace",        "--trial",   "--plot",           "--width",
        "--port",         "--data-dir",     "--labels",  "--socket",         "--dir",
        "--interval",     "--round-ms",     "--memory",  "--after",          "--sort",
        "--metrics-port", "--metrics-host", "--timeout", "--metrics-sd-file"};
    if (std::find(kValued.begin(), kValued.end(), previous) != kValued.end()) return {};
  }
  if (partial.rfind("-", 0) == 0) return Matching(Split(command->flags), partial);
  // The first word after the name.
  size_t positional = 0;
  for (size_t i = 1; i < before.size(); ++i) {
    if (before[i].rfind("-", 0) != 0) ++positional;
  }
  std::string first = command->first_arg;
  if (positional == 0) {
    if (first == "list") {
      return Matching(
          {"nodes", "jobs", "actors", "tasks", "objects", "workers", "placement-groups"}, partial);
    }
    if (first == "describe") return Matching({"node", "actor", "task", "job", "object"}, partial);
    if (first == "store") return Matching({"serve", "stats"}, partial);
    if (first == "stop") return Matching({"trial"}, partial);
    // stop trial EXP/TRIAL: the experiment, then (after its slash) its trials.
    if (first == "experiment" && std::string(command->name) == "stop trial") {
      size_t slash = partial.find('/');
      if (slash == std::string::npos) {
        auto experiments = Ids("experiment", partial);
        for (auto& e : experiments) e += "/";
        return experiments;
      }
      std::string experiment = partial.substr(0, slash);
      if (!live_) return {};
      return Matching(live_->Get("trial:" + experiment), partial, experiment + "/");
    }
    return Ids(first, partial);
  }
  // trials EXP TRIAL: that experiment's trials.
  if (positional == 1 && first == "experiment" && name == "trials") {
    for (size_t i = 1; i < before.size(); ++i) {
      if (before[i].rfind("-", 0) != 0) return Ids("trial:" + before[i], partial);
    }
  }
  // describe KIND ID: the ids of that kind.
  if (positional == 1 && first == "describe") {
    for (size_t i = 1; i < before.size(); ++i) {
      if (before[i].rfind("-", 0) != 0) {
        return Ids(before[i] == "actor" ? "actor_id" : before[i], partial);
      }
    }
  }
  return {};
}

}  // namespace cumulus::cli::shell
