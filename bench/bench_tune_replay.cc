// bench_tune_replay: recorded learning curves replayed through the tuner's real searcher and trial
// schedulers (scheduler/tune/) with a simulated clock, to compare how much compute each scheduler
// saves against full random search and what it loses in the best result found.
//
//   build/bin/bench_tune_replay --curves FILE [--mode max|min] [--cost COLUMN] [--workers W]
//                               [--samples N] [--seeds S] [--json]
//
// FILE: any CSV with a header whose curve columns are named acc_N or ep_N (N = 0 or 1 upwards: the
// metric after epoch N, in order of N; each column counts as one iteration, acc_0 too); other
// columns are ignored unless named by --cost. A row is one config;
// an empty or "nan" cell ends that row's curve early; cells past the header's last column are
// not read (the summary line counts such rows). Per seed, the random searcher draws N rows
// (with replacement: SearchSpace::RandInt over the rows), W trials run at once, one epoch of a row
// costs 1 (or its --cost column) in simulated time and compute. A trial's result is its last
// reported value; an experiment's result is its best trial's.
//
// Anchor: full search (every trial to the last epoch, the fifo scheduler) in the same run: each
// row's compute is a fraction of full search's, and its best is compared with full search's best
// (in points, x100, for a max metric in [0, 1]; in percent for min). Medians over seeds. The
// target for the default scheduler: within 0.5 points (min: 0.5 %) at <= 25 % of the compute.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <sstream>
#include <string>
#include <vector>

#include "scheduler/tune/budget_promotion.h"
#include "scheduler/tune/searcher.h"
#include "scheduler/tune/trial_scheduler.h"

using namespace cumulus;
using namespace cumulus::tune;

