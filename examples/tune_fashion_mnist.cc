// Hyperparameter tuning of examples/fashion_mnist.cc's MLP (learning rate, hidden width, batch
// size, momentum) with ASHA: every trial is an actor (or, with --workers-per-trial W, a gang of W
// actors training data-parallel), the scheduler stops the weak ones after their first epochs, and
// the driver prints the best config, its accuracy on the test set (from its checkpoint), how many
// trials were stopped early and the compute that saved. Without CUMULUS_ADDRESS it runs on an
// embedded cluster whose state is kept in --cluster-dir, so that a killed run continues with
// --restore EXP.
//
//   build/bin/tune_fashion_mnist [--samples N] [--epochs E] [--train-limit K]
//                                [--scheduler NAME] [--workers-per-trial W] [--name EXP]
//                                [--restore EXP] [--seed S] [--data DIR] [--cluster-dir DIR]
//                                [--min-accuracy PCT] [--budget-fraction F]
//
// Trials are scored on validation accuracy: the last 5,000 training images, which no trial trains
// on; the test set is used once, for the best trial. The model and the dataset code are
// fashion_mnist.cc's (mlp_cpu.h, fashion_mnist_data.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <cumulus/collective.h>
#include <cumulus/cumulus.h>
#include <cumulus/tune.h>

#include "fashion_mnist_data.h"
#include "mlp_cpu.h"
#include "mlp_model.h"

namespace tune = cumulus::tune;

namespace {

constexpr int kSeed = 1;  // initial weights and batch order: trials differ only in their config
constexpr int kValidationFirst = 55000, kValidationSize = 5000;  // of the 60,000 training images
constexpr char kMetric[] = "val_accuracy";

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Fraction of `d` the model classifies right.
double Accuracy(Model& model, const Dataset& d) {
  int correct = 0;
  for (int at = 0; at < d.n; at += 1000) {
    int m = std::min(1000, d.n - at);
    model.Forward(d.x.data() + size_t(at) * 784, d.y.data() + at, m, &correct);
  }
  return static_cast<double>(correct) / std::max(d.n, 1);
}

// A checkpoint: the epochs done, the width, and the parameters and momentum buffers.
struct Checkpoint {
  int64_t epoch = 0, width = 0;
  std::vector<float> params, velocity;
};

constexpr char kCheckpointMagic[8] = {'F', 'M', 'L', 'P', 'c', 'k', '1', '\0'};

std::string EncodeCheckpoint(int64_t epoch, int64_t width, const Mlp& model) {
  const auto& p = model.host_params();
  const auto& v = model.host_velocity();
  uint64_t count = p.size();
  std::string out(kCheckpointMagic, sizeof(kCheckpointMagic));
  out.append(reinterpret_cast<const char*>(&epoch), sizeof(epoch));
  out.append(reinterpret_cast<const char*>(&width), sizeof(width));
  out.append(reinterpret_cast<const char*>(&count), sizeof(count));
  out.append(reinterpret_cast<const char*>(p.data()), count * sizeof(float));
  out.append(reinterpret_cast<const char*>(v.data()), count * sizeof(float));
  return out;
}

// Throws std::runtime_error for bytes that are not a checkpoint of this program.
Checkpoint DecodeCheckpoint(const std::string& bytes) {
  constexpr size_t kHeader = sizeof(kCheckpointMagic) + 3 * sizeof(int64_t);
  if (bytes.size() < kHeader ||
      std::memcmp(bytes.data(), kCheckpointMagic, sizeof(kCheckpointMagic)) != 0) {
    throw std::runtime_error("not a tune_fashion_mnist checkpoint");
  }
  Checkpoint c;
  uint64_t count = 0;
  const char* at = bytes.data() + sizeof(kCheckpointMagic);
  std::memcpy(&c.epoch, at, 8);
  std::memcpy(&c.width, at + 8, 8);
  std::memcpy(&count, at + 16, 8);
  if (c.width < 2 || count != MlpLayout(int(c.width), int(c.width / 2)).total ||
      bytes.size() != kHeader + 2 * count * sizeof(float)) {
    throw std::runtime_error("a truncated or inconsistent checkpoint");
  }
  c.params.resize(count);
  c.velocity.resize(count);
  std::memcpy(c.params.data(), bytes.data() + kHeader, count * sizeof(float));
  std::memcpy(c.velocity.data(), bytes.data() + kHeader + count * sizeof(float),
              count * sizeof(float));
  return c;
}

// --- the trainable: one epoch per Step ------------------------------------------------------

// A trial: the MLP 784-width-width/2-10 trained with SGD (momentum, cosine decay of the learning
// rate over `epochs`) on the first `train_limit` training images. In a gang trial (world size W)
// every rank takes its 1/W of every global batch of `batch` images and the ranks average their
// gradients in buckets (GradientBuckets), as fashion_mnist.cc's Trainer does; rank 0 reports.
class MlpTrial : public tune::Trainable {
 public:
  void Setup(const tune::Config& c) override {
    lr_ = c.Get<double>("lr");
    momentum_ = c.Get<double>("momentum");
    width_ = c.Get<int64_t>("width");
    batch_ = c.Get<int64_t>("batch");
    epochs_ = c.Get<int64_t>("epochs");
    world_ = trial().world_size;
    rank_ = trial().rank;
    if (batch_ % world_ != 0) {
      throw std::invalid_argument("batch " + std::to_string(batch_) + " is not a multiple of " +
                                  std::to_string(world_) + " workers");
    }
    std::string data = c.Get<std::string>("data");
    train_ = Load(data, "train", static_cast<int>(c.Get<int64_t>("train_limit")));
    if (rank_ == 0) validation_ = Load(data, "train", kValidationSize, kValidationFirst);
    model_ = std::make_unique<Mlp>(static_cast<int>(width_), static_cast<int>(width_ / 2), kSeed);
    if (group() != nullptr) {  // start from rank 0's weights, as DDP does
      cumulus::Status st = group()->Broadcast(model_->params(), model_->host_params().size(),
                                              cumulus::DType::kFloat32, 0);
      if (!st.ok()) throw std::runtime_error("broadcasting the weights: " + st.ToString());
      buckets_ =
          std::make_unique<cumulus::GradientBuckets>(group(), model_->grads(), model_->sizes());
    }
  }

