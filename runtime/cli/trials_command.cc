// cumulus trials: tuning experiments and their trials, read from the journal in the head's control
// store (runtime/tune/journal.h), so it works while an experiment runs and after its driver died.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/head_connection.h"
#include "runtime/tune/curve_plot.h"
#include "runtime/tune/experiment_state.h"
#include "runtime/tune/stop_requests.h"
#include "runtime/tune/trial_table.h"
#include "runtime/tune/trial_text.h"

namespace cumulus::cli {
namespace {

const char* kTrialsHelp = R"(usage:
  cumulus trials [--json] [--address A] [--token-file F]
  cumulus trials EXPERIMENT [--json | --csv] [--plot FILE.svg [--log-x]] [--width N]
  cumulus trials EXPERIMENT TRIAL [--json | --csv]      (TRIAL as t0003, t3 or 3)

Tuning experiments (cumulus/tune.h) as their journal in the head's control store says, while they
run and after their driver ended or died:
  (no experiment)   every experiment: trials, state, metric, best so far
  EXPERIMENT        every trial: config, state, iterations, last and best metric, where it runs,
                    restarts, and why it stopped; --json and --csv give the same as data
  --plot FILE.svg   also draws every trial's metric against iterations, rung cut-offs marked,
                    stopped trials cut short, the best highlighted (--log-x: iterations on a log
                    scale)
  TRIAL             one trial: its state, config, reason and PBT exploits, then its history
                    (every report, all its metrics); --csv the history alone, --json all of
                    it as data
  --width N         the table's width in columns (default: the terminal's, else 120)
A trial's output: cumulus logs JOB --trial TRIAL (the job is the driver's, see 'cumulus jobs').
)";

size_t TerminalWidth(const Flags& flags) {
  if (flags.Has("width"))
    return static_cast<size_t>(std::max(40, std::atoi(flags.Get("width").c_str())));
  if (winsize ws{}; isatty(1) && ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
    return ws.ws_col;
  return 120;
}

struct Loaded {
  tune::ExperimentState state;
  std::vector<tune::JournalEntry> entries;
};

Result<Loaded> LoadExperiment(ControlClient& head, const std::string& name) {
  CUMULUS_ASSIGN_OR_RETURN(auto j, tune::Journal::Load(head, name));
  Loaded out{tune::ExperimentState(j.spec), std::move(j.entries)};
  for (auto& e : out.entries) CUMULUS_RETURN_IF_ERROR(out.state.Apply(e));
  return out;
}

int ListExperiments(ControlClient& head, const Flags& flags) {
  std::vector<std::string> names;
  Status st = ForEachKv(head, tune::kExperimentsNamespace, "",
                        [&](const std::string& k, const std::string&) { names.push_back(k); });
  if (!st.ok()) return Fail(st);
  bool json = flags.Has("json");
  int name_w = 28;
  for (auto& name : names) name_w = std::max(name_w, static_cast<int>(name.size()));
  if (json) std::printf("[");
  if (!json) {
    std::printf("%-*s %-8s %7s %9s %-12s %s\n", name_w, "EXPERIMENT", "STATE", "TRIALS", "RUNNING",
                "METRIC", "BEST");
  }
  size_t n = 0;
  for (auto& name : names) {
    auto l = LoadExperiment(head, name);
    if (!l.ok()) {
      std::fprintf(stderr, "cumulus: experiment %s: %s\n", name.c_str(),
                   l.status().ToString().c_str());
      continue;
    }
    auto table = l->state.ToTable();
    const tune::TrialRow* best = tune::BestTrial(table);
    // The best value in words once ("" for none).
    std::string best_text;
    if (best) {
      if (auto v = tune::LastMetric(*best, table.metric)) best_text = tune::FormatNumber(*v);
    }
    size_t running = 0;
    for (auto& t : table.trials) running += t.state == tune::TrialState::kRunning;
    const char* state = l->state.ended() ? "ENDED" : "OPEN";
    const auto& spec = l->state.spec();
    if (json) {
      std::printf(
          "%s{\"name\": %s, \"state\": \"%s\", \"trials\": %zu, \"running\": %zu, "
          "\"metric\": %s, \"mode\": \"%s\", \"best_trial\": %s, \"best\": %s}",
          n ? ", " : "", JsonString(name).c_str(), state, table.trials.size(), running,
          JsonString(spec.metric).c_str(), spec.maximize ? "max" : "min",
          best ? JsonString(best->id).c_str() : "null",
          best_text.empty() ? "null" : best_text.c_str());
    } else {
      // Six significant digits read better in a table than the exact double --json gives.
      std::string b = "-";
      if (!best_text.empty()) {
        char v[32];
        std::snprintf(v, sizeof(v), "%.6g", std::strtod(best_text.c_str(), nullptr));
        b = std::string(v) + " (" + best->id + ")";
      }
      std::printf("%-*s %-8s %7zu %9zu %-12s %s\n", name_w, name.c_str(), state,
                  table.trials.size(), running,
                  (spec.metric + (spec.maximize ? " max" : " min")).c_str(), b.c_str());
    }
    ++n;
  }
  if (json) std::printf("]\n");
  return 0;
}

int ShowTrial(const tune::ExperimentTable& table, const std::string& text, const Flags& flags) {
  auto id = tune::ParseTrialId(text);
  std::string trial = id.ok() ? tune::TrialName(*id) : text;
  for (auto& t : table.trials) {
    if (t.id != trial) continue;
    if (flags.Has("json")) {
      std::printf("%s\n", tune::HistoryJson(t, table.metric).c_str());
      return 0;
    }
    if (!flags.Has("csv")) {
      std::string config;
      for (auto& [key, value] : t.config.values())
        config += (config.empty() ? "" : ", ") + key + "=" + tune::FormatConfigValue(value);
      std::printf("trial %s of %s: %s after %lld iteration(s)", t.id.c_str(), table.name.c_str(),
                  tune::TrialStateName(t.state), static_cast<long long>(tune::Iterations(t)));
      if (auto last = tune::LastMetric(t, table.metric))
        std::printf("; %s %s", table.metric.c_str(), tune::FormatNumber(*last).c_str());
      std::printf("\n  config: %s\n", config.c_str());
      if (!t.node.empty() || t.restarts > 0)
        std::printf("  node: %s; restarts: %d\n", t.node.empty() ? "-" : t.node.c_str(),
                    t.restarts);
      if (!t.reason.empty()) std::printf("  reason: %s\n", t.reason.c_str());
      for (const auto& x : t.exploits) {
        // What changed: the keys whose value the exploit (and PBT's explore) replaced.
        std::string changed;
        for (auto& [key, value] : x.after.values()) {
          auto old = x.before.values().find(key);
          std::string now = tune::FormatConfigValue(value);
          std::string was =
              old == x.before.values().end() ? "-" : tune::FormatConfigValue(old->second);
          if (now != was) changed += (changed.empty() ? "" : ", ") + key + " " + was + " -> " + now;
        }
        std::printf("  exploited %s at iteration %lld: its checkpoint and config (%s)\n",
                    x.from.c_str(), static_cast<long long>(x.iteration),
                    changed.empty() ? "the same config" : changed.c_str());
      }
      std::printf("history:\n");
    }
    std::fputs(tune::HistoryCsv(t, table.metric).c_str(), stdout);
    return 0;
  }
  std::fprintf(stderr, "cumulus: experiment %s has no trial %s (its trials: t0001 to t%04zu)\n",
               table.name.c_str(), text.c_str(), table.trials.size());
  return 1;
}

}  // namespace

