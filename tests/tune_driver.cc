// The tuner on a real cluster (driven by tune_test.cc): a trainable whose metric follows a known
// curve of its config, so the test knows what each trial must report.
//
//   tune_driver --scenario=run|restore|gang|function|function-pbt[-restore]|bad --name=EXP
//   [--samples=N] [--iters=N]
//               [--step-ms=MS] [--scheduler=S] [--gang=N] [--cpus=N] [--dir=D]
//               [--concurrent=N] [--pending=N (max_pending_trials)]
//               [--budget-fraction=F (the budget scheduler's budget_fraction)]
//               [--time-budget=S (seconds)] [--checkpoint-every=N]
//               [--fail-rank=R (a gang's rank R throws at its iteration 2)]
//
// It prints "RESULT ..." lines and then DONE.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <unistd.h>

#include <cumulus/cumulus.h>
#include <cumulus/tune.h>

namespace tune = cumulus::tune;

namespace {

// The curve every trial follows: rises to a ceiling that is highest at lr = 0.01.
double Curve(double lr, int64_t iteration) {
  double ceiling = 1.0 - std::fabs(std::log10(lr) + 2.0) / 3.0;
  return ceiling * (1.0 - std::exp(-static_cast<double>(iteration) / 3.0));
}

class Quadratic : public tune::Trainable {
 public:
  void Setup(const tune::Config& c) override {
    lr_ = c.Get<double>("lr");
    step_ms_ = c.Get<int64_t>("step_ms");
    metric_ = c.Get<std::string>("metric");
    if (c.Get<bool>("fail")) throw std::runtime_error("this trial fails on purpose");
    if (c.Has("fail_rank")) fail_rank_ = c.Get<int64_t>("fail_rank");
    quiet_ = c.Has("quiet");
  }
  tune::Metrics Step() override {
    ++iteration_;
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms_));
    double acc = Curve(lr_, iteration_);
    if (group() != nullptr && trial().rank == fail_rank_ && iteration_ == 2)
      throw std::runtime_error("rank " + std::to_string(fail_rank_) + " fails on purpose");
    if (group() != nullptr) {  // a gang: the ranks agree on the mean of their values
      double v = acc * (trial().rank + 1);
      auto st = group()->AllReduce(&v, 1, cumulus::DType::kFloat64, cumulus::ReduceOp::kSum);
      if (!st.ok()) throw std::runtime_error(st.message());
      int n = trial().world_size;
      return {{metric_, v / (n * (n + 1) / 2.0)}, {"world", static_cast<double>(n)}};
    }
    if (!quiet_) {
      std::printf("trial %s iteration %lld acc %.4f\n", trial().trial_id.c_str(),
                  static_cast<long long>(iteration_), acc);
      std::fflush(stdout);
    }
    // "state": the trainable's own step count, which Save() stores and Restore() takes, so a
    // test can tell from the journal which weights an exploit copied.
    return {{metric_, acc},
            {"pid", static_cast<double>(getpid())},
            {"state", static_cast<double>(iteration_)}};
  }
  std::string Save() override { return std::to_string(iteration_); }
  void Restore(const std::string& bytes) override { iteration_ = std::stoll(bytes); }

 private:
  double lr_ = 0;
  int64_t step_ms_ = 0, iteration_ = 0, fail_rank_ = -1;
  bool quiet_ = false;  // prints nothing (`--quiet=1`)
  std::string metric_;
};
CUMULUS_TRAINABLE(Quadratic);

void Train(tune::TrialContext& ctx, const tune::Config& c) {
  double lr = c.Get<double>("lr");
  int64_t start = 0;
  if (auto ck = ctx.LoadCheckpoint()) start = std::stoll(*ck);
  for (int64_t it = start + 1;; ++it) {
    std::this_thread::sleep_for(std::chrono::milliseconds(c.Get<int64_t>("step_ms")));
    if (c.Has("no_checkpoint")) {
      ctx.Report({{"accuracy", Curve(lr, it)}});  // (PBT has nothing to copy: skipped exploits)
    } else {
      ctx.Report({{"accuracy", Curve(lr, it)}}, std::to_string(it));
    }
    if (it >= 6) return;  // a function may end by itself before max_iterations
  }
}
CUMULUS_TRAIN_FUNCTION(Train);

