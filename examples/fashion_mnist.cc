// Data-parallel training of a classifier on Fashion-MNIST: N actors each train the same MLP on
// their part of every global batch and average gradients with an allreduce (Gloo on CPUs), in
// buckets that are reduced while backpropagation computes the earlier layers. The driver prints
// the test accuracy after every epoch.
//
//   build/bin/fashion_mnist [--workers N] [--epochs E] [--batch B] [--lr LR] [--momentum M]
//                           [--hidden H1,H2] [--seed S] [--train-limit K] [--data DIR]
//                           [--cpus-per-worker C] [--device cpu|gpu] [--first-bucket-kib K]
//                           [--min-accuracy PCT] [--compare-single]
//
// With --device gpu each actor takes a GPU (GPU=1), trains with cuBLAS and CUDA kernels
// (mlp_cuda.cu) and the group averages the device gradients over NCCL: the same program. The CPU
// model is mlp_cpu.h, the dataset's reader fashion_mnist_data.h (tune_fashion_mnist.cc tunes the
// same model).
// The dataset is Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist). With the
// same global batch, N workers compute the same averaged gradient as one (up to float rounding),
// so accuracy after E epochs does not depend on N; --compare-single trains a 1-worker run too and
// prints the difference. Without CUMULUS_ADDRESS it runs on an embedded cluster.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <cumulus/collective.h>
#include <cumulus/cumulus.h>

#include "fashion_mnist_data.h"
#include "mlp_cpu.h"
#include "mlp_model.h"

namespace {

struct Config {
  int world = 2;
  int epochs = 5;
  int batch = 128;  // global: every step, each of the N workers takes batch / N samples
  double lr = 0.05;
  double momentum = 0.9;
  int hidden1 = 256, hidden2 = 128;
  int seed = 1;
  int train_limit = 0;          // 0: all 60,000
  int first_bucket_kib = 1024;  // gradient buckets: the first one, then up to 25 MiB
  std::string device = "cpu";   // or "gpu": each actor trains on a GPU of its own
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::string group;
  CUMULUS_SERIALIZE(world, epochs, batch, lr, momentum, hidden1, hidden2, seed, train_limit,
                    first_bucket_kib, device, data, group)
};

struct EpochReport {
  double loss = 0;      // mean training loss over this worker's samples
  int64_t samples = 0;  // samples this worker trained on
  double seconds = 0;   // the epoch's wall time on this worker
  double waited = 0;    // of which waiting for gradient buckets to be averaged
  CUMULUS_SERIALIZE(loss, samples, seconds, waited)
};

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// --- the actor ---------------------------------------------------------------------------------

class Trainer {
 public:
  Trainer(int rank, Config config)
      : rank_(rank),
        config_(std::move(config)),
        train_(Load(config_.data, "train", config_.train_limit)) {
    auto cpu = std::make_unique<Mlp>(config_.hidden1, config_.hidden2, config_.seed);
    if (config_.device == "gpu") {
      model_ = MakeGpuMlp(config_.hidden1, config_.hidden2, cpu->host_params(), &model_error_);
    } else {
      model_ = std::move(cpu);
    }
  }

  // Joins the group the driver declared and starts from rank 0's weights (as DDP does).
  std::string Setup() {
    if (!model_) return "no model on the " + config_.device + ": " + model_error_;
    auto group = cumulus::JoinCollectiveGroup(config_.group);
    if (!group.ok()) return group.status().ToString();
    group_ = std::move(*group);
    size_t total = 0;
    for (size_t n : model_->sizes()) total += n;
    cumulus::Status st = group_->Broadcast(model_->params(), total, cumulus::DType::kFloat32, 0);
    if (!st.ok()) return st.ToString();
    // A small first bucket (the last layers' gradients are ready first), then up to 25 MiB.
    buckets_ = std::make_unique<cumulus::GradientBuckets>(
        group_.get(), model_->grads(), model_->sizes(), size_t(config_.first_bucket_kib) << 10);
    return "";
  }

