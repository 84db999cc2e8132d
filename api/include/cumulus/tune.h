// Hyperparameter tuning on the cluster (link cumulus_tune): many trials of a trainable over a
// search space, each trial an actor (or a gang of actors that form a collective group), a trial
// scheduler stopping or pausing the weak ones early, every step journaled in the head's control
// store so that an experiment continues after its driver dies. See docs/tune.md.
//
//   class Mlp : public cumulus::tune::Trainable {
//     void Setup(const cumulus::tune::Config& c) override { lr_ = c.Get<double>("lr"); ... }
//     cumulus::tune::Metrics Step() override { ...; return {{"accuracy", acc}}; }
//     std::string Save() override { ... }                  // a checkpoint, as bytes
//     void Restore(const std::string& bytes) override { ... }
//   };
//   CUMULUS_TRAINABLE(Mlp);
//
//   int main(int argc, char** argv) {
//     cumulus::Init(argc, argv);
//     cumulus::tune::SearchSpace space;
//     space.LogUniform("lr", 1e-3, 1e-1).Choice("width", {int64_t{64}, int64_t{256}});
//     cumulus::tune::TunerOptions o;
//     o.name = "mlp"; o.metric = "accuracy"; o.num_samples = 20; o.max_iterations = 10;
//     auto result = cumulus::tune::Tuner::Create<Mlp>(space, o)->Run();
//   }
//
// A function trainable is `void Train(TrialContext& ctx, const Config& config)` that calls
// ctx.Report(metrics[, checkpoint]) once per iteration, registered with CUMULUS_TRAIN_FUNCTION.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <vector>

#include "cumulus/collective_group.h"
#include "cumulus/options.h"
#include "cumulus/status.h"
#include "cumulus/tune_space.h"

namespace cumulus::tune {

// One report: metric name -> value. The tuner adds "training_iteration" (1, 2, ...).
using Metrics = std::map<std::string, double>;

// What a trainable knows of the trial it runs.
struct TrialInfo {
  std::string experiment;
  std::string trial_id;  // "t0007"
  int rank = 0;          // in a gang trial: this actor's rank in the trial's collective group
  int world_size = 1;
  int64_t iteration = 0;  // iterations reported so far (a resumed trial starts past 0)
};

// The class API. An instance lives in one actor (per rank) for as long as the trial runs there;
// Setup comes first, then Restore when the trial continues from a checkpoint (resumed after a
// pause or a dead node, or PBT exploiting another trial), then Step once per iteration. Any
// exception fails the trial with its message.
class Trainable {
 public:
  virtual ~Trainable() = default;
  virtual void Setup(const Config& config) = 0;
  // One iteration; must return the experiment's metric.
  virtual Metrics Step() = 0;
  // A checkpoint of the state Step changes; empty: this trainable keeps none (a paused or
  // resumed trial then starts again from iteration 0's state).
  virtual std::string Save() { return {}; }
  virtual void Restore(const std::string& checkpoint) {}

  const TrialInfo& trial() const { return info_; }
  // Gang trials: the trial's collective group (all ranks call its operations in the same order);
  // null for a single-actor trial. Valid from Setup on.
  CollectiveGroup* group() const { return group_; }