namespace {

struct Options {
  std::string curves;
  Mode mode = Mode::kMax;
  std::string cost_column;
  uint64_t workers = 8;
  uint64_t samples = 200;
  uint64_t seeds = 20;  // medians of 5 or 7 seeds flipped with one seed (docs/tune_replay.md)
  bool json = false;
  bool time_fit = false;
};

struct CurveSet {
  std::vector<std::vector<double>> curves;  // per row, the metric after epochs 1..len
  std::vector<double> cost;                 // per row, the cost of one epoch
  size_t max_t = 0;
  size_t skipped_rows = 0;  // rows with no value at epoch 1
  size_t long_rows = 0;     // rows with more cells than the header (the extra ones are not read)
  bool unit_range = true;   // every value in [0, 1]
};

[[noreturn]] void Fail(const std::string& line) {
  std::fprintf(stderr, "bench_tune_replay: %s\n", line.c_str());
  std::exit(2);
}

// One CSV record (RFC 4180: quoted fields, "" inside quotes), which may span lines.
bool ReadRecord(std::istream& in, std::vector<std::string>* fields, size_t* line_no) {
  fields->clear();
  std::string line;
  if (!std::getline(in, line)) return false;
  ++*line_no;
  std::string field;
  bool quoted = false;
  for (size_t i = 0;; ++i) {
    if (i == line.size()) {
      if (quoted) {
        field += '\n';
        if (!std::getline(in, line)) break;
        ++*line_no;
        i = static_cast<size_t>(-1);
        continue;
      }
      break;
    }
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields->push_back(field);
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  fields->push_back(field);
  return true;
}

std::optional<double> ParseCell(const std::string& s, bool* empty) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  *empty = b == std::string::npos;
  if (*empty) return std::nullopt;
  std::string t = s.substr(b, e - b + 1);
  if (t == "nan" || t == "NaN" || t == "NA" || t == "null") {
    *empty = true;
    return std::nullopt;
  }
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  return v;
}

CurveSet LoadCurves(const Options& o) {
  std::error_code ec;
  if (std::filesystem::is_directory(o.curves, ec))
    Fail("--curves " + o.curves + " is a directory: give one curve file (CSV) in it");
  std::ifstream in(o.curves);
  if (!in) Fail("cannot open --curves " + o.curves + ": " + std::strerror(errno));
  std::vector<std::string> header, row;
  size_t line_no = 0;
  if (!ReadRecord(in, &header, &line_no)) Fail(o.curves + " is empty: it needs a header line");
  std::vector<std::pair<size_t, size_t>> epoch_cols;  // (epoch N, column)
  std::optional<size_t> cost_col;
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string& h = header[i];
    for (const char* prefix : {"acc_", "ep_"}) {
      size_t n = std::strlen(prefix);
      if (h.size() > n && h.compare(0, n, prefix) == 0 &&
          h.find_first_not_of("0123456789", n) == std::string::npos)
        epoch_cols.emplace_back(std::stoul(h.substr(n)), i);
    }
    if (!o.cost_column.empty() && h == o.cost_column) cost_col = i;
  }
  if (epoch_cols.empty())
    Fail(o.curves + ": no curve columns (named acc_N or ep_N, N = 0 or 1 upwards) in its header");
  if (!o.cost_column.empty() && !cost_col)
    Fail(o.curves + ": --cost column \"" + o.cost_column + "\" is not in its header");
  std::sort(epoch_cols.begin(), epoch_cols.end());
  for (size_t k = 1; k < epoch_cols.size(); ++k)
    if (epoch_cols[k].first == epoch_cols[k - 1].first)
      Fail(o.curves + ": epoch " + std::to_string(epoch_cols[k].first) + " has two columns");
  CurveSet set;
  set.max_t = epoch_cols.size();
  while (ReadRecord(in, &row, &line_no)) {
    if (row.size() == 1 && row[0].empty()) continue;  // a blank line
    if (row.size() > header.size()) ++set.long_rows;
    std::vector<double> curve;
    for (const auto& [n, col] : epoch_cols) {
      bool empty = false;
      std::optional<double> v = col < row.size() ? ParseCell(row[col], &empty) : std::nullopt;
      if (col >= row.size()) empty = true;
      if (empty) break;
      if (!v)
        Fail(o.curves + ":" + std::to_string(line_no) + ": column " + header[col] + " holds \"" +
             row[col] + "\", not a finite number");
      curve.push_back(*v);
      if (*v < 0 || *v > 1) set.unit_range = false;
    }
    if (curve.empty()) {
      ++set.skipped_rows;
      continue;
    }
    double cost = 1;
    if (cost_col) {
      bool empty = false;
      std::optional<double> c =
          *cost_col < row.size() ? ParseCell(row[*cost_col], &empty) : std::nullopt;
      if (!c || !(*c > 0))
        Fail(o.curves + ":" + std::to_string(line_no) + ": --cost column " + o.cost_column +
             " must hold a number above 0 on every row");
      cost = *c;
    }
    set.curves.push_back(std::move(curve));
    set.cost.push_back(cost);
  }
  if (set.curves.empty()) Fail(o.curves + ": no row has a value in its first curve column");
  return set;
}

struct RunResult {
  double best = 0;     // the best trial's last value, in the metric's own units
  double compute = 0;  // epochs run x their cost
  uint64_t stopped = 0;
  double wall = 0;  // the simulated time when the last trial ended (epochs x cost, W at once)
};