  EpochReport TrainEpoch(int epoch) {
    auto start = std::chrono::steady_clock::now();
    std::vector<int> order(train_.n);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937 rng(config_.seed * 1000 + epoch);  // the same order on every worker
    std::shuffle(order.begin(), order.end(), rng);
    const int local = config_.batch / config_.world;
    const int steps = train_.n / config_.batch;
    std::vector<float> x(size_t(local) * 784);
    std::vector<uint8_t> y(local);
    // Cosine decay of the learning rate over the run.
    const double pi = std::acos(-1.0);
    const float lr = static_cast<float>(
        config_.lr * 0.5 * (1 + std::cos(pi * (epoch - 1) / std::max(config_.epochs, 1))));
    EpochReport report;
    for (int s = 0; s < steps; ++s) {
      for (int i = 0; i < local; ++i) {
        int idx = order[size_t(s) * config_.batch + size_t(rank_) * local + i];
        std::copy_n(train_.x.data() + size_t(idx) * 784, 784, x.data() + size_t(i) * 784);
        y[i] = train_.y[idx];
      }
      report.loss += model_->Forward(x.data(), y.data(), local, nullptr);
      model_->Backward(y.data(), local, [&](size_t tensor) { buckets_->Ready(tensor); });
      auto wait_start = std::chrono::steady_clock::now();
      cumulus::Status st = buckets_->Wait();
      report.waited += Since(wait_start);
      if (!st.ok()) throw std::runtime_error("averaging gradients: " + st.ToString());
      model_->Step(lr, static_cast<float>(config_.momentum));
      report.samples += local;
    }
    report.loss /= std::max<int64_t>(report.samples, 1);
    report.seconds = Since(start);
    return report;
  }

  // Accuracy (percent) on the 10,000 test images.
  double Evaluate() {
    if (test_.n == 0) test_ = Load(config_.data, "t10k", 0);
    int correct = 0;
    for (int at = 0; at < test_.n; at += 1000) {
      int m = std::min(1000, test_.n - at);
      model_->Forward(test_.x.data() + size_t(at) * 784, test_.y.data() + at, m, &correct);
    }
    return 100.0 * correct / test_.n;
  }

 private:
  int rank_;
  Config config_;
  Dataset train_, test_;
  std::unique_ptr<Model> model_;
  std::string model_error_;
  std::unique_ptr<cumulus::CollectiveGroup> group_;
  std::unique_ptr<cumulus::GradientBuckets> buckets_;
};

Trainer* MakeTrainer(int rank, Config config) { return new Trainer(rank, std::move(config)); }

}  // namespace

CUMULUS_REMOTE(MakeTrainer, &Trainer::Setup, &Trainer::TrainEpoch, &Trainer::Evaluate);

