// The tuner's progress view: a table redrawn in place on a terminal, plain lines otherwise, and
// optionally the lines appended to a file; see TunerOptions::progress.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/tune/trial_text.h"
#include "runtime/tune/tuner_impl.h"

namespace cumulus::tune {

namespace {
// A trial whose actors are not up this long after it started is shown as waiting to be placed
// (an actor's worker starts in well under this on an idle node).
constexpr auto kNotPlacedAfter = std::chrono::seconds(2);
// Plain lines: one when a count, the best or the trials not placed change; else one this often,
// so that a long quiet stretch still shows the run is alive. Not one per progress_interval: the
// time and compute in each line change every time.
constexpr auto kQuietLineEvery = std::chrono::seconds(30);
}  // namespace

void Tuner::Impl::Progress(bool final) {
  if (progress_options_.progress == "off") return;
  auto now = Clock::now();
  if (!final && now - last_progress_ < progress_options_.progress_interval) return;
  last_progress_ = now;
  ExperimentTable trials = state_.ToTable(ReplayableCutoffs());
  // Trials started a while ago whose actors are not placed yet (most often: waiting for
  // resources): say so. The head's pending demand names them "trial EXP/TRIAL" with the node's
  // reason (`cumulus status`); asking the head here would cost a call per line.
  std::vector<std::string> waiting;
  for (auto& row : trials.trials) {
    if (row.state != TrialState::kPending) continue;
    auto live = std::find_if(live_.begin(), live_.end(),
                             [&](auto& l) { return TrialName(l.first) == row.id; });
    if (live == live_.end() || live->second.placed || now - live->second.since < kNotPlacedAfter)
      continue;
    waiting.push_back(row.id);
    if (row.reason.empty() || row.reason == "resuming")
      row.reason = "not placed yet: waiting for resources? (cumulus status: pending demand)";
  }
  size_t counts[6] = {0, 0, 0, 0, 0, 0};
  size_t by_user = 0;  // of the stopped: by `cumulus stop trial`
  for (auto& t : trials.trials) {
    ++counts[static_cast<int>(t.state)];
    by_user += t.state == TrialState::kStoppedEarly && t.reason.rfind(kStoppedByUserReason, 0) == 0;
  }
  std::string stopped = std::to_string(counts[3]) + " stopped early";
  if (by_user > 0) stopped += " (" + std::to_string(by_user) + " by user)";
  double elapsed = std::chrono::duration<double>(now - started_).count();
  char head[512];
  std::snprintf(head, sizeof(head),
                "%zu running, %zu pending, %zu paused, %s, %zu finished, %zu failed", counts[1],
                counts[0], counts[2], stopped.c_str(), counts[4], counts[5]);
  std::string rest;  // after the counts and compute: the trials not placed, the best
  if (!waiting.empty()) {
    rest += "; not placed yet: " + waiting[0];
    for (size_t i = 1; i < std::min<size_t>(waiting.size(), 3); ++i) rest += ", " + waiting[i];
    if (waiting.size() > 3) rest += " and " + std::to_string(waiting.size() - 3) + " more";
  }
  if (const TrialRow* best = BestTrial(trials)) {
    // Only the parameters that differ between trials: constants (a data path, say) are noise.
    std::string shown;
    for (auto& [key, value] : best->config.values()) {
      bool varies = std::any_of(trials.trials.begin(), trials.trials.end(), [&](auto& t) {
        auto it = t.config.values().find(key);
        return it == t.config.values().end() || it->second != value;
      });
      if (varies) shown += (shown.empty() ? "" : ", ") + key + "=" + FormatValue(value);
    }
    if (shown.size() > 100) shown = shown.substr(0, 97) + "...";
    char b[128];
    std::snprintf(b, sizeof(b), "; best %s = %.6g (%s ", spec_.metric.c_str(),
                  *LastMetric(*best, spec_.metric), best->id.c_str());
    rest += b + shown + ")";
  }
  // What changes decides a plain line: not the time or compute, which change every time.
  std::string key = head + rest;
  bool changed = key != last_progress_line_;
  last_progress_line_ = key;
  char clock[320];
  std::snprintf(clock, sizeof(clock), "[%s %.0f s] ", spec_.name.c_str(), elapsed);
  char compute[64];
  std::snprintf(compute, sizeof(compute), "; compute %.1f trial-s", trials.compute_seconds);
  std::string line = clock + std::string(head) + compute + rest;
  bool due = changed || final || now - last_progress_printed_ >= kQuietLineEvery;
  if (due) last_progress_printed_ = now;
  bool table =
      progress_options_.progress == "table" || (progress_options_.progress == "auto" && isatty(1));
  if (table) {
    // Redrawn in place: the cursor goes back up over the last drawing, which is cleared.
    // It must fit the screen: lines that scroll off the top cannot be redrawn, and each
    // drawing would leave them behind.
    TextOptions to;
    to.width = 120;
    size_t screen_rows = 0;
    if (winsize ws{}; ioctl(1, TIOCGWINSZ, &ws) == 0) {
      if (ws.ws_col >= 40) to.width = ws.ws_col;
      screen_rows = ws.ws_row;
    }
    to.max_rows = 30;
    auto lines_of = [](const std::string& t) {
      return static_cast<size_t>(std::count(t.begin(), t.end(), '\n')) +
             (!t.empty() && t.back() != '\n');
    };
    std::string text = TrialsText(trials, to);
    // Fewer trial rows until it fits (once rows are left out, a line says how many: the second
    // pass takes that line off too).
    size_t shown = std::min(to.max_rows, trials.trials.size());
    for (int pass = 0; pass < 3 && screen_rows > 0 && lines_of(text) >= screen_rows && shown > 1;
         ++pass) {
      size_t over = lines_of(text) - screen_rows + 1;
      shown = shown > over ? shown - over : 1;
      to.max_rows = shown;
      text = TrialsText(trials, to);
    }
    if (!text.empty() && text.back() != '\n') text += "\n";
    std::string out;
    if (progress_lines_ > 0) out += "\x1b[" + std::to_string(progress_lines_) + "F\x1b[J";
    out += text;
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
    progress_lines_ = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  } else if (due) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  if (!progress_options_.progress_file.empty() && due) {
    if (FILE* f = std::fopen(progress_options_.progress_file.c_str(), "a")) {
      std::fprintf(f, "%s\n", line.c_str());
      std::fclose(f);
    }
  }
}

}  // namespace cumulus::tune