  tune::Metrics Step() override {
    auto start = std::chrono::steady_clock::now();
    ++epoch_;
    std::vector<int> order(train_.n);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937 rng(kSeed * 1000 + static_cast<int>(epoch_));  // the same order on every rank
    std::shuffle(order.begin(), order.end(), rng);
    const int local = static_cast<int>(batch_ / world_);
    const int steps = train_.n / static_cast<int>(batch_);
    std::vector<float> x(size_t(local) * 784);
    std::vector<uint8_t> y(local);
    const double pi = std::acos(-1.0);
    const float lr = static_cast<float>(
        lr_ * 0.5 * (1 + std::cos(pi * static_cast<double>(epoch_ - 1) / double(epochs_))));
    double loss[2] = {0, 0};  // summed loss, samples
    for (int s = 0; s < steps; ++s) {
      for (int i = 0; i < local; ++i) {
        int idx = order[size_t(s) * batch_ + size_t(rank_) * local + i];
        std::copy_n(train_.x.data() + size_t(idx) * 784, 784, x.data() + size_t(i) * 784);
        y[i] = train_.y[idx];
      }
      loss[0] += model_->Forward(x.data(), y.data(), local, nullptr);
      if (buckets_) {
        model_->Backward(y.data(), local, [&](size_t tensor) { buckets_->Ready(tensor); });
        cumulus::Status st = buckets_->Wait();
        if (!st.ok()) throw std::runtime_error("averaging gradients: " + st.ToString());
      } else {
        model_->Backward(y.data(), local, [](size_t) {});
      }
      model_->Step(lr, static_cast<float>(momentum_));
      loss[1] += local;
    }
    if (group() != nullptr) {  // the loss over every rank's samples
      cumulus::Status st =
          group()->AllReduce(loss, 2, cumulus::DType::kFloat64, cumulus::ReduceOp::kSum);
      if (!st.ok()) throw std::runtime_error("summing the loss: " + st.ToString());
    }
    tune::Metrics m;
    double mean_loss = loss[0] / std::max(loss[1], 1.0);
    if (std::isfinite(mean_loss)) m["train_loss"] = mean_loss;    // a diverged trial reports none
    if (rank_ == 0) m[kMetric] = Accuracy(*model_, validation_);  // the tuner reads rank 0's
    m["epoch_seconds"] = Since(start);
    return m;
  }

