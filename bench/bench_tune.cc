// bench_tune: what the live tuner costs over the runtime it drives, on the embedded cluster.
//
//   build/bin/bench_tune [--trials N] [--reports R] [--sequential S] [--runs K] [--json]
//
// Three measurements, each with its anchor measured in the same run:
//   trials/s      N trials of a trivial trainable (R reports each, FIFO: every trial to the end)
//                 against the same work done by hand: N actors created, R calls each, killed,
//                 with as many at once as the tuner runs.
//   one report    one trial of S reports, one after another: wall time per report against one
//                 plain actor method call (S calls in a row on one actor). A report is a call
//                 plus the scheduler's decision plus a journal entry written to the head.
// Defaults: 1,000 trials x 10 reports, 2,000 sequential reports, 3 runs (medians printed).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <cumulus/cumulus.h>
#include <cumulus/tune.h>

namespace tune = cumulus::tune;
using Clock = std::chrono::steady_clock;

namespace {

class Trivial : public tune::Trainable {
 public:
  void Setup(const tune::Config&) override {}
  tune::Metrics Step() override { return {{"score", static_cast<double>(++n_)}}; }

 private:
  int64_t n_ = 0;
};
CUMULUS_TRAINABLE(Trivial);

// The anchor: an actor with one trivial method.
class Plain {
 public:
  double Step() { return static_cast<double>(++n_); }

 private:
  int64_t n_ = 0;
};
Plain* MakePlain() { return new Plain(); }
CUMULUS_REMOTE(MakePlain, &Plain::Step);

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "bench_tune: %s\nusage: bench_tune [--trials N] [--reports R] [--sequential S] "
               "[--runs K] [--json]\n",
               why);
  std::exit(2);
}

long Number(const char* flag, const char* text, long lo, long hi) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) {
    std::fprintf(stderr, "bench_tune: %s must be a whole number from %ld to %ld, got '%s'\n", flag,
                 lo, hi, text);
    std::exit(2);
  }
  return v;
}

