// Tuner: checking options, creating and restoring experiments, results (the loop is tuner.cc).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "runtime/net/tcp.h"
#include "runtime/tune/tuner_impl.h"
#include "scheduler/resources.h"
#include "workers/core_worker.h"

namespace cumulus::tune {
namespace {

Status Bad(const std::string& what) { return Status::InvalidArgument("tuner: " + what); }

}  // namespace

Result<std::unique_ptr<ControlClient>> ConnectTunerHead(std::string* job) {
  CoreWorker* rt = CurrentCoreWorker();
  if (rt == nullptr) {
    return Status::Unavailable("cumulus is not initialized: call cumulus::Init() first");
  }
  if (job) *job = rt->job_id().Hex();
  auto [address, token] = rt->cluster_credentials();
  CUMULUS_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  ControlClientOptions o;
  o.role = "tuner";
  return ControlClient::Connect(hp, token, o);
}

Result<ExperimentSpec> SpecFromOptions(const TunerOptions& o, const SearchSpace& space,
                                       const std::string& trainable, bool is_function) {
  CUMULUS_RETURN_IF_ERROR(CheckExperimentName(o.name));
  CUMULUS_RETURN_IF_ERROR(space.Validate());
  if (o.metric.empty()) return Bad("metric is empty: name the metric the trainable reports");
  auto mode = ParseMode(o.mode);
  if (!mode.ok()) return Bad("mode '" + o.mode + "' is neither max nor min");
  CUMULUS_RETURN_IF_ERROR(ParseSearcherKind(o.searcher).status());
  CUMULUS_RETURN_IF_ERROR(ParseSchedulerKind(o.scheduler.kind).status());
  CUMULUS_RETURN_IF_ERROR(ParseBudgetScore(o.scheduler.budget_score).status());
  if (o.num_samples < 1 || o.num_samples > 1000000)
    return Bad("num_samples must be 1 to 1000000, got " + std::to_string(o.num_samples));
  if (o.max_iterations < 1) return Bad("max_iterations must be at least 1");
  if (o.gang_size < 1 || o.gang_size > 1024) return Bad("gang_size must be 1 to 1024");
  if (o.max_failures < 0) return Bad("max_failures must not be negative");
  if (o.checkpoint_every < 0) return Bad("checkpoint_every must not be negative");
  if (o.max_concurrent_trials < 0) return Bad("max_concurrent_trials must not be negative");
  if (o.max_pending_trials < 0 || o.max_pending_trials > 10000)
    return Bad("max_pending_trials must be 0 to 10000, got " +
               std::to_string(o.max_pending_trials));
  if (o.time_budget.count() < 0) return Bad("time_budget must not be negative");
  if (o.pending_timeout.count() < 0) return Bad("pending_timeout must not be negative");
  if (o.progress != "auto" && o.progress != "table" && o.progress != "lines" &&
      o.progress != "off") {
    return Bad("progress '" + o.progress + "' must be auto, table, lines or off");
  }
  for (auto& [name, amount] : o.resources_per_trial) {
    CUMULUS_RETURN_IF_ERROR(ResourceSet::CheckAmount(name, amount));
  }
  for (auto& [name, value] : o.stop) {
    if (name.empty() || !std::isfinite(value))
      return Bad("a stop condition needs a metric name and a finite value");
  }
  for (auto& p : o.scheduler.pbt_mutations.params()) {
    if (space.Find(p.name) == nullptr)
      return Bad("PBT mutates '" + p.name + "', which is not in the search space");
  }
  ExperimentSpec s;
  s.name = o.name;
  s.trainable = trainable;
  s.is_function = is_function;
  s.metric = o.metric;
  s.maximize = *mode == Mode::kMax;
  s.num_samples = o.num_samples;
  s.searcher = o.searcher;
  s.seed = o.seed;
  s.scheduler = o.scheduler.kind;
  s.grace_period = o.scheduler.grace_period;
  s.reduction_factor = o.scheduler.reduction_factor;
  s.brackets = o.scheduler.brackets;
  s.median_grace_period = o.scheduler.median_grace_period;
  s.median_min_samples = o.scheduler.median_min_samples;
  s.pbt_interval = o.scheduler.pbt_interval;
  s.pbt_quantile = o.scheduler.pbt_quantile;
  s.pbt_resample_probability = o.scheduler.pbt_resample_probability;
  for (auto& p : o.scheduler.pbt_mutations.params()) s.pbt_mutations.push_back(p.name);
  s.bound_min_finished = o.scheduler.bound_min_finished;
  s.budget_fraction = o.scheduler.budget_fraction;
  s.budget_min_prefix = o.scheduler.budget_min_prefix;
  s.budget_reduction_factor = o.scheduler.budget_reduction_factor;
  s.budget_promotion_share = o.scheduler.budget_promotion_share;
  s.budget_score = o.scheduler.budget_score;
  s.budget_score_window = o.scheduler.budget_score_window;
  s.budget_eager = o.scheduler.budget_eager;
  s.max_iterations = o.max_iterations;
  s.stop = o.stop;
  s.time_budget_seconds = o.time_budget.count();
  s.max_concurrent_trials = o.max_concurrent_trials;
  s.max_pending_trials = o.max_pending_trials;
  s.resources = o.resources_per_trial;
  s.gang_size = o.gang_size;
  s.gang_strategy = static_cast<uint8_t>(o.gang_strategy);
  s.label_selector = o.label_selector;
  s.checkpoint_every = o.checkpoint_every;
  s.max_failures = o.max_failures;
  s.pending_timeout_seconds = o.pending_timeout.count();
  s.created_micros = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  for (auto& p : space.params()) s.params.push_back(p.name);
  return s;
}

// ---- Tuner ----------------------------------------------------------------------------------

Tuner::Tuner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tuner::Tuner(Tuner&&) noexcept = default;
Tuner& Tuner::operator=(Tuner&&) noexcept = default;
Tuner::~Tuner() = default;

Result<Tuner> Tuner::Create(const char* class_key, const SearchSpace& space,
                            const TunerOptions& options) {
  std::string name = TrainableClassName(class_key);
  if (name.empty()) {
    return Bad(
        "the trainable class is not registered: add CUMULUS_TRAINABLE(YourClass); at "
        "namespace scope in the program");
  }
  CUMULUS_ASSIGN_OR_RETURN(ExperimentSpec spec, SpecFromOptions(options, space, name, false));
  auto impl = std::make_unique<Impl>(std::move(spec), space, options);
  CUMULUS_RETURN_IF_ERROR(impl->Begin());
  return Tuner(std::move(impl));
}

Result<Tuner> Tuner::Create(TrainFunction train, const SearchSpace& space,
                            const TunerOptions& options) {
  std::string name = TrainFunctionName(train);
  if (name.empty()) {
    return Bad(
        "the train function is not registered: add CUMULUS_TRAIN_FUNCTION(your_function); "
        "at namespace scope in the program");
  }
  CUMULUS_ASSIGN_OR_RETURN(ExperimentSpec spec, SpecFromOptions(options, space, name, true));
  auto impl = std::make_unique<Impl>(std::move(spec), space, options);
  CUMULUS_RETURN_IF_ERROR(impl->Begin());
  return Tuner(std::move(impl));
}

namespace {
Status RestoreAs(const std::string& trainable, bool is_function, const std::string& name,
                 const SearchSpace& space, const TunerOptions* progress,
                 std::unique_ptr<Tuner::Impl>* out) {
  CUMULUS_ASSIGN_OR_RETURN(auto head, ConnectTunerHead());
  CUMULUS_ASSIGN_OR_RETURN(auto loaded, Journal::Load(*head, name));
  if (loaded.spec.trainable != trainable || loaded.spec.is_function != is_function) {
    return Bad("experiment '" + name + "' was run with " +
               (loaded.spec.is_function ? "train function " : "trainable class ") +
               loaded.spec.trainable + ", not " + (is_function ? "train function " : "class ") +
               trainable + ": restore it with the same trainable");
  }
  if (loaded.spec.params.size() != space.params().size()) {
    return Bad("experiment '" + name + "' has " + std::to_string(loaded.spec.params.size()) +
               " parameters, the space given to Restore has " +
               std::to_string(space.params().size()) + ": restore it with the same space");
  }
  for (size_t i = 0; i < space.params().size(); ++i) {
    if (space.params()[i].name != loaded.spec.params[i]) {
      return Bad("experiment '" + name + "': parameter " + std::to_string(i + 1) + " is '" +
                 loaded.spec.params[i] + "', the space given to Restore has '" +
                 space.params()[i].name + "'");
    }
  }
  TunerOptions p = progress ? *progress : TunerOptions{};
  auto impl = std::make_unique<Tuner::Impl>(loaded.spec, space, p);
  CUMULUS_RETURN_IF_ERROR(impl->Resume(std::move(loaded)));
  *out = std::move(impl);
  return Status::OK();
}
}  // namespace

Result<Tuner> Tuner::Restore(const char* class_key, const std::string& name,
                             const SearchSpace& space, const TunerOptions* progress) {
  std::string trainable = TrainableClassName(class_key);
  if (trainable.empty()) {
    return Bad("the trainable class is not registered: add CUMULUS_TRAINABLE(YourClass);");
  }
  std::unique_ptr<Impl> impl;
  auto st = RestoreAs(trainable, false, name, space, progress, &impl);
  if (!st.ok()) return st;
  return Tuner(std::move(impl));
}

Result<Tuner> Tuner::Restore(TrainFunction train, const std::string& name, const SearchSpace& space,
                             const TunerOptions* progress) {
  std::string trainable = TrainFunctionName(train);
  if (trainable.empty()) {
    return Bad("the train function is not registered: add CUMULUS_TRAIN_FUNCTION(f);");
  }
  std::unique_ptr<Impl> impl;
  auto st = RestoreAs(trainable, true, name, space, progress, &impl);
  if (!st.ok()) return st;
  return Tuner(std::move(impl));
}

Result<ExperimentResult> Tuner::Run() { return impl_->Run(); }

Result<ExperimentResult> LoadExperiment(const std::string& name) {
  CUMULUS_ASSIGN_OR_RETURN(auto head, ConnectTunerHead());
  CUMULUS_ASSIGN_OR_RETURN(auto loaded, Journal::Load(*head, name));
  ExperimentState state(loaded.spec);
  for (auto& e : loaded.entries) CUMULUS_RETURN_IF_ERROR(state.Apply(e));
  return state.ToResult();
}

// ---- results --------------------------------------------------------------------------------

std::optional<double> TrialResult::last(const std::string& metric) const {
  for (auto it = history.rbegin(); it != history.rend(); ++it) {
    auto m = it->find(metric);
    if (m != it->end()) return m->second;
  }
  return std::nullopt;
}

const TrialResult* ExperimentResult::best() const {
  const TrialResult* best = nullptr;
  double best_value = 0;
  for (auto& t : trials) {
    auto v = t.last(metric);
    if (!v) continue;
    if (best == nullptr || (maximize ? *v > best_value : *v < best_value)) {
      best = &t;
      best_value = *v;
    }
  }
  return best;
}

size_t ExperimentResult::Count(TrialState state) const {
  size_t n = 0;
  for (auto& t : trials) n += t.state == state;
  return n;
}

Result<std::string> ExperimentResult::BestCheckpoint() const {
  const TrialResult* b = best();
  if (b == nullptr || b->checkpoint.key.empty()) return std::string();
  CUMULUS_ASSIGN_OR_RETURN(auto head, ConnectTunerHead());
  JournalEntry e;
  e.checkpoint_key = b->checkpoint.key;
  e.checkpoint_chunks = b->checkpoint.chunks;
  e.checkpoint_bytes = b->checkpoint.bytes;
  return Journal::GetCheckpoint(*head, e);
}

namespace {
// The result as the exports see it (each report's running time is not kept in a result: the
// trial's total is given at its last report).
ExperimentTable TableOf(const ExperimentResult& r) {
  ExperimentTable table;
  table.name = r.name;
  table.metric = r.metric;
  table.maximize = r.maximize;
  table.compute_seconds = r.compute_seconds;
  for (auto& t : r.trials) {
    TrialRow row;
    row.id = t.id;
    row.config = t.config;
    row.state = t.state;
    row.reason = t.reason;
    row.node = t.node;
    row.restarts = t.restarts;
    for (size_t i = 0; i < t.history.size(); ++i) {
      TrialPoint p;
      p.metrics = t.history[i];
      auto it = p.metrics.find("training_iteration");
      p.iteration =
          it == p.metrics.end() ? static_cast<int64_t>(i + 1) : static_cast<int64_t>(it->second);
      p.metrics.erase("training_iteration");
      p.seconds = i + 1 == t.history.size() ? t.seconds : 0;
      row.history.push_back(std::move(p));
    }
    table.trials.push_back(std::move(row));
  }
  return table;
}
}  // namespace

std::string ExperimentResult::ToCsv() const { return TrialsCsv(TableOf(*this)); }
std::string ExperimentResult::ToJson() const { return TrialsJson(TableOf(*this)); }

}  // namespace cumulus::tune