  std::string Save() override { return EncodeCheckpoint(epoch_, width_, *model_); }

  void Restore(const std::string& bytes) override {
    Checkpoint c = DecodeCheckpoint(bytes);
    if (c.width != width_) throw std::runtime_error("a checkpoint of another width");
    model_->SetState(c.params.data(), c.velocity.data());
    epoch_ = c.epoch;
  }

 private:
  double lr_ = 0, momentum_ = 0;
  int64_t width_ = 0, batch_ = 0, epochs_ = 0, epoch_ = 0;
  int world_ = 1, rank_ = 0;
  Dataset train_, validation_;
  std::unique_ptr<Mlp> model_;
  std::unique_ptr<cumulus::GradientBuckets> buckets_;
};
CUMULUS_TRAINABLE(MlpTrial);

// --- the driver -------------------------------------------------------------------------------

struct Flags {
  uint64_t samples = 16;
  int64_t epochs = 4;
  int64_t train_limit = kValidationFirst;
  std::string scheduler = "asha";
  double budget_fraction = tune::SchedulerSettings().budget_fraction;
  bool budget_fraction_given = false;
  int workers_per_trial = 1;
  std::string name, restore;
  uint64_t seed = 0;
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::string cluster_dir;
  double min_accuracy = -1;
};

void Usage(FILE* out) {
  std::fprintf(
      out,
      "Usage: tune_fashion_mnist [--samples N] [--epochs E] [--train-limit K]\n"
      "                          [--scheduler NAME] [--workers-per-trial W] [--name EXP]\n"
      "                          [--restore EXP] [--seed S] [--data DIR] [--cluster-dir DIR]\n"
      "                          [--min-accuracy PCT] [--budget-fraction F]\n\n"
      "Tunes a 784-W-W/2-10 MLP on Fashion-MNIST (learning rate, width W, batch size,\n"
      "momentum): N trials, each an actor training for up to E epochs, the weak ones stopped\n"
      "early by the scheduler. Prints the best config, its test accuracy, the trials stopped\n"
      "early and the compute saved against training every trial for E epochs.\n\n"
      "  --samples N           trials (configs drawn at random) (default 16)\n"
      "  --epochs E            epochs per trial at most: the scheduler's max_t (default 4)\n"
      "  --train-limit K       train on the first K of the 60,000 training images, at most\n"
      "                        55,000: the last 5,000 score the trials (default 55000)\n"
      "  --scheduler NAME      asha, hyperband, median, bound, budget, pbt or fifo (default asha,\n"
      "                        with Ray Tune's defaults: grace 1, reduction factor 4)\n"
      "  --budget-fraction F   --scheduler budget: the epochs to spend, as a fraction of every\n"
      "                        trial trained for E epochs (default 0.24)\n"
      "  --workers-per-trial W each trial a gang of W actors training data-parallel\n"
      "                        (gradients averaged by allreduce) (default 1)\n"
      "  --name EXP            the experiment's name (default tune_fashion_mnist-TIME)\n"
      "  --restore EXP         continue experiment EXP after its driver died (its epochs,\n"
      "                        train limit, data and scheduler are the experiment's; give\n"
      "                        the same --workers-per-trial and --cluster-dir)\n"
      "  --seed S              the searcher's seed (default 0)\n"
      "  --data DIR            the dataset (default /usr/share/datasets/fashion-mnist)\n"
      "  --cluster-dir DIR     without CUMULUS_ADDRESS: where the embedded cluster keeps its\n"
      "                        state, experiments included, for --restore (default\n"
      "                        $TMPDIR/cumulus-tune-fashion-mnist-UID)\n"
      "  --min-accuracy PCT    exit 1 if the best trial's test accuracy is below PCT\n");
}

// Parses argv; exits 2 with one line for a bad flag, 0 after --help.
Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tune_fashion_mnist: %s needs a value (see --help)\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    auto number = [&](double lo, double hi) {
      std::string v = value();
      char* end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(d >= lo && d <= hi)) {
        std::fprintf(stderr, "tune_fashion_mnist: %s %s: expected a number from %g to %g\n",
                     a.c_str(), v.c_str(), lo, hi);
        std::exit(2);
      }
      return d;
    };
    auto integer = [&](double lo, double hi) {
      double d = number(lo, hi);
      if (d != std::floor(d)) {
        std::fprintf(stderr, "tune_fashion_mnist: %s %g: expected a whole number\n", a.c_str(), d);
        std::exit(2);
      }
      return static_cast<int64_t>(d);
    };
    if (a == "--help" || a == "-h") {
      Usage(stdout);
      std::exit(0);
    } else if (a == "--samples") {
      f.samples = static_cast<uint64_t>(integer(1, 100000));
    } else if (a == "--epochs") {
      f.epochs = integer(1, 1000);
    } else if (a == "--train-limit") {
      f.train_limit = integer(256, kValidationFirst);
    } else if (a == "--scheduler") {
      f.scheduler = value();
      const char* known[] = {"asha", "hyperband", "median", "bound", "budget", "pbt", "fifo"};
      if (std::find_if(std::begin(known), std::end(known),
                       [&](const char* k) { return f.scheduler == k; }) == std::end(known)) {
        std::fprintf(stderr,
                     "tune_fashion_mnist: --scheduler %s: expected asha, hyperband, median, "
                     "bound, budget, pbt or fifo\n",
                     f.scheduler.c_str());
        std::exit(2);
      }
    } else if (a == "--budget-fraction") {
      f.budget_fraction = number(0.001, 1);
      f.budget_fraction_given = true;
    } else if (a == "--workers-per-trial") {
      f.workers_per_trial = static_cast<int>(integer(1, 32));
    } else if (a == "--name") {
      f.name = value();
    } else if (a == "--restore") {
      f.restore = value();
    } else if (a == "--seed") {
      f.seed = static_cast<uint64_t>(integer(0, 1e15));
    } else if (a == "--data") {
      f.data = value();
    } else if (a == "--cluster-dir") {
      f.cluster_dir = value();
    } else if (a == "--min-accuracy") {
      f.min_accuracy = number(0, 100);
    } else {
      std::fprintf(stderr, "tune_fashion_mnist: unknown argument %s (see --help)\n", a.c_str());
      std::exit(2);
    }
  }
  if (!f.name.empty() && !f.restore.empty()) {
    std::fprintf(stderr, "tune_fashion_mnist: give --name or --restore, not both\n");
    std::exit(2);
  }
  if (f.budget_fraction_given && f.scheduler != "budget") {
    std::fprintf(stderr,
                 "tune_fashion_mnist: --budget-fraction is for --scheduler budget, not %s\n",
                 f.scheduler.c_str());
    std::exit(2);
  }
  if (f.name.empty()) {
    char stamp[32];
    std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
    f.name = std::string("tune_fashion_mnist-") + stamp;
  }
  if (f.cluster_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    f.cluster_dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/cumulus-tune-fashion-mnist-" +
                    std::to_string(getuid());
  }
  return f;
}