 private:
  friend class TrialHost;
  TrialInfo info_;
  CollectiveGroup* group_ = nullptr;
};

// The function API's view of its trial.
class TrialContext {
 public:
  virtual ~TrialContext() = default;
  // Reports one iteration. Returns when the tuner lets the trial go on; when it stops or pauses
  // the trial instead, Report does not return (the trial's actor is stopped). A checkpoint given
  // here is what a later LoadCheckpoint returns when the trial continues.
  virtual void Report(const Metrics& metrics, std::optional<std::string> checkpoint = {}) = 0;
  // The checkpoint to continue from (resumed after a pause or a dead node, or exploited by PBT),
  // or nullopt for a fresh start.
  virtual std::optional<std::string> LoadCheckpoint() = 0;
  virtual const TrialInfo& trial() const = 0;
  virtual CollectiveGroup* group() const = 0;  // gang trials, as Trainable::group
};

using TrainFunction = void (*)(TrialContext&, const Config&);

// Searcher and trial scheduler settings (the policies are described in docs/tune.md).
struct SchedulerSettings {
  // fifo, asha, hyperband, median, pbt, bound, budget. budget (the default) spends
  // budget_fraction of the iterations of every trial run to max_t (docs/tune.md).
  std::string kind = "budget";
  // asha / hyperband / bound: rungs at grace * rf^k. Ray Tune's ASHA defaults.
  int64_t grace_period = 1;
  double reduction_factor = 4;
  int64_t brackets = 1;
  // median
  int64_t median_grace_period = 1;
  int64_t median_min_samples = 3;
  // pbt: every `pbt_interval` iterations the bottom quantile exploits the top; `pbt_mutations`
  // are the parameters it may perturb or resample (empty: exploit only).
  int64_t pbt_interval = 4;
  double pbt_quantile = 0.25;
  double pbt_resample_probability = 0.25;
  SearchSpace pbt_mutations;
  // bound: trials that run to the end before any is stopped.
  int64_t bound_min_finished = 10;
  // budget (also uses grace_period as the shortest first rung). Iterations to spend in all, as a
  // fraction of every trial added running to max_t; in (0, 1].
  double budget_fraction = 0.24;
  // Every trial runs at least this fraction of max_t (rounded up) before it can be paused; [0, 1].
  double budget_min_prefix = 0.10;
  // Rungs at the first rung x rf^k; a rung's top 1/rf is promoted; above 1.
  double budget_reduction_factor = 2;
  // While the searcher has new configs, promotions spend at most this share of the budget so
  // far; [0, 1].
  double budget_promotion_share = 0.7;
  // What a trial is ranked by at a rung: "fit" (the default: its curve so far extrapolated to
  // max_t; at a rung before its third report, its value), "last" (the value it reported there),
  // "mean" (the mean of its last w reports) or "line" (a least-squares line through them, at the
  // rung's iteration); w = budget_score_window x the iterations since the previous rung, at least
  // 2; the window in [0, 1]. Measured on replayed curves in docs/tune_replay.md.
  std::string budget_score = "fit";
  double budget_score_window = 1;
  // true: the rule before 2026-12-07, which judged a trial at a rung on what had reported so far
  // and, with many trials running at once, spent the budget in the order they arrived. false
  // (the default): a trial waits at a rung for the trials on their way there unless it is in the
  // top 1/rf whatever they report, and the budget keeps what takes the leader to max_t.
  bool budget_eager = false;
};

struct TunerOptions {
  // The experiment's name, unique in the cluster: its journal's key (Tuner::Restore, `cumulus
  // trials NAME`). Letters, digits, '-', '_', '.'; required.
  std::string name;
  std::string metric;               // the reported metric to optimise; required
  std::string mode = "max";         // or "min"
  uint64_t num_samples = 10;        // configs drawn (times the grid's size, for Grid parameters)
  std::string searcher = "random";  // random, grid, tpe
  SchedulerSettings scheduler;
  uint64_t seed = 0;  // searcher and scheduler; the same seed gives the same configs
  // Stop conditions: a trial ends (finished) at max_iterations, or when a metric in `stop`
  // reaches its value (>= in max mode for the tuned metric and any other metric, <= in min mode
  // for the tuned metric).
  int64_t max_iterations = 100;
  std::map<std::string, double> stop;
  // No new trial starts after this much wall time (0: no budget); running trials then end at
  // their next report and the experiment ends. The budget is the experiment's: a run restored
  // with Tuner::Restore has what earlier runs left (each measured on its own driver's clock).
  std::chrono::seconds time_budget{0};
  // Trials running at once; 0: as many as there are samples (the cluster's capacity decides).
  int max_concurrent_trials = 0;
  // With max_concurrent_trials = 0: beyond the trials the cluster's current nodes hold, up to
  // this many more are started and wait for resources. They are the experiment's pending demand
  // (named "trial EXP/TRIAL" in `cumulus status`), which an autoscaler launches nodes for; the
  // cap keeps a run of many samples from queueing them all on the cluster. They run as nodes
  // join or as other trials end, and no pending_timeout applies to them. 0: only as many as the
  // current nodes hold (a tuning run alone then makes no autoscaler launch anything).
  int max_pending_trials = 4;
  // Each trial's actor asks for these; a gang trial has `gang_size` actors, one bundle each, in a
  // placement group with `gang_strategy`, joined in a collective group.
  std::map<std::string, double> resources_per_trial = {{"CPU", 1}};
  int gang_size = 1;
  PlacementGroupStrategy gang_strategy = PlacementGroupStrategy::kPack;
  std::string label_selector;  // where trials may run, e.g. "site=onprem"
  // Class trainables: a checkpoint every this many iterations (0: only when paused; under PBT
  // also at each perturbation boundary, whatever this says), stored in the head's control store
  // so that losing a trial's node loses none.
  int64_t checkpoint_every = 1;
  // Times a trial is resumed (from its last checkpoint) after its actor or node died.
  int max_failures = 3;
  // A trial waiting for resources longer than this fails (0: waits as long as the experiment).
  std::chrono::seconds pending_timeout{0};
  // Progress: a table redrawn in place on a terminal, plain lines otherwise; "off" for none.
  std::string progress = "auto";  // auto, table, lines, off
  std::chrono::milliseconds progress_interval{1000};
  std::string progress_file;  // also written here (plain lines), if set
};

enum class TrialState { kPending, kRunning, kPaused, kStoppedEarly, kFinished, kFailed };
// "PENDING", "RUNNING", "PAUSED", "STOPPED", "FINISHED", "FAILED".
const char* TrialStateName(TrialState state);

// Where a trial's last checkpoint is kept (the head's control store).
struct CheckpointRef {
  std::string key;  // empty: none
  uint32_t chunks = 0;
  uint64_t bytes = 0;
  int64_t iteration = 0;
};

struct TrialResult {
  std::string id;
  Config config;
  TrialState state = TrialState::kPending;
  std::string reason;            // why stopped, or the error of a failed trial
  std::vector<Metrics> history;  // every report, in order (with "training_iteration")
  std::string node;              // where it ran last
  int restarts = 0;              // resumed after its actor or node died
  double seconds = 0;            // trial-seconds it used
  CheckpointRef checkpoint;
  std::optional<double> last(
      const std::string& metric) const;  // its last value of the experiment's metric
};

struct ExperimentResult {
  std::string name, metric;
  bool maximize = true;
  std::vector<TrialResult> trials;
  double compute_seconds = 0;  // trial-seconds used
  // Trial-seconds if every trial had run to max_iterations at its own mean seconds per iteration.
  double compute_seconds_full = 0;
  // The trial with the best last value of the metric (Ray's default); null if none reported.
  const TrialResult* best() const;
  // The best trial's last checkpoint, read from the cluster (empty if it kept none).
  Result<std::string> BestCheckpoint() const;
  size_t Count(TrialState state) const;
  std::string ToCsv() const;   // one row per trial: id, state, iterations, last, best, config
  std::string ToJson() const;  // every trial with its config and full history
};

class Tuner {
 public:
  // A new experiment over a class trainable (registered with CUMULUS_TRAINABLE) or a function
  // (CUMULUS_TRAIN_FUNCTION). InvalidArgument for an empty or contradictory space, a bad option
  // (mode, metric, name, scheduler, searcher, resources), or an unregistered trainable;
  // AlreadyExists if the cluster has an experiment of this name (Restore continues it).
  template <typename C>
  static Result<Tuner> Create(const SearchSpace& space, const TunerOptions& options) {
    return Create(typeid(C).name(), space, options);
  }
  static Result<Tuner> Create(TrainFunction train, const SearchSpace& space,
                              const TunerOptions& options);
  // Continues experiment `name` from its journal after its driver died: finished trials keep
  // their results, decisions stand, running and paused trials continue from their last
  // checkpoints, and the searcher goes on with its sequence. `space` must be the experiment's
  // space (the configs it gives again are checked against the journal's). Options come from the
  // journal, except the progress settings of `progress` (nullptr: the defaults). NotFound if the
  // cluster has no experiment `name`.
  template <typename C>
  static Result<Tuner> Restore(const std::string& name, const SearchSpace& space,
                               const TunerOptions* progress = nullptr) {
    return Restore(typeid(C).name(), name, space, progress);
  }
  static Result<Tuner> Restore(TrainFunction train, const std::string& name,
                               const SearchSpace& space, const TunerOptions* progress = nullptr);