int TrialsCommand(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(kTrialsHelp, stdout);
    return 0;
  }
  Flags flags({"address", "token-file", "plot", "width"}, {"json", "csv", "log-x", "help"});
  std::vector<std::string> positional;
  Status st = flags.Parse(args, &positional);
  if (!st.ok()) return UsageError(st.message(), "cumulus trials --help");
  if (positional.size() > 2) {
    return UsageError("trials takes at most an experiment and a trial, got '" + positional[2] + "'",
                      "cumulus trials --help");
  }
  if (flags.Has("help")) {
    std::fputs(kTrialsHelp, stdout);
    return 0;
  }
  if (flags.Has("json") && flags.Has("csv")) {
    return UsageError("--json and --csv cannot go together", "cumulus trials --help");
  }
  if (flags.Has("plot") && positional.size() != 1) {
    return UsageError(positional.empty() ? "--plot draws one experiment: give its name"
                                         : "--plot draws a whole experiment: leave out TRIAL",
                      "cumulus trials --help");
  }
  if (flags.Has("plot")) {
    std::string plot = flags.Get("plot");
    if (plot.size() < 5 || plot.compare(plot.size() - 4, 4, ".svg") != 0) {
      return UsageError("--plot writes an SVG picture: name it FILE.svg, got '" + plot + "'",
                        "cumulus trials --help");
    }
  }
  if (flags.Has("log-x") && !flags.Has("plot"))
    return UsageError("--log-x is for --plot", "cumulus trials --help");
  if (flags.Has("csv") && positional.empty()) {
    return UsageError("--csv is for one experiment or trial (the list has --json)",
                      "cumulus trials --help");
  }
  if (flags.Has("width")) {
    int w = std::atoi(flags.Get("width").c_str());
    if (w < 40 || w > 1000) {
      return UsageError("--width must be 40 to 1000 columns, got '" + flags.Get("width") + "'",
                        "cumulus trials --help");
    }
  }
  if (!positional.empty()) {
    if (auto name = tune::CheckExperimentName(positional[0]); !name.ok())
      return UsageError(name.message(), "cumulus trials --help");
  }
  auto head = ConnectHead(flags);
  if (!head.ok()) return Fail(head.status());
  if (positional.empty()) return ListExperiments(**head, flags);

  auto l = LoadExperiment(**head, positional[0]);
  if (!l.ok()) return Fail(l.status());
  auto cutoffs = tune::ReplayCutoffs(l->state.spec(), l->entries);
  auto table =
      l->state.ToTable(cutoffs.ok() ? *cutoffs : std::vector<std::pair<int64_t, double>>{});
  if (positional.size() == 2) return ShowTrial(table, positional[1], flags);
  if (flags.Has("plot")) {
    tune::PlotOptions po;
    po.log_x = flags.Has("log-x");
    std::string path = flags.Get("plot");
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << tune::PlotSvg(table, po);
    out.close();
    if (!out) {
      std::fprintf(stderr,
                   "cumulus: cannot write the plot to %s (check the directory exists and "
                   "is writable)\n",
                   path.c_str());
      return 1;
    }
  }
  if (flags.Has("json")) {
    std::printf("%s\n", tune::TrialsJson(table).c_str());
  } else if (flags.Has("csv")) {
    std::fputs(tune::TrialsCsv(table).c_str(), stdout);
  } else {
    std::fputs(tune::TrialsText(table, TerminalWidth(flags)).c_str(), stdout);
    if (flags.Has("plot")) std::printf("plot: %s\n", flags.Get("plot").c_str());
  }
  return 0;
}

}  // namespace cumulus::cli
