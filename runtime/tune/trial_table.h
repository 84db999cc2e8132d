// A tuning experiment's trials as the tuner and `cumulus trials` present them: the plain values
// (ExperimentTable) and their exports (CSV, JSON), plus which trial is best. Pure functions of
// their arguments: no I/O, no clock, safe to call from any thread on a table nobody mutates.
//
// The text table is in trial_text.h, the learning-curve picture in curve_plot.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cumulus/tune.h"  // TrialState and TrialStateName
#include "cumulus/tune_space.h"

namespace cumulus::tune {

// One report of a trial.
struct TrialPoint {
  int64_t iteration = 0;                  // 1 for the first report, then 2, 3, ...
  std::map<std::string, double> metrics;  // every metric the trial reported (may be non-finite)
  double seconds = 0;                     // the trial's running time up to this report, in
                                          // seconds (cumulative, Ray's time_total_s)
};

struct TrialRow {
  std::string id;  // "t0007"
  Config config;
  TrialState state = TrialState::kPending;
  std::string reason;               // why stopped / the error of a failed trial / what it waits for
  std::string node;                 // where it runs or ran last (node id hex or host)
  int restarts = 0;                 // times resumed after its node died
  std::vector<TrialPoint> history;  // every report, in order
  // PBT: each exploit, in order: at which of its iterations it took trial `from`'s checkpoint
  // ("t0005") and config (`before` -> `after`). It goes on counting its own iterations.
  struct Exploit {
    int64_t iteration = 0;
    std::string from;
    Config before, after;
  };
  std::vector<Exploit> exploits;
};

struct ExperimentTable {
  std::string name, metric;
  bool maximize = true;
  std::vector<TrialRow> trials;
  // Rung cut-offs the scheduler used (may be empty): iteration -> cut-off value at that rung.
  // An iteration may appear more than once (one entry per bracket).
  std::vector<std::pair<int64_t, double>> cutoffs;
  double compute_seconds = 0;  // trial-seconds used so far
};

// ---- one trial's figures ---------------------------------------------------------------------

// The iteration of the trial's last report; 0 before its first.
int64_t Iterations(const TrialRow& trial);
// The value of `metric` in the last report that has it (finite or not); nullopt if none has.
std::optional<double> LastMetric(const TrialRow& trial, const std::string& metric);
// The best finite value of `metric` over the whole history (largest if `maximize`, else
// smallest); nullopt if no report has a finite value.
std::optional<double> BestMetric(const TrialRow& trial, const std::string& metric, bool maximize);

// The best trial of the experiment, or nullptr if no trial has a finite last value of the metric.
// As Ray Tune's default (ResultGrid::get_best_result, scope="last", NaN/inf filtered): trials are
// compared by the LAST reported value of the metric, largest if `maximize` else smallest, so a
// trial that peaked and then degraded does not win on its peak. Every state counts (a failed or
// stopped trial keeps its last result). Ties go to the smallest id (string order).
const TrialRow* BestTrial(const ExperimentTable& table);

// The union of the config keys of all trials, sorted.
std::vector<std::string> ConfigKeys(const ExperimentTable& table);

// ---- exports ---------------------------------------------------------------------------------

// One row per trial, in table order. Columns:
//   id, state, iterations, last, best, seconds, node, restarts, reason, config/KEY ...
// `last` and `best` are the experiment's metric (best mode-aware), `seconds` the trial's running
// time at its last report; one config/KEY column per key of any trial (sorted; empty where a
// trial lacks the key). Fields are quoted per RFC 4180 when they hold a comma, quote, CR or LF.
// Missing numbers are empty fields; non-finite ones are written nan, inf, -inf.
std::string TrialsCsv(const ExperimentTable& table);

// {"experiment": NAME, "metric": M, "mode": "max"|"min", "compute_seconds": S,
//  "best_trial": ID|null, "counts": {"PENDING": n, ...},
//  "cutoffs": [{"iteration": I, "value": V}, ...],
//  "trials": [{"id", "state", "iterations", "last", "best", "seconds", "node", "restarts",
//              "reason", "config": {KEY: VALUE, ...}}, ...]}
// Missing or non-finite numbers are null; config values keep their type (bool, int, double,
// string).
std::string TrialsJson(const ExperimentTable& table);

// One row per report of `trial`: iteration, seconds, then `metric` (if any report has it), then
// every other metric key of any report, sorted. Empty fields where a report lacks a key. A metric
// named "iteration" or "seconds" is written as metric/iteration, metric/seconds.
std::string HistoryCsv(const TrialRow& trial, const std::string& metric);

// {"id": ID, "state": S, "metric": M, "last": V|null, "config": {...},
//  "history": [{"iteration": I, "seconds": S, "metrics": {KEY: V|null, ...}}, ...]}
// `last` is LastMetric(trial, metric), null if none or non-finite. A row carries no mode, so no
// "best" is written here (TrialsJson has it).
std::string HistoryJson(const TrialRow& trial, const std::string& metric);

// ---- value formatting shared by the exports, the text table and the plot -------------------

// The shortest text that reads back as the same double ("0.1", "1e-05", "nan", "inf", "-inf").
std::string FormatNumber(double v);
// A config value for export: doubles by FormatNumber, others as FormatValue.
std::string FormatConfigValue(const Value& v);

}  // namespace cumulus::tune
