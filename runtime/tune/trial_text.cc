#include "runtime/tune/trial_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

namespace cumulus::tune {

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  char buf[40];
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  } else if (seconds < 3600) {
    auto s = static_cast<int64_t>(seconds);
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s / 60), static_cast<int>(s % 60));
  } else if (seconds < 86400) {
    auto m = static_cast<int64_t>(seconds / 60);
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(m / 60), static_cast<int>(m % 60));
  } else {
    auto h = static_cast<int64_t>(seconds / 3600);
    std::snprintf(buf, sizeof buf, "%lldd%02dh", static_cast<long long>(h / 24),
                  static_cast<int>(h % 24));
  }
  return buf;
}

namespace {

constexpr const char* kSep = "  ";
constexpr size_t kMaxConfigColumn = 12;
constexpr size_t kMaxNodeColumn = 12;

// Code points in a UTF-8 string (continuation bytes do not count).
size_t Columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Control characters (a reason's newlines, tabs) become spaces so one trial stays one line.
std::string OneLine(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return s;
}

// `s` cut to at most `width` columns, ending with '~' when cut.
std::string Fit(const std::string& s, size_t width) {
  if (Columns(s) <= width) return s;
  if (width == 0) return "";
  std::string out;
  size_t cols = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    bool starts = (c & 0xC0) != 0x80;
    if (starts && ++cols > width - 1) break;
    out += s[i];
  }
  return out + "~";
}

std::string Pad(const std::string& s, size_t width, bool right) {
  std::string f = Fit(s, width);
  std::string pad(width - Columns(f), ' ');
  return right ? pad + f : f + pad;
}

std::string Short(double v) {
  if (!std::isfinite(v)) return FormatNumber(v);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string ShortValue(const Value& v) {
  if (auto* d = std::get_if<double>(&v)) return Short(*d);
  return OneLine(FormatValue(v));
}

std::string Metric(const std::optional<double>& v) { return v ? Short(*v) : "-"; }

const TrialState kStateOrder[] = {TrialState::kRunning,  TrialState::kPending,
                                  TrialState::kPaused,   TrialState::kStoppedEarly,
                                  TrialState::kFinished, TrialState::kFailed};

std::string Counts(const std::map<TrialState, size_t>& counts) {
  std::string out;
  for (TrialState s : kStateOrder) {
    auto it = counts.find(s);
    if (it == counts.end() || it->second == 0) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(it->second) + " " + TrialStateName(s);
  }
  return out;
}

struct Column {
  std::string header;
  size_t width;
  bool right;
};

// The config keys whose value differs between trials (a missing key counts as a value), in name
// order; every key when there are fewer than two trials. A key with one value for every trial
// says nothing about a row: the best line shows it.
std::vector<std::string> VaryingKeys(const ExperimentTable& table) {
  std::vector<std::string> keys = ConfigKeys(table);
  if (table.trials.size() < 2) return keys;
  std::vector<std::string> varying;
  for (const std::string& k : keys) {
    std::set<std::string> seen;
    for (const TrialRow& t : table.trials) {
      auto it = t.config.values().find(k);
      seen.insert(it == t.config.values().end() ? "\x01missing" : FormatConfigValue(it->second));
    }
    if (seen.size() > 1) varying.push_back(k);
  }
  return varying;
}

// The indices of the trials to show, in table order (see TextOptions::max_rows).
std::vector<size_t> RowsToShow(const ExperimentTable& table, size_t max_rows,
                               const TrialRow* best) {
  size_t n = table.trials.size();
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = i;
  if (max_rows == 0 || n <= max_rows) return all;
  auto rank = [&](size_t i) {
    const TrialRow& t = table.trials[i];
    if (t.state == TrialState::kRunning || t.state == TrialState::kPaused) return 0;
    if (&t == best) return 1;
    if (t.state == TrialState::kPending || t.state == TrialState::kFailed) return 2;
    return 3;
  };
  auto value = [&](size_t i) {
    std::optional<double> v = LastMetric(table.trials[i], table.metric);
    if (!v || !std::isfinite(*v)) return -HUGE_VAL;
    return table.maximize ? *v : -*v;
  };
  std::stable_sort(all.begin(), all.end(), [&](size_t a, size_t b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    return rank(a) == 3 && value(a) > value(b);
  });
  all.resize(max_rows);
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace

std::string TrialsText(const ExperimentTable& table, size_t width) {
  TextOptions options;
  options.width = width;
  return TrialsText(table, options);
}

std::string TrialsText(const ExperimentTable& table, const TextOptions& options) {
  const size_t width = std::max<size_t>(options.width, 40);
  std::string out;
  auto line = [&](const std::string& s) {
    std::string l = Fit(s, width);
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };

  // Summary and best so far.
  std::map<TrialState, size_t> counts;
  for (const TrialRow& t : table.trials) ++counts[t.state];
  std::string summary = OneLine(table.name) + kSep + OneLine(table.metric) +
                        (table.maximize ? " (max)" : " (min)") + kSep + "compute " +
                        FormatDuration(table.compute_seconds) + kSep +
                        std::to_string(table.trials.size()) + " trials";
  if (!table.trials.empty()) summary += ": " + Counts(counts);
  line(summary);
  const TrialRow* best = BestTrial(table);
  if (best == nullptr) {
    line("best: none yet (no trial has reported " + OneLine(table.metric) + ")");
  } else {
    // The keys that differ between trials first: a one-value key (a data path) says little,
    // and the line is cut at the screen's width.
    std::vector<std::string> varying = VaryingKeys(table);
    std::string config;
    auto add = [&](const std::string& key, const Value& value) {
      config += (config.empty() ? "" : ", ") + key + "=" + ShortValue(value);
    };
    for (const std::string& k : varying) {
      auto it = best->config.values().find(k);
      if (it != best->config.values().end()) add(k, it->second);
    }
    for (auto& [key, value] : best->config.values()) {
      if (std::find(varying.begin(), varying.end(), key) == varying.end()) add(key, value);
    }
    line("best " + OneLine(best->id) + " " + OneLine(table.metric) + "=" +
         Short(*LastMetric(*best, table.metric)) + " at iteration " +
         std::to_string(Iterations(*best)) + " {" + OneLine(config) + "}");
  }
  if (table.trials.empty()) return out;

  // Fixed columns.
  std::vector<size_t> rows = RowsToShow(table, options.max_rows, best);
  size_t id_w = 5, iter_w = 4, node_w = 4, metric_w = 4;
  for (size_t i : rows) {
    const TrialRow& t = table.trials[i];
    metric_w = std::max({metric_w, Metric(LastMetric(t, table.metric)).size(),
                         Metric(BestMetric(t, table.metric, table.maximize)).size()});
  }
  bool any_restarts = false, any_reason = false;
  for (const TrialRow& t : table.trials) {
    id_w = std::max(id_w, Columns(t.id));
    iter_w = std::max(iter_w, std::to_string(Iterations(t)).size());
    node_w = std::max(node_w, std::min(kMaxNodeColumn, Columns(t.node)));
    any_restarts |= t.restarts > 0;
    any_reason |= !t.reason.empty();
  }
  std::vector<Column> cols = {{"trial", id_w, false},   {"state", 8, false},
                              {"iter", iter_w, true},   {"last", metric_w, true},
                              {"best", metric_w, true}, {"node", node_w, false}};
  if (any_restarts) cols.push_back({"restarts", 8, true});
  size_t used = 0;
  for (const Column& c : cols) used += c.width + (used ? 2 : 0);

  // Config columns, as many as fit.
  std::vector<std::string> keys = VaryingKeys(table);
  size_t shown = 0;
  for (const std::string& k : keys) {
    size_t vw = 1;
    for (const TrialRow& t : table.trials) {
      auto it = t.config.values().find(k);
      if (it != t.config.values().end()) vw = std::max(vw, Columns(ShortValue(it->second)));
    }
    size_t w = std::min(kMaxConfigColumn, std::max(vw, std::min(Columns(k), size_t{8})));
    // Leave room for the "+N" note when more keys follow.
    size_t note = shown + 1 < keys.size() ? 2 + 4 : 0;
    if (used + 2 + w + note > width) break;
    cols.push_back({k, w, true});
    used += 2 + w;
    ++shown;
  }
  std::string hidden;
  if (shown < keys.size()) hidden = "+" + std::to_string(keys.size() - shown);
  const size_t reason_w =
      any_reason && hidden.empty() && used + 2 + 10 <= width ? width - used - 2 : 0;

  std::string header;
  for (const Column& c : cols)
    header += (header.empty() ? "" : kSep) + Pad(c.header, c.width, c.right);
  if (!hidden.empty()) header += std::string(kSep) + hidden;
  if (reason_w > 0) header += std::string(kSep) + "reason";
  line(header);

  const size_t fixed = any_restarts ? 7 : 6;
  for (size_t i : rows) {
    const TrialRow& t = table.trials[i];
    std::vector<std::string> cells = {OneLine(t.id),
                                      TrialStateName(t.state),
                                      std::to_string(Iterations(t)),
                                      Metric(LastMetric(t, table.metric)),
                                      Metric(BestMetric(t, table.metric, table.maximize)),
                                      t.node.empty() ? "-" : OneLine(t.node)};
    if (any_restarts) cells.push_back(std::to_string(t.restarts));
    for (size_t c = fixed; c < cols.size(); ++c) {
      auto it = t.config.values().find(cols[c].header);
      cells.push_back(it == t.config.values().end() ? "-" : ShortValue(it->second));
    }
    std::string l;
    for (size_t c = 0; c < cols.size(); ++c)
      l += (c ? kSep : "") + Pad(cells[c], cols[c].width, cols[c].right);
    if (reason_w > 0 && !t.reason.empty()) l += kSep + Fit(OneLine(t.reason), reason_w);
    line(l);
  }
  if (rows.size() < table.trials.size()) {
    std::map<TrialState, size_t> rest = counts;
    for (size_t i : rows) --rest[table.trials[i].state];
    line("... " + std::to_string(table.trials.size() - rows.size()) + " more trials not shown (" +
         Counts(rest) + ")");
  }
  return out;
}

}  // namespace cumulus::tune