  Tuner(Tuner&&) noexcept;
  Tuner& operator=(Tuner&&) noexcept;
  ~Tuner();

  // Runs the experiment to its end (every trial finished, stopped or failed, or the time budget
  // spent). An error only if the experiment itself cannot go on (the head is gone, the journal
  // cannot be written); failed trials are results.
  Result<ExperimentResult> Run();

  class Impl;

 private:
  explicit Tuner(std::unique_ptr<Impl> impl);
  static Result<Tuner> Create(const char* class_key, const SearchSpace& space,
                              const TunerOptions& options);
  static Result<Tuner> Restore(const char* class_key, const std::string& name,
                               const SearchSpace& space, const TunerOptions* progress);
  std::unique_ptr<Impl> impl_;
};

// Reads experiment `name`'s journal from the cluster this process is connected to.
Result<ExperimentResult> LoadExperiment(const std::string& name);

namespace internal {
// Registration (use the macros below).
bool RegisterTrainableClass(const char* spelled, const char* class_key,
                            std::unique_ptr<Trainable> (*make)());
bool RegisterTrainFunction(const char* spelled, TrainFunction f);
template <typename C>
std::unique_ptr<Trainable> MakeTrainable() {
  return std::unique_ptr<Trainable>(new C());
}
}  // namespace internal

}  // namespace cumulus::tune

// Registers a class trainable (default-constructible, derived from cumulus::tune::Trainable) or
// a train function, at namespace scope in a .cc file of the program.
#define CUMULUS_TRAINABLE(C)                                                                      \
  [[maybe_unused]] static const bool CUMULUS_INTERNAL_TUNE_CAT(cumulus_trainable_, __COUNTER__) = \
      ::cumulus::tune::internal::RegisterTrainableClass(                                          \
          #C, typeid(C).name(), &::cumulus::tune::internal::MakeTrainable<C>)
#define CUMULUS_TRAIN_FUNCTION(f)                                                       \
  [[maybe_unused]] static const bool CUMULUS_INTERNAL_TUNE_CAT(cumulus_train_function_, \
                                                               __COUNTER__) =           \
      ::cumulus::tune::internal::RegisterTrainFunction(#f, f)
#define CUMULUS_INTERNAL_TUNE_CAT2(a, b) a##b
#define CUMULUS_INTERNAL_TUNE_CAT(a, b) CUMULUS_INTERNAL_TUNE_CAT2(a, b)
