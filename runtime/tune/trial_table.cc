#include "runtime/tune/trial_table.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <set>

#include "cumulus/internal/json.h"

namespace cumulus::tune {

const char* TrialStateName(TrialState state) {
  switch (state) {
    case TrialState::kPending:
      return "PENDING";
    case TrialState::kRunning:
      return "RUNNING";
    case TrialState::kPaused:
      return "PAUSED";
    case TrialState::kStoppedEarly:
      return "STOPPED";
    case TrialState::kFinished:
      return "FINISHED";
    case TrialState::kFailed:
      return "FAILED";
  }
  return "UNKNOWN";
}

int64_t Iterations(const TrialRow& trial) {
  return trial.history.empty() ? 0 : trial.history.back().iteration;
}

std::optional<double> LastMetric(const TrialRow& trial, const std::string& metric) {
  for (auto it = trial.history.rbegin(); it != trial.history.rend(); ++it) {
    auto m = it->metrics.find(metric);
    if (m != it->metrics.end()) return m->second;
  }
  return std::nullopt;
}

std::optional<double> BestMetric(const TrialRow& trial, const std::string& metric, bool maximize) {
  std::optional<double> best;
  for (const TrialPoint& p : trial.history) {
    auto m = p.metrics.find(metric);
    if (m == p.metrics.end() || !std::isfinite(m->second)) continue;
    if (!best || (maximize ? m->second > *best : m->second < *best)) best = m->second;
  }
  return best;
}

const TrialRow* BestTrial(const ExperimentTable& table) {
  const TrialRow* best = nullptr;
  double best_value = 0;
  for (const TrialRow& t : table.trials) {
    std::optional<double> v = LastMetric(t, table.metric);
    if (!v || !std::isfinite(*v)) continue;
    bool better = best == nullptr || (table.maximize ? *v > best_value : *v < best_value) ||
                  (*v == best_value && t.id < best->id);
    if (better) {
      best = &t;
      best_value = *v;
    }
  }
  return best;
}

std::vector<std::string> ConfigKeys(const ExperimentTable& table) {
  std::set<std::string> keys;
  for (const TrialRow& t : table.trials)
    for (const auto& [k, v] : t.config.values()) keys.insert(k);
  return {keys.begin(), keys.end()};
}

std::string FormatNumber(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::array<char, 40> buf;
  auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), r.ptr);
}

std::string FormatConfigValue(const Value& v) {
  if (auto* d = std::get_if<double>(&v)) return FormatNumber(*d);
  return FormatValue(v);
}

namespace {

// ---- CSV -------------------------------------------------------------------------------------

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

void CsvLine(const std::vector<std::string>& fields, std::string* out) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) *out += ',';
    *out += CsvField(fields[i]);
  }
  *out += '\n';
}

std::string OptionalNumber(const std::optional<double>& v) {
  return v ? FormatNumber(*v) : std::string();
}

// ---- JSON ------------------------------------------------------------------------------------

std::string JsonNumber(double v) { return std::isfinite(v) ? FormatNumber(v) : "null"; }

std::string JsonNumber(const std::optional<double>& v) { return v ? JsonNumber(*v) : "null"; }

std::string JsonValue(const Value& v) {
  if (auto* d = std::get_if<double>(&v)) return JsonNumber(*d);
  if (auto* s = std::get_if<std::string>(&v)) return cumulus::internal::JsonQuote(*s);
  return FormatValue(v);  // bool, int64
}

std::string JsonConfig(const Config& config) {
  std::string out = "{";
  for (const auto& [k, v] : config.values()) {
    if (out.size() > 1) out += ", ";
    out += cumulus::internal::JsonQuote(k) + ": " + JsonValue(v);
  }
  return out + "}";
}

double LastSeconds(const TrialRow& t) { return t.history.empty() ? 0 : t.history.back().seconds; }

}  // namespace

std::string TrialsCsv(const ExperimentTable& table) {
  std::vector<std::string> keys = ConfigKeys(table);
  std::vector<std::string> header = {"id",      "state", "iterations", "last",  "best",
                                     "seconds", "node",  "restarts",   "reason"};
  for (const std::string& k : keys) header.push_back("config/" + k);
  std::string out;
  CsvLine(header, &out);
  for (const TrialRow& t : table.trials) {
    std::vector<std::string> row = {t.id,
                                    TrialStateName(t.state),
                                    std::to_string(Iterations(t)),
                                    OptionalNumber(LastMetric(t, table.metric)),
                                    OptionalNumber(BestMetric(t, table.metric, table.maximize)),
                                    FormatNumber(LastSeconds(t)),
                                    t.node,
                                    std::to_string(t.restarts),
                                    t.reason};
    for (const std::string& k : keys) {
      auto it = t.config.values().find(k);
      row.push_back(it == t.config.values().end() ? "" : FormatConfigValue(it->second));
    }
    CsvLine(row, &out);
  }
  return out;
}

