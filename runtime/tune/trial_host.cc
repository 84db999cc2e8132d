#include "runtime/tune/trial_host.h"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

#include "cumulus/collective.h"
#include "cumulus/cumulus.h"
#include "runtime/tune/journal.h"
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

// ---- the trial's output ---------------------------------------------------------------------

// Takes over fds 1 and 2 with a pipe; a thread copies what comes to the original stdout and ships
// it to the head every half second (or every 64 KiB).
class TrialHost::OutputCapture {
 public:
  // Ships what the trial printed so far and returns when it is in the head's store: called at the
  // end of every iteration, so that a trial stopped (its process killed) right after its report
  // has lost none of its output.
  void Flush() {
    std::fflush(stdout);
    std::fflush(stderr);
    std::unique_lock<std::mutex> lock(mu_);
    uint64_t want = ++flush_requested_;
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return flush_done_ >= want || ended_; });
  }

  static std::unique_ptr<OutputCapture> Start(std::string key, int rank) {
    CoreWorker* rt = CurrentCoreWorker();
    if (rt == nullptr || key.empty()) return nullptr;
    int fds[2];
    if (pipe(fds) != 0) return nullptr;
    std::fflush(stdout);
    std::fflush(stderr);
    auto c = std::unique_ptr<OutputCapture>(new OutputCapture());
    c->key_ = std::move(key);
    c->rank_ = rank;
    c->saved_out_ = dup(1);
    c->saved_err_ = dup(2);
    c->read_ = fds[0];
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[1]);
    setvbuf(stdout, nullptr, _IOLBF, 0);
    c->thread_ = std::thread([p = c.get(), rt] { p->Run(rt); });
    return c;
  }

  ~OutputCapture() {
    std::fflush(stdout);
    std::fflush(stderr);
    dup2(saved_out_, 1);  // the pipe's last write ends close: the thread reads to the end
    dup2(saved_err_, 2);
    if (thread_.joinable()) thread_.join();
    close(read_);
    close(saved_out_);
    close(saved_err_);
  }

 private:
  OutputCapture() = default;

  void Run(CoreWorker* rt) {
    std::string pending;
    auto last_ship = std::chrono::steady_clock::now();
    char buf[1 << 14];
    while (true) {
      uint64_t flush_wanted;
      {
        std::lock_guard<std::mutex> lock(mu_);
        flush_wanted = flush_requested_;
      }
      bool flushing = flush_wanted > flush_done_seen_;
      pollfd p{read_, POLLIN, 0};
      int ready = poll(&p, 1, flushing ? 0 : 50);
      bool eof = false;
      if (ready > 0) {
        ssize_t n = read(read_, buf, sizeof(buf));
        if (n > 0) {
          (void)!write(saved_out_, buf, static_cast<size_t>(n));
          pending.append(buf, static_cast<size_t>(n));
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          eof = true;  // every write end is closed (or the pipe failed): nothing more comes
        }
      }
      bool drained = ready == 0;  // nothing more to read right now
      auto now = std::chrono::steady_clock::now();
      if (!pending.empty() && (eof || (flushing && drained) || pending.size() >= (64u << 10) ||
                               now - last_ship >= std::chrono::milliseconds(500))) {
        Ship(rt, pending);
        pending.clear();
        last_ship = now;
      }
      if (flushing && (drained || eof)) {
        flush_done_seen_ = flush_wanted;
        std::lock_guard<std::mutex> lock(mu_);
        flush_done_ = flush_wanted;
        cv_.notify_all();
      }
      if (eof) {
        std::lock_guard<std::mutex> lock(mu_);
        ended_ = true;
        cv_.notify_all();
        return;
      }
    }
  }

  void Ship(CoreWorker* rt, const std::string& bytes) {
    auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    char suffix[64];
    std::snprintf(suffix, sizeof(suffix), "/%016lld-%d-%06llu", static_cast<long long>(micros),
                  rank_, static_cast<unsigned long long>(seq_++));
    // Best effort: a head that does not answer loses this chunk from the trial's log, not from
    // the job's output (written above).
    (void)rt->KvPut(kTrialLogsNamespace, key_ + suffix, bytes);
  }

  std::string key_;
  int rank_ = 0;
  uint64_t seq_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t flush_requested_ = 0, flush_done_ = 0;
  uint64_t flush_done_seen_ = 0;  // the reader thread's own copy
  bool ended_ = false;
  int saved_out_ = -1, saved_err_ = -1, read_ = -1;
  std::thread thread_;
};

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

TrialHost::TrialHost(TrialSpec spec) : spec_(std::move(spec)) {
  output_ = OutputCapture::Start(spec_.log_key, spec_.rank);
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
  if (output_) output_->Flush();
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
