#include "runtime/tune/trial_host.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

#include "cumulus/collective.h"
#include "cumulus/cumulus.h"
#include "runtime/tune/journal.h"
#include "runtime/tune/output_capture.h"
#include "workers/core_worker.h"

namespace cumulus::tune {

// ---- the registry of trainables -------------------------------------------------------------

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<Trainable> (*)()> classes;  // name -> make
  std::map<std::string, std::string> class_names;                   // typeid name -> name
  std::map<std::string, TrainFunction> functions;                   // name -> function
  std::map<TrainFunction, std::string> function_names;
};

Registry& Trainables() {
  static Registry* r = new Registry();
  return *r;
}

std::string Normalize(const char* spelled) {
  std::string s(spelled);
  while (!s.empty() && (s[0] == '&' || s[0] == ':' || s[0] == ' ')) s.erase(0, 1);
  return s;
}

}  // namespace

namespace internal {
bool RegisterTrainableClass(const char* spelled, const char* class_key,
                            std::unique_ptr<Trainable> (*make)()) {
  auto& r = Trainables();
  std::lock_guard<std::mutex> lock(r.mu);
  std::string name = Normalize(spelled);
  r.classes[name] = make;
  r.class_names[class_key] = name;
  return true;
}

bool RegisterTrainFunction(const char* spelled, TrainFunction f) {
  auto& r = Trainables();
  std::lock_guard<std::mutex> lock(r.mu);
  std::string name = Normalize(spelled);
  r.functions[name] = f;
  r.function_names[f] = name;
  return true;
}
}  // namespace internal

std::string TrainableClassName(const char* class_key) {
  auto& r = Trainables();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.class_names.find(class_key);
  return it == r.class_names.end() ? std::string() : it->second;
}

std::string TrainFunctionName(TrainFunction f) {
  auto& r = Trainables();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.function_names.find(f);
  return it == r.function_names.end() ? std::string() : it->second;
}

// ---- function trainables --------------------------------------------------------------------

namespace {
// Thrown out of Report when the host goes away while the function waits there; not derived from
// std::exception, so a trainable's `catch (const std::exception&)` lets it pass.
struct TrialOver {};
}  // namespace

class TrialHost::FunctionRunner : public TrialContext {
 public:
  FunctionRunner(TrainFunction f, Config config, TrialInfo* info, CollectiveGroup* group,
                 std::optional<std::string> checkpoint)
      : f_(f),
        config_(std::move(config)),
        info_(info),
        group_(group),
        start_checkpoint_(std::move(checkpoint)) {}

  ~FunctionRunner() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      over_ = true;
    }
    cv_.notify_all();
    // The function returns at its next Report; a trial is stopped by ending its process, so
    // this join waits only when the host is destroyed in an orderly way.
    if (thread_.joinable()) thread_.join();
  }

  // The next report, or done, or the function's error (rethrown).
  StepResult Next() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!thread_.joinable()) {
      thread_ = std::thread([this] { Run(); });
    } else {
      go_ = true;
      cv_.notify_all();
    }
    cv_.wait(lock, [&] { return has_report_ || finished_; });
    StepResult out;
    if (has_report_) {
      has_report_ = false;
      out.metrics = std::move(report_);
      if (report_checkpoint_) {
        out.has_checkpoint = true;
        out.checkpoint = *report_checkpoint_;
        last_checkpoint_ = std::move(report_checkpoint_);
        report_checkpoint_.reset();
      }
      return out;
    }
    if (error_) std::rethrow_exception(error_);
    out.done = true;
    return out;
  }

  std::string LastCheckpoint() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_checkpoint_.value_or(std::string());
  }

  void Report(const Metrics& metrics, std::optional<std::string> checkpoint) override {
    std::unique_lock<std::mutex> lock(mu_);
    report_ = metrics;
    report_checkpoint_ = std::move(checkpoint);
    has_report_ = true;
    ++info_->iteration;
    cv_.notify_all();
    cv_.wait(lock, [&] { return go_ || over_; });
    go_ = false;
    if (over_) throw TrialOver{};
  }

  std::optional<std::string> LoadCheckpoint() override { return start_checkpoint_; }
  const TrialInfo& trial() const override { return *info_; }
  CollectiveGroup* group() const override { return group_; }

 private:
  void Run() {
    std::exception_ptr error;
    try {
      f_(*this, config_);
    } catch (const TrialOver&) {
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    error_ = error;
    finished_ = true;
    cv_.notify_all();
  }

  TrainFunction f_;
  Config config_;
  TrialInfo* info_;
  CollectiveGroup* group_;
  std::optional<std::string> start_checkpoint_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  bool go_ = false, over_ = false, has_report_ = false, finished_ = false;
  Metrics report_;
  std::optional<std::string> report_checkpoint_, last_checkpoint_;
  std::exception_ptr error_;
};

