// ExperimentState: the table of an experiment's trials as its journal says, built by applying the
// journal's entries in order. The live tuner keeps one up to date as it journals; `cumulus trials`
// and LoadExperiment build one from the head's copy. No policy here: what the scheduler and the
// searcher decided is read from the entries (the tuner replays them into its policies itself).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cumulus/tune.h"
#include "runtime/tune/journal.h"
#include "runtime/tune/trial_table.h"
#include "scheduler/tune/trial_scheduler.h"

namespace cumulus::tune {

// "t0007" for trial 7.
std::string TrialName(uint64_t trial);

struct TrialStatus {
  uint64_t id = 0;
  Config config;
  TrialState state = TrialState::kPending;
  std::string reason;
  std::vector<Metrics> history;        // every report, with "training_iteration"
  std::vector<double> report_seconds;  // the trial's running time at each report (cumulative)
  int64_t iteration = 0;               // the last reported
  std::string node;
  int restarts = 0;
  double seconds = 0;
  std::optional<JournalEntry> checkpoint;  // the latest stored (its key, chunks, bytes, iteration)
  // PBT: each exploit it made (not the skipped ones), in order: at which of its iterations, from
  // which trial, the config it left and the one it took.
  struct Exploit {
    int64_t iteration = 0;
    uint64_t from = 0;
    Config before, after;
  };
  std::vector<Exploit> exploits;
};

class ExperimentState {
 public:
  explicit ExperimentState(ExperimentSpec spec) : spec_(std::move(spec)) {}

  // Applies one entry. InvalidArgument if it names a trial the journal never added, or a config
  // that does not decode (the journal is not this experiment's, or is damaged).
  Status Apply(const JournalEntry& e);

  const ExperimentSpec& spec() const { return spec_; }
  const std::map<uint64_t, TrialStatus>& trials() const { return trials_; }
  std::map<uint64_t, TrialStatus>& mutable_trials() { return trials_; }
  bool searcher_done() const { return searcher_done_; }
  bool ended() const { return ended_; }
  const std::string& end_reason() const { return end_reason_; }
  uint64_t next_trial() const { return trials_.empty() ? 1 : trials_.rbegin()->first + 1; }
  int runs() const { return runs_; }

  // The public result: every trial, compute used, and what training all to the end would cost.
  ExperimentResult ToResult() const;
  // The table the progress view, `cumulus trials` and the plot show.
  ExperimentTable ToTable(std::vector<std::pair<int64_t, double>> cutoffs = {}) const;

 private:
  ExperimentSpec spec_;
  std::map<uint64_t, TrialStatus> trials_;
  bool searcher_done_ = false, ended_ = false;
  std::string end_reason_;
  int runs_ = 0;
};

// The trial scheduler's options as the experiment's spec records them (kind, mode, max_t, seed
// and every kind's settings), all but PBT's mutations, which need the search space. The one place
// a spec becomes SchedulerOptions: the live tuner, its restore and ReplayCutoffs use it.
// InvalidArgument for an unknown scheduler kind; the values are checked by MakeTrialScheduler.
Result<SchedulerOptions> SchedulerOptionsFromSpec(const ExperimentSpec& spec);

// The rung cut-offs of the experiment's trial scheduler after `entries`: a fresh scheduler made
// from the spec is given the journal's trials, reports and ends (the searcher is not needed).
// Empty for schedulers without rungs, and for PBT (its mutations need the search space).
Result<std::vector<std::pair<int64_t, double>>> ReplayCutoffs(
    const ExperimentSpec& spec, const std::vector<JournalEntry>& entries);

}  // namespace cumulus::tune