// The search space. What every trial must also know (epochs, the data) goes in as one-value
// choices: a trial's config is all that reaches its actor.
tune::SearchSpace Space(const Flags& f) {
  tune::SearchSpace s;
  s.LogUniform("lr", 1e-3, 0.5)
      .Choice("width", {int64_t{64}, int64_t{128}, int64_t{256}})
      .Choice("batch", {int64_t{32}, int64_t{64}, int64_t{128}, int64_t{256}})
      .Uniform("momentum", 0.5, 0.99)
      .Choice("epochs", {f.epochs})
      .Choice("train_limit", {f.train_limit})
      .Choice("data", {f.data});
  return s;
}

// --restore: the experiment's own epochs, train limit and data (from a trial's config), so that
// the space is the one it was created with.
void TakeExperimentsSettings(Flags* f) {
  auto r = tune::LoadExperiment(f->restore);
  if (!r.ok() || r->trials.empty()) return;  // Restore below says what is wrong
  const tune::Config& c = r->trials.front().config;
  f->epochs = c.Get<int64_t>("epochs");
  f->train_limit = c.Get<int64_t>("train_limit");
  f->data = c.Get<std::string>("data");
}

std::string Tuned(const tune::Config& c) {
  char b[160];
  std::snprintf(b, sizeof(b), "lr %.4g, width %lld (784-%lld-%lld-10), batch %lld, momentum %.3f",
                c.Get<double>("lr"), static_cast<long long>(c.Get<int64_t>("width")),
                static_cast<long long>(c.Get<int64_t>("width")),
                static_cast<long long>(c.Get<int64_t>("width") / 2),
                static_cast<long long>(c.Get<int64_t>("batch")), c.Get<double>("momentum"));
  return b;
}