// ---- the host -------------------------------------------------------------------------------

namespace {
// The trial's output, shipped to the head under `key` (JOB/EXPERIMENT/TRIAL) in chunks named by
// time, rank and sequence; nullptr outside a worker or without a key.
std::unique_ptr<OutputCapture> StartOutputCapture(const std::string& key, int rank) {
  CoreWorker* rt = CurrentCoreWorker();
  if (rt == nullptr || key.empty()) return nullptr;
  auto seq = std::make_shared<uint64_t>(0);
  return OutputCapture::Start([rt, key, rank, seq](const std::string& bytes) {
    auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    char suffix[64];
    std::snprintf(suffix, sizeof(suffix), "/%016lld-%d-%06llu", static_cast<long long>(micros),
                  rank, static_cast<unsigned long long>((*seq)++));
    // Best effort: a head that does not answer loses this chunk from the trial's log, not from
    // the job's output (the capture copies it to the original stdout).
    (void)rt->KvPut(kTrialLogsNamespace, key + suffix, bytes);
  });
}
}  // namespace

TrialHost::TrialHost(TrialSpec spec) : spec_(std::move(spec)) {
  output_ = StartOutputCapture(spec_.log_key, spec_.rank);
  info_.experiment = spec_.experiment;
  info_.trial_id = spec_.trial_id;
  info_.rank = spec_.rank;
  info_.world_size = spec_.world_size;
  info_.iteration = spec_.start_iteration;
}

TrialHost::~TrialHost() {
  function_.reset();
  trainable_.reset();
  group_.reset();
  output_.reset();
}

void TrialHost::Start() {
  auto config = Config::Decode(spec_.config);
  if (!config.ok())
    throw std::invalid_argument("trial " + spec_.trial_id + ": " + config.status().message());
  config_ = std::move(*config);
  if (spec_.world_size > 1) {
    auto g = JoinCollectiveGroup(spec_.group, spec_.world_size, spec_.rank);
    if (!g.ok()) throw std::runtime_error(g.status().message());
    group_ = std::move(*g);
  }
  std::optional<std::string> checkpoint;
  if (spec_.has_checkpoint) checkpoint = spec_.checkpoint;
  auto& r = Trainables();
  if (spec_.is_function) {
    TrainFunction f = nullptr;
    {
      std::lock_guard<std::mutex> lock(r.mu);
      auto it = r.functions.find(spec_.trainable);
      if (it != r.functions.end()) f = it->second;
    }
    if (f == nullptr) {
      throw std::invalid_argument("train function " + spec_.trainable +
                                  " is not registered in this program (CUMULUS_TRAIN_FUNCTION)");
    }
    function_ = std::make_unique<FunctionRunner>(f, config_, &info_, group_.get(), checkpoint);
  } else {
    std::unique_ptr<Trainable> (*make)() = nullptr;
    {
      std::lock_guard<std::mutex> lock(r.mu);
      auto it = r.classes.find(spec_.trainable);
      if (it != r.classes.end()) make = it->second;
    }
    if (make == nullptr) {
      throw std::invalid_argument("trainable " + spec_.trainable +
                                  " is not registered in this program (CUMULUS_TRAINABLE)");
    }
    trainable_ = make();
    trainable_->info_ = info_;
    trainable_->group_ = group_.get();
    trainable_->Setup(config_);
    if (checkpoint && !checkpoint->empty()) trainable_->Restore(*checkpoint);
  }
  started_ = true;
}

StepResult TrialHost::Step(bool checkpoint) {
  auto t0 = std::chrono::steady_clock::now();
  if (!started_) Start();
  StepResult out;
  if (function_) {
    out = function_->Next();
  } else {
    out.metrics = trainable_->Step();
    ++info_.iteration;
    trainable_->info_ = info_;
    if (checkpoint) {
      out.checkpoint = trainable_->Save();
      out.has_checkpoint = !out.checkpoint.empty();
    }
  }
  // The trial's output reaches the head before its report does (a trial stopped right after it
  // loses none): a thread hop, not a wait (OutputCapture).
  if (output_) (void)output_->Flush();
  out.node = CurrentNodeId().Hex();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::string TrialHost::Save() {
  if (!started_) return spec_.has_checkpoint ? spec_.checkpoint : std::string();
  if (function_) return function_->LastCheckpoint();
  return trainable_->Save();
}

std::string TrialHost::Where() { return CurrentNodeId().Hex(); }

TrialHost* MakeTrialHost(TrialSpec spec) { return new TrialHost(std::move(spec)); }

}  // namespace cumulus::tune

CUMULUS_REMOTE(cumulus::tune::MakeTrialHost, &cumulus::tune::TrialHost::Step,
               &cumulus::tune::TrialHost::Save, &cumulus::tune::TrialHost::Where);
