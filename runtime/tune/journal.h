// The journal of a tuning experiment in the head's control store: the experiment's spec, then one
// entry per event (a trial added, started, a report with the scheduler's decision, a checkpoint,
// a trial that failed over or ended), appended as it happens and never rewritten. The searcher
// and the trial scheduler are deterministic given their options and the calls they got, so their
// state is the journal itself: a restored tuner replays the entries into fresh ones and checks
// that they decide as the journal says (runtime/tune/experiment_state.h).
//
// Keys (Cap'n Proto records, runtime/proto/tune.capnp):
//   kExperimentsNamespace  NAME                         ExperimentSpec
//   kJournalNamespace      NAME/SEQUENCE (12 digits)    JournalEntry
//   kCheckpointsNamespace  NAME/TRIAL/ITERATION/CHUNK   a checkpoint's bytes, in chunks
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cumulus/status.h"
#include "runtime/head/control_client.h"

namespace cumulus::tune {

constexpr const char* kExperimentsNamespace = "tune_experiments";
constexpr const char* kJournalNamespace = "tune";
constexpr const char* kCheckpointsNamespace = "tune_checkpoints";
// Trials' output: JOB/EXPERIMENT/TRIAL/MICROS-RANK-SEQ (read by `cumulus logs JOB --trial T`).
constexpr const char* kTrialLogsNamespace = "tune_logs";

// Letters, digits, '-', '_' and '.', 1 to 100 characters; InvalidArgument saying so otherwise.
Status CheckExperimentName(std::string_view name);

struct ExperimentSpec {
  std::string name, trainable, metric;
  bool maximize = true;
  bool is_function = false;
  uint64_t num_samples = 0;
  std::string searcher, scheduler;
  uint64_t seed = 0;
  int64_t grace_period = 1;
  double reduction_factor = 4;
  int64_t brackets = 1;
  int64_t median_grace_period = 1, median_min_samples = 3;
  int64_t pbt_interval = 4;
  double pbt_quantile = 0.25, pbt_resample_probability = 0.25;
  std::vector<std::string> pbt_mutations;
  int64_t bound_min_finished = 10;
  // Journals from before these were recorded read tune.capnp's defaults: SchedulerOptions' of
  // the time, the rules they ran with. Two defaults have changed since: budget_score (they read
  // "last"; "fit" since 2026-12-06) and budget_min_prefix (they read 0.05; 0.10 since
  // 2026-12-07).
  double budget_fraction = 0.24, budget_min_prefix = 0.10;
  double budget_reduction_factor = 2, budget_promotion_share = 0.7;
  std::string budget_score = "fit";
  double budget_score_window = 1;
  bool budget_eager = false;  // journals from before it read true: the rule they ran with
  int64_t max_iterations = 100;
  std::map<std::string, double> stop;
  int64_t time_budget_seconds = 0;
  int32_t max_concurrent_trials = 0;
  std::map<std::string, double> resources;
  int32_t gang_size = 1;
  uint8_t gang_strategy = 0;
  std::string label_selector;
  int64_t checkpoint_every = 1;
  int32_t max_failures = 3;
  int64_t pending_timeout_seconds = 0;
  int32_t max_pending_trials = 0;
  int64_t created_micros = 0;
  std::vector<std::string> params;
};

struct JournalEntry {
  enum class Kind : uint8_t {
    kRun = 1,          // a driver (job) runs the experiment: at creation and at each restore
    kTrialAdded,       // the searcher gave `config` to `trial`
    kSearcherDone,     // the searcher has no more configs
    kTrialStarted,     // `trial` got its actors on `node`
    kReport,           // `trial` reported `metrics` at `iteration`; the scheduler's `action`
    kChoose,           // a slot was free: the scheduler resumed `resume` and stopped `stops`
    kCheckpoint,       // `trial`'s checkpoint at `iteration` is stored under checkpoint_key
    kTrialRestarted,   // `trial`'s actor or node died (`reason`); it continues from a checkpoint
    kTrialEnded,       // `trial` ended outside a report: failed (`reason`) or stopped
    kExperimentEnded,  // the experiment is over (`reason`)
  };
  Kind kind = Kind::kRun;
  int64_t micros = 0;
  uint64_t trial = 0;
  std::string config;  // Config::Encode
  int64_t iteration = 0;
  std::map<std::string, double> metrics;
  double seconds = 0;  // kReport: the trial's time for this iteration
  std::string node;
  uint8_t action = 0;  // kReport: tune::Action, or kActionFinished
  std::string reason;
  uint64_t exploit_from = 0;
  bool can_start_new = false;
  int64_t resume = -1;
  std::vector<std::pair<uint64_t, std::string>> stops;
  std::string checkpoint_key;
  uint32_t checkpoint_chunks = 0;
  uint64_t checkpoint_bytes = 0;
  uint8_t state = 0;  // kTrialEnded: TrialState
  std::string job;    // kRun
};
// kReport's action when the trial reached a stop condition (it ends, completed).
constexpr uint8_t kActionFinished = 100;
// kReport's action when the time budget was spent: the trial stops (not completed).
constexpr uint8_t kActionBudgetStop = 101;
// The start of an exploit report's reason when the exploit was skipped (no donor checkpoint to
// copy): the trial goes on with its own config and checkpoint.
constexpr const char* kExploitSkippedReason = "exploit skipped: ";
inline bool IsSkippedExploit(const JournalEntry& report) {
  return report.reason.rfind(kExploitSkippedReason, 0) == 0;
}
// kExperimentEnded's reason when the time budget ended the experiment.
constexpr const char* kTimeBudgetSpentReason = "time budget spent";

// How long the runs in `entries` lasted, each from its kRun entry to its own last entry (on its
// own driver's clock: a run restored on a host whose clock is behind, or after the clock stepped
// back, is not measured against an earlier run's times). What a restored time budget has left.
std::chrono::microseconds TimeOfRuns(const std::vector<JournalEntry>& entries);

// The key of an experiment's entry `sequence` (from 1) in kJournalNamespace.
std::string JournalEntryKey(const std::string& name, uint64_t sequence);

std::string EncodeSpec(const ExperimentSpec& spec);
Result<ExperimentSpec> DecodeSpec(std::string_view bytes);
std::string EncodeEntry(const JournalEntry& entry);
Result<JournalEntry> DecodeEntry(std::string_view bytes);

// One experiment's journal, appended by the one driver that runs it. Not thread-safe.
class Journal {
 public:
  // Records a new experiment; AlreadyExists if the cluster has one named so.
  static Result<std::unique_ptr<Journal>> Create(std::unique_ptr<ControlClient> head,
                                                 const ExperimentSpec& spec);
  struct Loaded {
    ExperimentSpec spec;
    std::vector<JournalEntry> entries;
  };
  // NotFound (naming the experiment and how to list them) if there is none; InvalidArgument if
  // an entry is not readable (naming its key).
  static Result<Loaded> Load(ControlClient& head, const std::string& name);
  // Appends after the `next_sequence - 1` entries already there (a restored experiment).
  static std::unique_ptr<Journal> Continue(std::unique_ptr<ControlClient> head, std::string name,
                                           uint64_t next_sequence);

  // Writes the entry (its time set now). AlreadyExists if another driver appended the same
  // sequence number: two drivers run the experiment, and this one must stop.
  Status Append(JournalEntry entry);

  // Stores a checkpoint (chunks of at most 4 MiB) under a key of its own (trial, iteration and
  // `tag`, so that no stored checkpoint a journal entry names is ever written over); fills entry
  // fields key, chunks, bytes.
  Status PutCheckpoint(uint64_t trial, int64_t iteration, const std::string& bytes,
                       JournalEntry* entry, const std::string& tag = "");
  static Result<std::string> GetCheckpoint(ControlClient& head, const JournalEntry& checkpoint);
  Status DeleteCheckpoint(const JournalEntry& checkpoint);

  ControlClient& head() { return *head_; }
  const std::string& name() const { return name_; }

 private:
  Journal(std::unique_ptr<ControlClient> head, std::string name, uint64_t next)
      : head_(std::move(head)), name_(std::move(name)), next_(next) {}
  std::unique_ptr<ControlClient> head_;
  std::string name_;
  uint64_t next_;
};

}  // namespace cumulus::tune