// One experiment: `samples` rows from the random searcher, `workers` at once, `sched` deciding.
RunResult Simulate(const CurveSet& set, const Options& o, uint64_t seed, SchedulerOptions so) {
  SearchSpace space;
  space.RandInt("row", 0, static_cast<int64_t>(set.curves.size()));
  SearcherOptions search;
  search.seed = seed;
  search.num_samples = o.samples;
  auto searcher = MakeSearcher(space, search);
  if (!searcher.ok()) Fail(searcher.status().ToString());
  so.mode = o.mode;
  so.max_t = static_cast<int64_t>(set.max_t);
  so.seed = seed;
  auto scheduler = MakeTrialScheduler(so);
  if (!scheduler.ok()) Fail(scheduler.status().ToString());

  struct Trial {
    size_t row;
    size_t epoch = 0;  // epochs reported so far
  };
  std::map<TrialId, Trial> trials;  // started and not ended
  size_t running = 0;
  // (time, sequence, trial): the trial finishes its next epoch at `time`.
  using Event = std::tuple<double, uint64_t, TrialId>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  uint64_t seq = 0;
  TrialId next_id = 1;
  RunResult out;
  bool have_best = false;
  auto better = [&](double a, double b) { return o.mode == Mode::kMax ? a > b : a < b; };
  auto end_trial = [&](TrialId id, bool completed) {
    const Trial& t = trials.at(id);
    double value = set.curves[t.row][t.epoch - 1];
    if (!have_best || better(value, out.best)) out.best = value, have_best = true;
    if (!completed) ++out.stopped;
    (*scheduler)->OnTrialEnd(id, completed);
    (*searcher)->OnTrialEnd(id, o.mode == Mode::kMax ? value : -value,
                            static_cast<int64_t>(t.epoch));
    trials.erase(id);
  };
  // Fills free slots: a paused trial the scheduler names, else a new trial.
  auto fill = [&](double now) {
    while (running < o.workers) {
      bool can_start_new = next_id <= o.samples;
      TrialScheduler::NextRun next = (*scheduler)->ChooseTrialToRun(can_start_new);
      for (const auto& [id, why] : next.stop) end_trial(id, false);
      if (next.resume) {
        ++running;
        events.emplace(now + set.cost[trials.at(*next.resume).row], seq++, *next.resume);
        continue;
      }
      if (!can_start_new) break;
      auto c = (*searcher)->Suggest(next_id);
      if (!c.ok()) Fail(c.status().ToString());
      if (!c->has_value()) Fail("the random searcher ended before --samples trials");
      auto row = static_cast<size_t>((*c)->Get<int64_t>("row"));
      TrialId id = next_id++;
      (*scheduler)->OnTrialAdd(id, **c);
      trials[id] = Trial{row};
      ++running;
      events.emplace(now + set.cost[row], seq++, id);
    }
  };
  fill(0);
  while (!events.empty()) {
    auto [now, _, id] = events.top();
    events.pop();
    out.wall = now;
    Trial& t = trials.at(id);
    const std::vector<double>& curve = set.curves[t.row];
    double value = curve[t.epoch];
    ++t.epoch;
    out.compute += set.cost[t.row];
    Decision d = (*scheduler)->OnReport(TrialReport{id, static_cast<int64_t>(t.epoch), value});
    bool done = t.epoch == curve.size();
    if (done || d.action == Action::kStop) {
      --running;
      end_trial(id, done);
      fill(now);
    } else if (d.action == Action::kPause) {
      --running;
      fill(now);
    } else {
      events.emplace(now + set.cost[t.row], seq++, id);
    }
  }
  // Trials still paused when nothing runs: the scheduler let them wait for ever. Count them
  // as ended where they are (a scheduler that strands trials shows it in its results).
  while (!trials.empty()) end_trial(trials.begin()->first, false);
  return out;
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 50); }

// The cost of one fit (Extrapolate) of n reports of a noisy saturating curve: the median of 5
// timings of 2,000 fits each, in microseconds; 258 is the most a trial keeps (CurveHistory).
int TimeFit() {
  std::printf("reproduce: build/bin/bench_tune_replay --time-fit\n");
  std::printf("%8s %14s\n", "reports", "us per fit");
  for (int n : {3, 12, 48, 258}) {
    std::vector<std::pair<int64_t, double>> r;
    for (int t = 1; t <= n; ++t)
      r.emplace_back(t, 0.9 - 0.6 * std::exp(-t / 20.0) + 0.01 * std::sin(t * 7.0));
    std::vector<double> us;
    volatile double sink = 0;  // the fits are not optimised away
    for (int run = 0; run < 5; ++run) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 2000; ++i) sink = sink + Extrapolate(r, 1000);
      us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
          2000);
    }
    std::printf("%8d %14.1f\n", n, Median(us));
  }
  return 0;
}

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: bench_tune_replay --curves FILE [--mode max|min] [--cost COLUMN]\n"
               "                         [--workers W] [--samples N] [--seeds S] [--json]\n"
               "       bench_tune_replay --time-fit\n"
               "  --curves FILE   CSV with curve columns acc_N or ep_N (N = 0 or 1 upwards);\n"
               "                  an empty or nan cell ends a row's curve; cells past the\n"
               "                  header's last column are not read (the summary counts them)\n"
               "  --mode          max (default) or min: whether a larger metric is better (a\n"
               "                  warning on stderr when over 4 in 5 curves go the other way)\n"
               "  --cost COLUMN   one epoch of a row costs that column's value (default 1)\n"
               "  --workers W     trials run at once (default 8)\n"
               "  --samples N     trials per experiment, rows drawn at random (default 200)\n"
               "  --seeds S       experiments per scheduler; medians are printed (default 20)\n"
               "  --json          {\"rows\": [{\"name\", \"best\", \"compute_fraction\", ...,\n"
               "                  \"mean_gap\", \"within\" (share of seeds with gap <= 0.5)}], "
               "\"default\": NAME}\n"
               "  --time-fit      only time the default score's fit (budget_score fit) of 3 to\n"
               "                  258 reports: what each rung a trial reaches costs the tuner\n");
}