// Trial-seconds to train every started trial for `epochs`, counting what a trial spends outside
// its epochs (its process and actor starting, Setup loading the data, joining the gang) once per
// trial rather than per epoch, as the tuner's own estimate does.
double FullComputeStartupOnce(const tune::ExperimentResult& r, int64_t epochs) {
  double total = 0;
  for (auto& t : r.trials) {
    if (t.history.empty()) continue;
    double in_epochs = 0;
    for (auto& m : t.history) {
      auto it = m.find("epoch_seconds");
      if (it != m.end()) in_epochs += it->second;
    }
    double n = static_cast<double>(t.history.size());
    double full =
        t.state == tune::TrialState::kFinished ? n : std::max(n, static_cast<double>(epochs));
    total += (t.seconds - in_epochs) + in_epochs / n * full;
  }
  return total;
}

double Percent(double fraction) { return std::isfinite(fraction) ? 100.0 * fraction : 0.0; }

int Run(Flags f) {
  auto wall = std::chrono::steady_clock::now();
  tune::TunerOptions progress;
  progress.progress_interval = std::chrono::seconds(isatty(1) ? 1 : 10);
  cumulus::Result<tune::Tuner> tuner = cumulus::Status::Internal("unset");
  if (!f.restore.empty()) {
    TakeExperimentsSettings(&f);
    f.name = f.restore;
    tuner = tune::Tuner::Restore<MlpTrial>(f.restore, Space(f), &progress);
    if (tuner.ok()) {
      std::printf("Continuing experiment %s (%lld epochs, %lld training images)\n", f.name.c_str(),
                  static_cast<long long>(f.epochs), static_cast<long long>(f.train_limit));
    }
  } else {
    tune::TunerOptions o = progress;
    o.name = f.name;
    o.metric = kMetric;
    o.mode = "max";
    o.num_samples = f.samples;
    o.max_iterations = f.epochs;
    o.seed = f.seed;
    o.scheduler.kind = f.scheduler;
    o.scheduler.budget_fraction = f.budget_fraction;
    if (f.scheduler == "pbt") {  // exploit every epoch, perturbing the optimiser's settings
      o.scheduler.pbt_interval = 1;
      o.scheduler.pbt_mutations.LogUniform("lr", 1e-3, 0.5).Uniform("momentum", 0.5, 0.99);
    }
    o.gang_size = f.workers_per_trial;
    o.resources_per_trial = {{"CPU", 1}};
    std::printf(
        "Tuning a 784-W-W/2-10 MLP on Fashion-MNIST: %llu trials (lr, width W, batch, momentum) "
        "of up to %lld epochs on %lld images, scored on 5000 held-out ones; scheduler %s; %d "
        "worker%s per trial; experiment %s\n",
        static_cast<unsigned long long>(f.samples), static_cast<long long>(f.epochs),
        static_cast<long long>(f.train_limit), f.scheduler.c_str(), f.workers_per_trial,
        f.workers_per_trial == 1 ? "" : "s", f.name.c_str());
    tuner = tune::Tuner::Create<MlpTrial>(Space(f), o);
  }
  std::fflush(stdout);
  if (!tuner.ok()) {
    std::fprintf(stderr, "tune_fashion_mnist: %s\n", tuner.status().ToString().c_str());
    return 1;
  }
  auto result = tuner->Run();
  if (!result.ok()) {
    std::fprintf(stderr, "tune_fashion_mnist: %s\n", result.status().ToString().c_str());
    return 1;
  }
  const tune::ExperimentResult& r = *result;
  const tune::TrialResult* best = r.best();
  size_t stopped = r.Count(tune::TrialState::kStoppedEarly);
  size_t failed = r.Count(tune::TrialState::kFailed);
  std::printf("\n%zu trials: %zu finished, %zu stopped early, %zu failed\n", r.trials.size(),
              r.Count(tune::TrialState::kFinished), stopped, failed);
  for (auto& t : r.trials) {
    if (t.state == tune::TrialState::kFailed) {
      std::printf("  %s failed: %s\n", t.id.c_str(), t.reason.c_str());
    }
  }
  if (best == nullptr) {
    std::fprintf(stderr, "tune_fashion_mnist: no trial reported %s\n", kMetric);
    return 1;
  }
  auto checkpoint = r.BestCheckpoint();
  if (!checkpoint.ok() || checkpoint->empty()) {
    std::fprintf(stderr, "tune_fashion_mnist: the best trial %s has no checkpoint: %s\n",
                 best->id.c_str(),
                 checkpoint.ok() ? "it kept none" : checkpoint.status().ToString().c_str());
    return 1;
  }
  Checkpoint c = DecodeCheckpoint(*checkpoint);
  Mlp model(static_cast<int>(c.width), static_cast<int>(c.width / 2), kSeed);
  model.SetState(c.params.data(), c.velocity.data());
  double test = 100.0 * Accuracy(model, Load(f.data, "t10k", 0));
  std::printf("best trial %s: %s\n", best->id.c_str(), Tuned(best->config).c_str());
  std::printf(
      "  validation accuracy %.2f%% after %zu epochs; test accuracy %.2f%% (its checkpoint "
      "at epoch %lld, on the 10,000 test images)\n",
      100.0 * best->last(kMetric).value_or(0), best->history.size(), test,
      static_cast<long long>(c.epoch));
  double used = r.compute_seconds, full = r.compute_seconds_full;
  double full_once = FullComputeStartupOnce(r, f.epochs);
  // Training a trial to the end starts it once: its start-up and data loading (the seconds
  // outside its epochs) count once, its epochs at its mean epoch time (epoch_seconds).
  std::printf(
      "compute: %.0f trial-s used, against ~%.0f trial-s to train every trial for %lld "
      "epochs: %.0f%% saved\n",
      used, full_once, static_cast<long long>(f.epochs), Percent(1 - used / full_once));
  std::printf(
      "  (each trial's start-up once, its epochs at its mean epoch time; the tuner's coarser "
      "estimate, which has no epoch times and so counts start-up in every epoch: ~%.0f trial-s, "
      "%.0f%% saved)\n",
      full, Percent(1 - used / full));
  std::printf("wall time %.0f s\n", Since(wall));
  if (f.min_accuracy >= 0 && test < f.min_accuracy) {
    std::printf("FAIL: test accuracy %.2f%% is below --min-accuracy %.2f%%\n", test,
                f.min_accuracy);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A worker process runs the trials: Init serves them and never returns there.
  if (cumulus::IsWorker()) (void)cumulus::Init(argc, argv);
  Flags flags = ParseFlags(argc, argv);
  cumulus::InitOptions options;
  if (!std::getenv("CUMULUS_ADDRESS")) {
    // A CPU per trial worker even on a smaller machine (the members of a gang must run at once),
    // and state that outlives this process, so that --restore finds the experiment.
    int have = static_cast<int>(std::thread::hardware_concurrency());
    options.resources = "CPU=" + std::to_string(std::max(flags.workers_per_trial, have));
    options.data_dir = flags.cluster_dir;
  }
  if (cumulus::Status st = cumulus::Init(argc, argv, options); !st.ok()) {
    std::fprintf(stderr, "tune_fashion_mnist: cannot start cumulus: %s\n", st.ToString().c_str());
    return 1;
  }
  int rc = 0;
  try {
    Load(flags.data, "t10k", 1);  // a missing dataset fails here, with what to install
    rc = Run(flags);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_fashion_mnist: %s\n", e.what());
    rc = 1;
  }
  cumulus::Shutdown();
  return rc;
}
