// The running job of shell_session_test: what a user sits in `cumulus shell` beside. It
//   - starts a named actor "counter" (Counter::Increment, Read) and registers Square, so that
//     `cumulus call JOB Square 7` and `cumulus kill counter` have something to act on;
//   - submits one task that needs `unobtainium`, which no node and no node type has: it stays
//     pending, and `cumulus describe task` says why;
//   - prints "READY job=<hex>", then runs the tuning experiment "session": --samples trials of
//     class Ticker, each asking for CPU=--trial-cpus (more than the on-prem node has, so the
//     autoscaler launches a node for them), printing a line per iteration, until the file
//     DIR/stop-trials exists (the test's barrier: the trials end when the test says so);
//   - prints "TUNED ..." once the experiment ended, and stays up (its job RUNNING) until its
//     stdin closes.
//
//   shell_session_driver --dir=D [--samples=N] [--trial-cpus=C] [--step-ms=MS]
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <thread>

#include <cumulus/cumulus.h>
#include <cumulus/tune.h>

#include "driver_checks.h"

namespace tune = cumulus::tune;

namespace {

int64_t Square(int64_t x) { return x * x; }

int Impossible() { return 0; }

class Counter {
 public:
  explicit Counter(int start) : value_(start) {}
  int Increment(int by) { return value_ += by; }
  int Read() const { return value_; }

 private:
  int value_;
};
Counter* MakeCounter(int start) { return new Counter(start); }

CUMULUS_REMOTE(Square, Impossible, MakeCounter, &Counter::Increment, &Counter::Read);

// A trial that ticks every step_ms, printing a line per iteration, until stop_file exists
// (reported as done=1, the experiment's stop condition).
class Ticker : public tune::Trainable {
 public:
  void Setup(const tune::Config& c) override {
    step_ms_ = c.Get<int64_t>("step_ms");
    stop_file_ = c.Get<std::string>("stop_file");
  }
  tune::Metrics Step() override {
    ++iteration_;
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms_));
    std::printf("trial %s tick %lld\n", trial().trial_id.c_str(),
                static_cast<long long>(iteration_));
    std::fflush(stdout);
    bool stop = access(stop_file_.c_str(), F_OK) == 0;
    return {{"ticks", static_cast<double>(iteration_)}, {"done", stop ? 1.0 : 0.0}};
  }

 private:
  int64_t step_ms_ = 0, iteration_ = 0;
  std::string stop_file_;
};
CUMULUS_TRAINABLE(Ticker);

}  // namespace

int main(int argc, char** argv) {
  if (auto st = cumulus::Init(argc, argv); !st.ok()) {
    std::printf("CHECK init FAIL %s\n", st.ToString().c_str());
    return 1;
  }
  auto args = driver::Args(argc, argv);
  auto flag = [&](const std::string& name, const std::string& def) {
    return args.count(name) ? args[name] : def;
  };
  auto counter = cumulus::Actor(MakeCounter).SetName("counter").Remote(0);
  // Once a call has answered, the actor runs (its address is published on its way).
  int zero = cumulus::Get(counter.Task(&Counter::Read).Remote());
  // Held until the end: dropping it could cancel the task.
  auto impossible = cumulus::Task(Impossible).SetResource("unobtainium", 1).Remote();
  std::printf("READY job=%s counter=%d\n",
              cumulus::internal::CurrentRuntime()->job_id().Hex().c_str(), zero);
  std::fflush(stdout);

  tune::SearchSpace space;
  space.Choice("step_ms", {static_cast<int64_t>(std::stoll(flag("step-ms", "200")))})
      .Choice("stop_file", {flag("dir", ".") + "/stop-trials"});
  tune::TunerOptions o;
  o.name = "session";
  o.metric = "ticks";
  o.num_samples = std::stoull(flag("samples", "2"));
  o.scheduler.kind = "fifo";
  o.max_iterations = 100000;  // the stop file ends them
  o.stop = {{"done", 1}};
  o.resources_per_trial = {{"CPU", std::stod(flag("trial-cpus", "2"))}};
  o.checkpoint_every = 0;
  o.progress = "off";
  auto tuner = tune::Tuner::Create<Ticker>(space, o);
  auto result = tuner.ok() ? tuner->Run() : cumulus::Result<tune::ExperimentResult>(tuner.status());
  if (result.ok()) {
    std::printf("TUNED trials=%zu finished=%zu failed=%zu\n", result->trials.size(),
                result->Count(tune::TrialState::kFinished),
                result->Count(tune::TrialState::kFailed));
  } else {
    std::printf("TUNED error %s\n", result.status().ToString().c_str());
  }
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  cumulus::Shutdown();
  std::printf("DONE\n");
  std::fflush(stdout);
  return 0;
}