uint64_t ParseCount(const char* flag, const char* text, uint64_t max) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (*text == '\0' || *end != '\0' || errno != 0 || v < 1 || static_cast<uint64_t>(v) > max)
    Fail(std::string(flag) + " takes a whole number from 1 to " + std::to_string(max) + ", not \"" +
         text + "\"");
  return static_cast<uint64_t>(v);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) Fail(a + " needs a value (see --help)");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      Usage(stdout);
      return 0;
    } else if (a == "--curves") {
      o.curves = value();
    } else if (a == "--mode") {
      auto m = ParseMode(value());
      if (!m.ok()) Fail(m.status().message());
      o.mode = *m;
    } else if (a == "--cost") {
      o.cost_column = value();
    } else if (a == "--workers") {
      o.workers = ParseCount("--workers", value(), 100000);
    } else if (a == "--samples") {
      o.samples = ParseCount("--samples", value(), 10000000);
    } else if (a == "--seeds") {
      o.seeds = ParseCount("--seeds", value(), 1000);
    } else if (a == "--time-fit") {
      o.time_fit = true;
    } else if (a == "--json") {
      o.json = true;
    } else {
      Fail("unknown argument \"" + a + "\" (see --help)");
    }
  }
  if (o.time_fit) return TimeFit();
  if (o.curves.empty()) Fail("--curves FILE is required (see --help)");
  CurveSet set = LoadCurves(o);
  // A mode that fights the curves (accuracy replayed with --mode min, a loss with max) makes every
  // scheduler look better than full search (a trial stopped early "wins"): say so, once.
  {
    size_t rising = 0, moving = 0;
    for (const auto& c : set.curves) {
      if (c.size() < 2 || c.back() == c.front()) continue;
      ++moving;
      rising += c.back() > c.front();
    }
    bool up = o.mode == Mode::kMin && rising * 5 > moving * 4;
    bool down = o.mode == Mode::kMax && (moving - rising) * 5 > moving * 4;
    if (up || down) {
      std::fprintf(stderr,
                   "bench_tune_replay: warning: %zu of %zu curves %s from first to last epoch, "
                   "yet --mode is %s: %s\n",
                   up ? rising : moving - rising, moving, up ? "rise" : "fall",
                   std::string(ModeName(o.mode)).c_str(),
                   up ? "an accuracy wants --mode max" : "a loss wants --mode min");
    }
  }

  struct Row {
    std::string name;
    SchedulerOptions so;
    std::string what;
  };
  std::vector<Row> rows;
  auto add = [&](std::string name, SchedulerKind kind, std::string what,
                 void (*tweak)(SchedulerOptions&) = nullptr) {
    Row r{std::move(name), SchedulerOptions{}, std::move(what)};
    r.so.kind = kind;
    if (tweak) tweak(r.so);
    rows.push_back(std::move(r));
  };
  add("full", SchedulerKind::kFifo, "random search, every trial to the end (the anchor)");
  add("asha-ray", SchedulerKind::kAsha, "ASHA with Ray Tune's defaults: grace 1, rf 4, 1 bracket");
  add("asha-rf2", SchedulerKind::kAsha, "ASHA, grace 1, rf 2",
      [](SchedulerOptions& s) { s.reduction_factor = 2; });
  add("hyperband", SchedulerKind::kHyperBand,
      "asynchronous HyperBand: grace 1, rf 4, all brackets");
  add("median", SchedulerKind::kMedian, "median stopping: grace 1, 3 samples");
  add("bound", SchedulerKind::kBound, "promotion, pause, stop below the largest gain seen");
  add("bound-pred", SchedulerKind::kBound,
      "bound with the prefix model's reach (bound_predict): fit on finished curves",
      [](SchedulerOptions& s) { s.bound_predict = true; });
  add("budget", SchedulerKind::kBudget,
      "ours (the default): 0.24 of full's iterations; a 10 % prefix, promotion (rf 2), then the "
      "rest on the paused trials nearest the leaders (smallest share of their rung ahead), "
      "trials ranked at a rung by their curve extrapolated to max_t; a trial waits at a rung for "
      "those on their way there unless it is in the top 1/2 whatever they report, and the budget "
      "keeps what takes the leader to max_t");
  add("budget-eager", SchedulerKind::kBudget,
      "budget judging a trial at a rung on what has reported so far, with nothing kept for the "
      "leader (budget_eager): the default before 2026-12-07, later that day",
      [](SchedulerOptions& s) { s.budget_eager = true; });
  add("budget-line", SchedulerKind::kBudget,
      "budget ranking a trial at a rung by a least-squares line through its reports since the "
      "previous rung (budget_score line, window 1), not its last value",
      [](SchedulerOptions& s) {
        s.budget_score = BudgetScore::kLine;
        s.budget_score_window = 1;
      });
  add("budget-last", SchedulerKind::kBudget,
      "budget ranking a trial at a rung by the value it reported there (budget_score last), not "
      "its curve extrapolated to max_t, with a 5 % prefix: the default before 2026-12-06",
      [](SchedulerOptions& s) {
        s.budget_score = BudgetScore::kLast;
        s.budget_min_prefix = 0.05;
        s.budget_eager = true;
      });
  add("budget-p05", SchedulerKind::kBudget,
      "budget with a 5 % prefix (budget_min_prefix 0.05), eager: the default before 2026-12-07",
      [](SchedulerOptions& s) {
        s.budget_min_prefix = 0.05;
        s.budget_eager = true;
      });
  const std::string kDefault = "budget";

  std::vector<std::vector<RunResult>> results(rows.size());
  for (uint64_t s = 0; s < o.seeds; ++s)
    for (size_t k = 0; k < rows.size(); ++k)
      results[k].push_back(Simulate(set, o, s + 1, rows[k].so));

  bool points = o.mode == Mode::kMax && set.unit_range;
  auto gap = [&](double full, double best) {
    if (o.mode == Mode::kMax) return (full - best) * (points ? 100 : 1);
    return full == 0 ? best - full : (best - full) / std::fabs(full) * 100;
  };
  struct Summary {
    double best, fraction, gap, worst_gap, worst_fraction, stopped;
    double wall;              // the median of the run's wall time / full's (same seed)
    double mean_gap, within;  // the mean gap; the share of seeds with a gap <= 0.5
  };
  std::vector<Summary> sum;
  for (size_t k = 0; k < rows.size(); ++k) {
    std::vector<double> best, frac, gaps, stopped, wall;
    for (uint64_t s = 0; s < o.seeds; ++s) {
      best.push_back(results[k][s].best);
      frac.push_back(results[k][s].compute / results[0][s].compute);
      gaps.push_back(gap(results[0][s].best, results[k][s].best));
      stopped.push_back(static_cast<double>(results[k][s].stopped));
      wall.push_back(results[k][s].wall / results[0][s].wall);
    }
    double mean = 0, within = 0;
    for (double g : gaps) {
      mean += g / static_cast<double>(gaps.size());
      within += (g <= 0.5 ? 1.0 : 0.0) / static_cast<double>(gaps.size());
    }
    sum.push_back(Summary{
        Median(best), Median(frac), Median(gaps), *std::max_element(gaps.begin(), gaps.end()),
        *std::max_element(frac.begin(), frac.end()), Median(stopped), Median(wall), mean, within});
  }

  std::string reproduce = "build/bin/bench_tune_replay --curves " + o.curves + " --mode " +
                          std::string(ModeName(o.mode)) +
                          (o.cost_column.empty() ? "" : " --cost " + o.cost_column) +
                          " --workers " + std::to_string(o.workers) + " --samples " +
                          std::to_string(o.samples) + " --seeds " + std::to_string(o.seeds);
  size_t def = 0;
  for (size_t k = 0; k < rows.size(); ++k)
    if (rows[k].name == kDefault) def = k;
  bool target = sum[def].gap <= 0.5 && sum[def].fraction <= 0.25;
  if (o.json) {
    std::printf("{\"rows\": [");
    for (size_t k = 0; k < rows.size(); ++k)
      std::printf(
          "%s{\"name\": \"%s\", \"best\": %.6g, \"compute_fraction\": %.4f, "
          "\"gap\": %.4f, \"worst_gap\": %.4f, \"worst_compute_fraction\": %.4f, "
          "\"stopped\": %.1f, \"wall_fraction\": %.4f, \"mean_gap\": %.4f, \"within\": %.4f}",
          k ? ", " : "", rows[k].name.c_str(), sum[k].best, sum[k].fraction, sum[k].gap,
          sum[k].worst_gap, sum[k].worst_fraction, sum[k].stopped, sum[k].wall, sum[k].mean_gap,
          sum[k].within);
    std::printf("], \"default\": \"%s\", \"target_met\": %s, \"reproduce\": \"%s\"}\n",
                kDefault.c_str(), target ? "true" : "false", reproduce.c_str());
    return 0;
  }
  std::printf("reproduce: %s\n", reproduce.c_str());
  std::printf(
      "curves: %s: %zu rows, %zu epochs%s%s%s; %llu trials x %llu seeds, %llu workers, "
      "mode %s\n",
      o.curves.c_str(), set.curves.size(), set.max_t,
      set.skipped_rows
          ? (", " + std::to_string(set.skipped_rows) + " rows without values skipped").c_str()
          : "",
      set.long_rows ? (", " + std::to_string(set.long_rows) +
                       " rows with more cells than the header (the cells past it not read)")
                          .c_str()
                    : "",
      o.cost_column.empty() ? ", cost 1 per epoch" : (", cost per epoch: " + o.cost_column).c_str(),
      static_cast<unsigned long long>(o.samples), static_cast<unsigned long long>(o.seeds),
      static_cast<unsigned long long>(o.workers), std::string(ModeName(o.mode)).c_str());
  std::printf(
      "anchor: full search in the same run; gap = full's best - this best, in %s "
      "(medians over seeds; worst seed in brackets); wall: the simulated time until the last "
      "trial ended, over full's (workers idle while trials wait count)\n\n",
      points ? "points (x100)" : (o.mode == Mode::kMax ? "metric units" : "% of full's"));
  std::printf("%-11s %10s %14s %20s %6s %10s  %s\n", "scheduler", "best", "gap (worst)",
              "compute (worst)", "wall", "stopped", "what");
  for (size_t k = 0; k < rows.size(); ++k)
    std::printf("%-11s %10.4f %6.2f (%5.2f) %11.3f (%5.3f) %6.3f %10.0f  %s\n",
                rows[k].name.c_str(), sum[k].best, sum[k].gap, sum[k].worst_gap, sum[k].fraction,
                sum[k].worst_fraction, sum[k].wall, sum[k].stopped, rows[k].what.c_str());
  std::printf(
      "\ndefault (%s): gap %.2f %s, compute %.3f of full search: target (gap <= 0.5, "
      "compute <= 0.25) %s\n",
      kDefault.c_str(), sum[def].gap, points ? "points" : (o.mode == Mode::kMax ? "units" : "%"),
      sum[def].fraction, target ? "MET" : "NOT MET");
  return 0;
}