std::string Flag(int argc, char** argv, const std::string& name, const std::string& def) {
  std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) return argv[i] + prefix.size();
  }
  return def;
}

tune::SearchSpace Space(int64_t step_ms, bool with_failure, int64_t fail_rank, bool quiet) {
  tune::SearchSpace s;
  if (fail_rank >= 0) s.Choice("fail_rank", {fail_rank});
  if (quiet) s.Choice("quiet", {true});
  s.LogUniform("lr", 1e-4, 1.0)
      .Choice("step_ms", {step_ms})
      .Choice("metric", {std::string("accuracy")})
      .Conditional("fail", [with_failure](const tune::Config& c) {
        return tune::Value{with_failure && c.Get<double>("lr") > 0.3};
      });
  return s;
}

void Print(const tune::ExperimentResult& r) {
  std::printf("RESULT trials=%zu finished=%zu stopped=%zu failed=%zu paused=%zu\n", r.trials.size(),
              r.Count(tune::TrialState::kFinished), r.Count(tune::TrialState::kStoppedEarly),
              r.Count(tune::TrialState::kFailed), r.Count(tune::TrialState::kPaused));
  for (auto& t : r.trials) {
    auto last = t.last(r.metric);
    double world =
        t.history.empty() || !t.history.back().count("world") ? 1 : t.history.back().at("world");
    std::printf(
        "TRIAL %s state=%s iterations=%zu restarts=%d last=%.6f world=%.0f node=%s "
        "reason=%s\n",
        t.id.c_str(), tune::TrialStateName(t.state), t.history.size(), t.restarts,
        last ? *last : -1.0, world, t.node.c_str(), t.reason.c_str());
  }
  if (auto* b = r.best()) std::printf("BEST %s %s\n", b->id.c_str(), b->config.ToString().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (auto st = cumulus::Init(argc, argv); !st.ok()) {
    std::fprintf(stderr, "init: %s\n", st.ToString().c_str());
    return 1;
  }
  std::string scenario = Flag(argc, argv, "scenario", "run");
  tune::TunerOptions o;
  o.name = Flag(argc, argv, "name", "exp");
  o.metric = "accuracy";
  o.num_samples = std::stoull(Flag(argc, argv, "samples", "12"));
  o.max_iterations = std::stoll(Flag(argc, argv, "iters", "9"));
  o.scheduler.kind = Flag(argc, argv, "scheduler", "asha");
  o.scheduler.reduction_factor = 3;
  if (std::string f = Flag(argc, argv, "budget-fraction", ""); !f.empty())
    o.scheduler.budget_fraction = std::stod(f);
  o.seed = 7;
  o.time_budget = std::chrono::seconds(std::stoll(Flag(argc, argv, "time-budget", "0")));
  o.checkpoint_every = std::stoll(Flag(argc, argv, "checkpoint-every", "1"));
  o.max_concurrent_trials = std::stoi(Flag(argc, argv, "concurrent", "0"));
  if (std::string pending = Flag(argc, argv, "pending", ""); !pending.empty())
    o.max_pending_trials = std::stoi(pending);
  o.gang_size = std::stoi(Flag(argc, argv, "gang", "1"));
  if (std::string cpus = Flag(argc, argv, "cpus", ""); !cpus.empty())
    o.resources_per_trial = {{"CPU", std::stod(cpus)}};
  o.progress = "lines";
  o.max_failures = 2;
  int64_t step_ms = std::stoll(Flag(argc, argv, "step-ms", "50"));
  bool with_failure = Flag(argc, argv, "with-failure", "0") == "1";
  tune::SearchSpace space =
      Space(step_ms, with_failure, std::stoll(Flag(argc, argv, "fail-rank", "-1")),
            Flag(argc, argv, "quiet", "0") == "1");
  int rc = 0;
  // Runs the tuner (or says why it could not be made or run) and prints its result.
  auto run = [&](cumulus::Result<tune::Tuner> tuner) {
    auto r = tuner.ok() ? tuner->Run() : cumulus::Result<tune::ExperimentResult>(tuner.status());
    if (!r.ok()) {
      std::printf("ERROR %s\n", r.status().ToString().c_str());
      rc = 1;
    } else {
      Print(*r);
    }
  };
  if (scenario == "run" || scenario == "gang") {
    run(tune::Tuner::Create<Quadratic>(space, o));
  } else if (scenario == "restore") {
    run(tune::Tuner::Restore<Quadratic>(o.name, space));
  } else if (scenario == "function") {
    o.scheduler.kind = "fifo";
    run(tune::Tuner::Create(Train, space, o));
  } else if (scenario == "function-pbt" || scenario == "function-pbt-restore") {
    // A train function that reports no checkpoint, under PBT: every exploit is skipped.
    space.Choice("no_checkpoint", {true});
    o.scheduler.kind = "pbt";
    run(scenario == "function-pbt" ? tune::Tuner::Create(Train, space, o)
                                   : tune::Tuner::Restore(Train, o.name, space));
  } else if (scenario == "bad") {
    // Each bad input is one line naming what is wrong.
    tune::SearchSpace empty;
    auto a = tune::Tuner::Create<Quadratic>(empty, o);
    std::printf("BAD empty-space %s\n", a.ok() ? "accepted" : a.status().ToString().c_str());
    tune::TunerOptions m = o;
    m.mode = "up";
    auto b = tune::Tuner::Create<Quadratic>(space, m);
    std::printf("BAD mode %s\n", b.ok() ? "accepted" : b.status().ToString().c_str());
    tune::TunerOptions budget = o;
    budget.scheduler.kind = "budget";
    budget.scheduler.budget_fraction = 1.5;
    auto bf = tune::Tuner::Create<Quadratic>(space, budget);
    std::printf("BAD budget %s\n", bf.ok() ? "accepted" : bf.status().ToString().c_str());
    auto c = tune::Tuner::Restore<Quadratic>("no-such-experiment", space);
    std::printf("BAD restore %s\n", c.ok() ? "accepted" : c.status().ToString().c_str());
    tune::TunerOptions w = o;
    w.metric = "loss";  // the trainable never reports it
    w.name = o.name + "-wrong-metric";
    w.num_samples = 1;
    auto d = tune::Tuner::Create<Quadratic>(space, w);
    auto dr = d.ok() ? d->Run() : cumulus::Result<tune::ExperimentResult>(d.status());
    std::printf("BAD metric %s\n", !dr.ok()             ? dr.status().ToString().c_str()
                                   : dr->trials.empty() ? "no trial"
                                                        : dr->trials[0].reason.c_str());
    tune::TunerOptions huge = o;
    huge.name = o.name + "-huge";
    huge.num_samples = 1;
    huge.resources_per_trial = {{"CPU", 1000}};  // no node has that many
    auto h = tune::Tuner::Create<Quadratic>(space, huge);
    auto hr = h.ok() ? h->Run() : cumulus::Result<tune::ExperimentResult>(h.status());
    std::printf("BAD infeasible %s\n", !hr.ok()             ? hr.status().ToString().c_str()
                                       : hr->trials.empty() ? "no trial"
                                                            : hr->trials[0].reason.c_str());
    auto again = tune::Tuner::Create<Quadratic>(space, w);
    std::printf("BAD exists %s\n", again.ok() ? "accepted" : again.status().ToString().c_str());
  }
  cumulus::Shutdown();
  std::printf("DONE\n");
  std::fflush(stdout);
  return rc;
}