tune::TunerOptions Options(const std::string& name, uint64_t samples, int64_t reports) {
  tune::TunerOptions o;
  o.name = name;
  o.metric = "score";
  o.num_samples = samples;
  o.max_iterations = reports;
  o.scheduler.kind = "fifo";
  o.checkpoint_every = 0;
  o.progress = "off";
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  long trials = 1000, reports = 10, sequential = 2000, runs = 3;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char* flag) {
      if (i + 1 >= argc) Usage((std::string(flag) + " needs a value").c_str());
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--trials")) {
      trials = Number("--trials", value("--trials"), 1, 1000000);
    } else if (!std::strcmp(argv[i], "--reports")) {
      reports = Number("--reports", value("--reports"), 1, 100000);
    } else if (!std::strcmp(argv[i], "--sequential")) {
      sequential = Number("--sequential", value("--sequential"), 1, 1000000);
    } else if (!std::strcmp(argv[i], "--runs")) {
      runs = Number("--runs", value("--runs"), 1, 100);
    } else if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else if (!std::strcmp(argv[i], "--help")) {
      std::printf(
          "usage: bench_tune [--trials N] [--reports R] [--sequential S] [--runs K] "
          "[--json]\n");
      return 0;
    } else if (std::strncmp(argv[i], "--", 2) == 0) {
      Usage((std::string("unknown flag ") + argv[i]).c_str());
    }
  }
  if (auto st = cumulus::Init(argc, argv); !st.ok()) {
    std::fprintf(stderr, "bench_tune: %s\n", st.ToString().c_str());
    return 1;
  }
  tune::SearchSpace space;
  space.Uniform("x", 0, 1);
  std::string stamp = std::to_string(getpid());
  std::vector<double> tuner_tps, plain_tps, report_us, call_us;
  size_t concurrency = 0;
  for (long run = 0; run < runs; ++run) {
    // Trials per second, through the tuner.
    auto o = Options("bench-tune-" + stamp + "-" + std::to_string(run), trials, reports);
    auto tuner = tune::Tuner::Create<Trivial>(space, o);
    if (!tuner.ok()) {
      std::fprintf(stderr, "bench_tune: %s\n", tuner.status().ToString().c_str());
      return 1;
    }
    auto t0 = Clock::now();
    auto r = tuner->Run();
    double tuner_s = Seconds(t0);
    if (!r.ok() || r->Count(tune::TrialState::kFinished) != static_cast<size_t>(trials)) {
      std::fprintf(stderr, "bench_tune: the tuner run failed: %s\n",
                   r.ok() ? "not every trial finished" : r.status().ToString().c_str());
      return 1;
    }
    tuner_tps.push_back(trials / tuner_s);
    // The same work by hand, as many actors at once as the embedded node has CPUs (what the
    // tuner runs at once: one CPU per trial).
    concurrency = std::max<size_t>(1, std::thread::hardware_concurrency());
    t0 = Clock::now();
    for (long first = 0; first < trials; first += static_cast<long>(concurrency)) {
      long n = std::min<long>(static_cast<long>(concurrency), trials - first);
      std::vector<cumulus::ActorHandle<Plain>> actors;
      for (long i = 0; i < n; ++i)
        actors.push_back(cumulus::Actor(MakePlain).SetResource("CPU", 1).Remote());
      for (long k = 0; k < reports; ++k) {
        std::vector<cumulus::ObjectRef<double>> refs;
        for (auto& a : actors) refs.push_back(a.Task(&Plain::Step).Remote());
        for (auto& ref : refs) (void)cumulus::Get(ref);
      }
      for (auto& a : actors) (void)a.Kill();
    }
    plain_tps.push_back(trials / Seconds(t0));

    // One report, one after another.
    auto seq = Options("bench-tune-seq-" + stamp + "-" + std::to_string(run), 1, sequential);
    auto one = tune::Tuner::Create<Trivial>(space, seq);
    if (!one.ok()) return 1;
    t0 = Clock::now();
    auto r1 = one->Run();
    if (!r1.ok()) return 1;
    report_us.push_back(Seconds(t0) / sequential * 1e6);
    auto actor = cumulus::Actor(MakePlain).Remote();
    (void)cumulus::Get(actor.Task(&Plain::Step).Remote());  // placed and warm
    t0 = Clock::now();
    for (long k = 0; k < sequential; ++k) (void)cumulus::Get(actor.Task(&Plain::Step).Remote());
    call_us.push_back(Seconds(t0) / sequential * 1e6);
    (void)actor.Kill();
  }
  double tt = Median(tuner_tps), pt = Median(plain_tps), ru = Median(report_us),
         cu = Median(call_us);
  if (json) {
    // The command that reproduces it, as the text output's first line gives it.
    std::printf(
        "{\"command\": \"bench_tune --trials %ld --reports %ld --sequential %ld --runs %ld "
        "--json\", \"trials_per_s\": %.2f, \"plain_trials_per_s\": %.2f, \"ratio\": %.3f, "
        "\"report_us\": %.1f, \"actor_call_us\": %.1f, \"report_ratio\": %.3f}\n",
        trials, reports, sequential, runs, tt, pt, tt / pt, ru, cu, ru / cu);
  } else {
    std::printf(
        "bench_tune --trials %ld --reports %ld --sequential %ld --runs %ld (medians of %ld "
        "runs; embedded cluster, %zu actors at once by hand)\n",
        trials, reports, sequential, runs, runs, concurrency);
    std::printf("  trials/s:   tuner %.1f   by hand (create, %ld calls, kill) %.1f   ratio %.2f\n",
                tt, reports, pt, tt / pt);
    std::printf("  one report: tuner %.0f us   plain actor call %.0f us   ratio %.2f\n", ru, cu,
                ru / cu);
  }
  cumulus::Shutdown();
  return 0;
}