namespace {

void Usage(FILE* out) {
  std::fprintf(out,
               "Usage: fashion_mnist [--workers N] [--epochs E] [--batch B] [--lr LR]\n"
               "                     [--momentum M] [--hidden H1,H2] [--seed S] [--train-limit K]\n"
               "                     [--data DIR] [--cpus-per-worker C] [--device cpu|gpu]\n"
               "                     [--first-bucket-kib K]"
               "\n"
               "                     [--min-accuracy PCT] [--compare-single]\n\n"
               "Trains a 784-H1-H2-10 MLP on Fashion-MNIST with N actors (data parallel: each\n"
               "takes B/N samples of every global batch of B; gradients averaged by allreduce)\n"
               "and prints the test accuracy after every epoch.\n\n"
               "  --workers N          actors in the group (default 2)\n"
               "  --epochs E           passes over the training set (default 5)\n"
               "  --batch B            global batch, a multiple of N (default 128)\n"
               "  --lr LR, --momentum M  SGD; LR decays to 0 over the epochs on a cosine\n"
               "                       (default 0.05, 0.9)\n"
               "  --hidden H1,H2       hidden layer widths (default 256,128)\n"
               "  --seed S             initial weights and batch order (default 1)\n"
               "  --train-limit K      train on the first K images only (default: all 60,000)\n"
               "  --data DIR           the dataset (default /usr/share/datasets/fashion-mnist)\n"
               "  --cpus-per-worker C  CPUs each actor needs (default 1)\n"
               "  --device cpu|gpu     train on CPUs (Gloo) or on a GPU per actor (cuBLAS and\n"
               "                       CUDA kernels; gradients averaged by NCCL) (default cpu)\n"
               "  --first-bucket-kib K gradients are averaged in buckets: the first (the last\n"
               "                       layers) up to K KiB, the others up to 25 MiB (default\n"
               "                       1024, as PyTorch DDP; the default model's 0.9 MB of\n"
               "                       gradients then fit in one)\n"
               "  --min-accuracy PCT   exit 1 if the final test accuracy is below PCT\n"
               "  --compare-single     then train with 1 worker, same settings; print the gap\n");
}

struct RunResult {
  std::vector<double> accuracy;   // per epoch
  double samples_per_second = 0;  // over all epochs
};

RunResult Train(const Config& base, double cpus, const char* label) {
  Config config = base;
  config.group = "fashion-mnist-" + std::to_string(config.world);
  std::vector<cumulus::ActorHandle<Trainer>> workers;
  for (int r = 0; r < config.world; ++r) {
    auto actor = cumulus::Actor(MakeTrainer).SetResource("CPU", cpus);
    if (config.device == "gpu") actor.SetResource("GPU", 1);  // a GPU of its own
    workers.push_back(actor.Remote(r, config));
  }
  cumulus::Status st = cumulus::CreateCollectiveGroup(config.group, cumulus::ActorIds(workers));
  if (!st.ok()) throw std::runtime_error("declaring the group: " + st.ToString());
  std::vector<cumulus::ObjectRef<std::string>> setups;
  for (auto& w : workers) setups.push_back(w.Task(&Trainer::Setup).Remote());
  for (auto& err : cumulus::Get(setups)) {
    if (!err.empty()) throw std::runtime_error("a worker could not join the group: " + err);
  }
  RunResult result;
  double total_seconds = 0;
  int64_t total_samples = 0;
  for (int e = 1; e <= config.epochs; ++e) {
    std::vector<cumulus::ObjectRef<EpochReport>> refs;
    for (auto& w : workers) refs.push_back(w.Task(&Trainer::TrainEpoch).Remote(e));
    auto reports = cumulus::Get(refs);
    double acc = cumulus::Get(workers[0].Task(&Trainer::Evaluate).Remote());
    double seconds = 0, waited = 0, loss = 0;
    int64_t samples = 0;
    for (auto& r : reports) {
      seconds = std::max(seconds, r.seconds);
      waited += r.waited / reports.size();
      loss += r.loss / reports.size();
      samples += r.samples;
    }
    total_seconds += seconds;
    total_samples += samples;
    result.accuracy.push_back(acc);
    std::printf(
        "%sepoch %d/%d  loss %.4f  test accuracy %.2f%%  %.0f samples/s  (%.0f%% of the time "
        "waiting for gradients)\n",
        label, e, config.epochs, loss, acc, samples / seconds, 100.0 * waited / seconds);
    std::fflush(stdout);
  }
  result.samples_per_second = total_samples / total_seconds;
  for (auto& w : workers) (void)w.Kill();
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  double cpus = 1, min_accuracy = -1;
  bool compare = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "fashion_mnist: %s needs a value (see --help)\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    auto number = [&](double lo) {
      std::string v = value();
      char* end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(d >= lo)) {
        std::fprintf(stderr, "fashion_mnist: %s %s: expected a number >= %g\n", a.c_str(),
                     v.c_str(), lo);
        std::exit(2);
      }
      return d;
    };
    if (a == "--help" || a == "-h") {
      Usage(stdout);
      return 0;
    } else if (a == "--workers") {
      config.world = static_cast<int>(number(1));
    } else if (a == "--epochs") {
      config.epochs = static_cast<int>(number(1));
    } else if (a == "--batch") {
      config.batch = static_cast<int>(number(1));
    } else if (a == "--lr") {
      config.lr = number(0);
    } else if (a == "--momentum") {
      config.momentum = number(0);
    } else if (a == "--seed") {
      config.seed = static_cast<int>(number(0));
    } else if (a == "--train-limit") {
      config.train_limit = static_cast<int>(number(0));
    } else if (a == "--first-bucket-kib") {
      config.first_bucket_kib = static_cast<int>(number(1));
    } else if (a == "--device") {
      config.device = value();
      if (config.device != "cpu" && config.device != "gpu") {
        std::fprintf(stderr, "fashion_mnist: --device %s: expected cpu or gpu\n",
                     config.device.c_str());
        return 2;
      }
    } else if (a == "--data") {
      config.data = value();
    } else if (a == "--cpus-per-worker") {
      cpus = number(0);
    } else if (a == "--min-accuracy") {
      min_accuracy = number(0);
    } else if (a == "--compare-single") {
      compare = true;
    } else if (a == "--hidden") {
      std::string v = value();
      if (std::sscanf(v.c_str(), "%d,%d", &config.hidden1, &config.hidden2) != 2 ||
          config.hidden1 < 1 || config.hidden2 < 1) {
        std::fprintf(stderr, "fashion_mnist: --hidden %s: expected two widths, e.g. 256,128\n",
                     v.c_str());
        return 2;
      }
    } else if (!cumulus::IsWorker()) {
      std::fprintf(stderr, "fashion_mnist: unknown argument %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (config.batch % config.world != 0) {
    std::fprintf(stderr, "fashion_mnist: --batch %d is not a multiple of --workers %d\n",
                 config.batch, config.world);
    return 2;
  }
  // An embedded cluster's node finds the GPUs this process sees: with none, say so here (one
  // line, which ctest's example.fashion_mnist_gpu reads as "skipped") rather than fail later
  // with the scheduler's "no node can ever run it". Against a cluster, its nodes decide.
  if (config.device == "gpu" && !std::getenv("CUMULUS_ADDRESS") && !cumulus::IsWorker()) {
    std::string why;
    int gpus = VisibleGpus(&why);
    if (gpus < 0) {
      std::fprintf(stderr, "fashion_mnist: --device gpu: %s\n", why.c_str());
      return 1;
    }
    if (gpus == 0) {
      std::fprintf(stderr,
                   "fashion_mnist: --device gpu: no GPU is visible to this process (%s), so the "
                   "embedded cluster has none; use --device cpu, or a cluster with GPUs "
                   "(CUMULUS_ADDRESS)\n",
                   why.c_str());
      return 1;
    }
  }
  // An embedded cluster gets a CPU for each worker even on a smaller machine (they then share
  // cores): every member of a group must run at once.
  cumulus::InitOptions options;
  if (!std::getenv("CUMULUS_ADDRESS") && config.device == "cpu") {  // GPU runs keep detection
    int want = static_cast<int>(std::ceil(cpus * config.world));
    int have = static_cast<int>(std::thread::hardware_concurrency());
    options.resources = "CPU=" + std::to_string(std::max(want, have));
  }
  if (cumulus::Status st = cumulus::Init(argc, argv, options); !st.ok()) {
    std::fprintf(stderr, "fashion_mnist: cannot start cumulus: %s\n", st.ToString().c_str());
    return 1;
  }
  int rc = 0;
  try {
    Load(config.data, "t10k", 1);  // a missing dataset fails here, with what to install
    std::printf(
        "Training a 784-%d-%d-10 MLP on Fashion-MNIST: %d %s worker%s, global batch %d, "
        "%d epoch%s, SGD lr %g (cosine decay) momentum %g\n",
        config.hidden1, config.hidden2, config.world, config.device.c_str(),
        config.world == 1 ? "" : "s", config.batch, config.epochs, config.epochs == 1 ? "" : "s",
        config.lr, config.momentum);
    std::fflush(stdout);
    RunResult run = Train(config, cpus, "");
    double final_acc = run.accuracy.back();
    std::printf("final test accuracy %.2f%% after %d epochs (%.0f samples/s with %d workers)\n",
                final_acc, config.epochs, run.samples_per_second, config.world);
    if (compare) {
      Config single = config;
      single.world = 1;
      RunResult one = Train(single, cpus, "[1 worker] ");
      std::printf(
          "1 worker: %.2f%%, %d workers: %.2f%% (difference %+.2f points); %.0f vs %.0f "
          "samples/s\n",
          one.accuracy.back(), config.world, final_acc, final_acc - one.accuracy.back(),
          one.samples_per_second, run.samples_per_second);
    }
    if (min_accuracy >= 0 && final_acc < min_accuracy) {
      std::printf("FAIL: %.2f%% is below --min-accuracy %.2f%%\n", final_acc, min_accuracy);
      rc = 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fashion_mnist: %s\n", e.what());
    rc = 1;
  }
  cumulus::Shutdown();
  return rc;
}