std::string TrialsJson(const ExperimentTable& table) {
  using cumulus::internal::JsonQuote;
  const TrialRow* best = BestTrial(table);
  std::map<TrialState, int> counts;
  for (const TrialRow& t : table.trials) ++counts[t.state];

  std::string out =
      "{\"experiment\": " + JsonQuote(table.name) + ", \"metric\": " + JsonQuote(table.metric) +
      ", \"mode\": " + (table.maximize ? "\"max\"" : "\"min\"") +
      ", \"compute_seconds\": " + JsonNumber(table.compute_seconds) +
      ", \"best_trial\": " + (best ? JsonQuote(best->id) : "null") + ", \"counts\": {";
  const TrialState states[] = {TrialState::kPending,  TrialState::kRunning,
                               TrialState::kPaused,   TrialState::kStoppedEarly,
                               TrialState::kFinished, TrialState::kFailed};
  for (size_t i = 0; i < std::size(states); ++i) {
    if (i > 0) out += ", ";
    out += JsonQuote(TrialStateName(states[i])) + ": " + std::to_string(counts[states[i]]);
  }
  out += "}, \"cutoffs\": [";
  for (size_t i = 0; i < table.cutoffs.size(); ++i) {
    if (i > 0) out += ", ";
    out += "{\"iteration\": " + std::to_string(table.cutoffs[i].first) +
           ", \"value\": " + JsonNumber(table.cutoffs[i].second) + "}";
  }
  out += "], \"trials\": [";
  for (size_t i = 0; i < table.trials.size(); ++i) {
    const TrialRow& t = table.trials[i];
    if (i > 0) out += ", ";
    out += "{\"id\": " + JsonQuote(t.id) + ", \"state\": " + JsonQuote(TrialStateName(t.state)) +
           ", \"iterations\": " + std::to_string(Iterations(t)) +
           ", \"last\": " + JsonNumber(LastMetric(t, table.metric)) +
           ", \"best\": " + JsonNumber(BestMetric(t, table.metric, table.maximize)) +
           ", \"seconds\": " + JsonNumber(LastSeconds(t)) + ", \"node\": " + JsonQuote(t.node) +
           ", \"restarts\": " + std::to_string(t.restarts) +
           ", \"reason\": " + JsonQuote(t.reason) + ", \"config\": " + JsonConfig(t.config) + "}";
  }
  return out + "]}";
}

namespace {

// The metric columns of a history: `metric` first (if reported), then the other keys, sorted.
std::vector<std::string> HistoryKeys(const TrialRow& trial, const std::string& metric) {
  std::set<std::string> all;
  for (const TrialPoint& p : trial.history)
    for (const auto& [k, v] : p.metrics) all.insert(k);
  std::vector<std::string> keys;
  if (all.erase(metric) > 0) keys.push_back(metric);
  keys.insert(keys.end(), all.begin(), all.end());
  return keys;
}

}  // namespace

std::string HistoryCsv(const TrialRow& trial, const std::string& metric) {
  std::vector<std::string> keys = HistoryKeys(trial, metric);
  std::vector<std::string> header = {"iteration", "seconds"};
  for (const std::string& k : keys)
    header.push_back(k == "iteration" || k == "seconds" ? "metric/" + k : k);
  std::string out;
  CsvLine(header, &out);
  for (const TrialPoint& p : trial.history) {
    std::vector<std::string> row = {std::to_string(p.iteration), FormatNumber(p.seconds)};
    for (const std::string& k : keys) {
      auto it = p.metrics.find(k);
      row.push_back(it == p.metrics.end() ? "" : FormatNumber(it->second));
    }
    CsvLine(row, &out);
  }
  return out;
}

std::string HistoryJson(const TrialRow& trial, const std::string& metric) {
  using cumulus::internal::JsonQuote;
  std::string out = "{\"id\": " + JsonQuote(trial.id) +
                    ", \"state\": " + JsonQuote(TrialStateName(trial.state)) +
                    ", \"metric\": " + JsonQuote(metric) +
                    ", \"last\": " + JsonNumber(LastMetric(trial, metric)) +
                    ", \"config\": " + JsonConfig(trial.config) + ", \"history\": [";
  for (size_t i = 0; i < trial.history.size(); ++i) {
    const TrialPoint& p = trial.history[i];
    if (i > 0) out += ", ";
    out += "{\"iteration\": " + std::to_string(p.iteration) +
           ", \"seconds\": " + JsonNumber(p.seconds) + ", \"metrics\": {";
    bool first = true;
    for (const auto& [k, v] : p.metrics) {
      if (!first) out += ", ";
      first = false;
      out += JsonQuote(k) + ": " + JsonNumber(v);
    }
    out += "}}";
  }
  out += "]";
  if (!trial.exploits.empty()) {
    out += ", \"exploits\": [";
    for (size_t i = 0; i < trial.exploits.size(); ++i) {
      const TrialRow::Exploit& x = trial.exploits[i];
      out += std::string(i > 0 ? ", " : "") + "{\"iteration\": " + std::to_string(x.iteration) +
             ", \"from\": " + JsonQuote(x.from) + ", \"before\": " + JsonConfig(x.before) +
             ", \"after\": " + JsonConfig(x.after) + "}";
    }
    out += "]";
  }
  return out + "}";
}

}  // namespace cumulus::tune
