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
// (mlp_cuda.cu) and the group averages the device gradients over NCCL: the same program.
// The dataset is Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist). With the
// same global batch, N workers compute the same averaged gradient as one (up to float rounding),
// so accuracy after E epochs does not depend on N; --compare-single trains a 1-worker run too and
// prints the difference. Without CUMULUS_ADDRESS it runs on an embedded cluster.
#include <zlib.h>

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

// --- the dataset (IDX files, gzipped) -----------------------------------------------------------

std::vector<uint8_t> ReadGz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) {
    throw std::runtime_error("cannot open " + path +
                             " (install Debian's dataset-fashion-mnist, or give --data DIR)");
  }
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.insert(out.end(), buf, buf + n);
  bool bad = n < 0;
  gzclose(f);
  if (bad) throw std::runtime_error(path + " is not a readable gzip file");
  return out;
}

uint32_t BigEndian(const std::vector<uint8_t>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) |
         b[at + 3];
}

struct Dataset {
  int n = 0;
  std::vector<float> x;  // n x 784, scaled to [0, 1]
  std::vector<uint8_t> y;
};

Dataset Load(const std::string& dir, const std::string& prefix, int limit) {
  auto images = ReadGz(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  auto labels = ReadGz(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  if (images.size() < 16 || BigEndian(images, 0) != 2051 || labels.size() < 8 ||
      BigEndian(labels, 0) != 2049) {
    throw std::runtime_error(dir + "/" + prefix + ": not Fashion-MNIST IDX files");
  }
  uint32_t n = BigEndian(images, 4), rows = BigEndian(images, 8), cols = BigEndian(images, 12);
  if (rows * cols != 784 || BigEndian(labels, 4) != n || images.size() < 16 + size_t{n} * 784 ||
      labels.size() < 8 + size_t{n}) {
    throw std::runtime_error(dir + "/" + prefix + ": truncated or inconsistent IDX files");
  }
  Dataset d;
  d.n = limit > 0 ? std::min<int>(limit, static_cast<int>(n)) : static_cast<int>(n);
  d.x.resize(size_t(d.n) * 784);
  for (size_t i = 0; i < d.x.size(); ++i) d.x[i] = images[16 + i] / 255.0f;
  d.y.assign(labels.begin() + 8, labels.begin() + 8 + d.n);
  return d;
}

// --- the model: 784 -> h1 -> h2 -> 10, ReLU, softmax cross-entropy ----------------------------

// C (m x n) += A (m x k) . B (k x n)
void MatMulAdd(const float* a, const float* b, float* c, int m, int k, int n) {
  for (int i = 0; i < m; ++i) {
    float* ci = c + size_t(i) * n;
    for (int p = 0; p < k; ++p) {
      float v = a[size_t(i) * k + p];
      if (v == 0.0f) continue;  // ReLU outputs and image backgrounds are mostly zero
      const float* bp = b + size_t(p) * n;
      for (int j = 0; j < n; ++j) ci[j] += v * bp[j];
    }
  }
}

// C (k x n) += A^T . B, with A (m x k) and B (m x n)
void MatTMulAdd(const float* a, const float* b, float* c, int m, int k, int n) {
  for (int i = 0; i < m; ++i) {
    const float* bi = b + size_t(i) * n;
    for (int p = 0; p < k; ++p) {
      float v = a[size_t(i) * k + p];
      if (v == 0.0f) continue;
      float* cp = c + size_t(p) * n;
      for (int j = 0; j < n; ++j) cp[j] += v * bi[j];
    }
  }
}

// C (m x k) = A . B^T, with A (m x n) and B (k x n)
void MatMulT(const float* a, const float* b, float* c, int m, int k, int n) {
  for (int i = 0; i < m; ++i) {
    const float* ai = a + size_t(i) * n;
    for (int p = 0; p < k; ++p) {
      const float* bp = b + size_t(p) * n;
      float s = 0;
      for (int j = 0; j < n; ++j) s += ai[j] * bp[j];
      c[size_t(i) * k + p] = s;
    }
  }
}

class Mlp final : public Model {
 public:
  // Parameters and gradients are flat, in the order backpropagation finishes them:
  // W3, b3, W2, b2, W1, b1 (W is in x out).
  Mlp(int h1, int h2, int seed) : layout_(h1, h2), dims_(layout_.dims) {
    params_.assign(layout_.total, 0.0f);
    grads_.assign(layout_.total, 0.0f);
    velocity_.assign(layout_.total, 0.0f);
    std::mt19937 rng(seed);
    for (int l = 0; l < 3; ++l) {  // He initialisation; biases start at zero
      std::normal_distribution<float> dist(0.0f, std::sqrt(2.0f / dims_[l]));
      float* w = W(params_, l);
      for (size_t i = 0; i < size_t(dims_[l]) * dims_[l + 1]; ++i) w[i] = dist(rng);
    }
  }

  const std::vector<size_t>& sizes() const override { return layout_.sizes; }
  float* params() override { return params_.data(); }
  float* grads() override { return grads_.data(); }
  const std::vector<float>& host_params() const { return params_; }

  // Forward pass of m samples; fills the activations; returns the summed loss (and, with
  // `correct`, counts right answers).
  double Forward(const float* x, const uint8_t* y, int m, int* correct) override {
    act_[0].assign(x, x + size_t(m) * 784);
    for (int l = 0; l < 3; ++l) {
      int in = dims_[l], out = dims_[l + 1];
      auto& next = act_[l + 1];
      next.assign(size_t(m) * out, 0.0f);
      const float* b = B(params_, l);
      for (int i = 0; i < m; ++i) std::copy(b, b + out, next.begin() + size_t(i) * out);
      MatMulAdd(act_[l].data(), W(params_, l), next.data(), m, in, out);
      if (l < 2) {
        for (auto& v : next) v = std::max(v, 0.0f);
      }
    }
    // Softmax in place on the logits.
    double loss = 0;
    auto& z = act_[3];
    for (int i = 0; i < m; ++i) {
      float* zi = z.data() + size_t(i) * 10;
      float mx = *std::max_element(zi, zi + 10);
      float sum = 0;
      for (int j = 0; j < 10; ++j) sum += (zi[j] = std::exp(zi[j] - mx));
      for (int j = 0; j < 10; ++j) zi[j] /= sum;
      loss -= std::log(std::max(zi[y[i]], 1e-12f));
      if (correct && std::max_element(zi, zi + 10) - zi == y[i]) ++*correct;
    }
    return loss;
  }

  // Backward pass of the last Forward (mean loss over its m samples); calls ready(tensor) as
  // each gradient is final.
  void Backward(const uint8_t* y, int m, const std::function<void(size_t)>& ready) override {
    std::vector<float> delta(act_[3]);  // softmax - one-hot, over m
    for (int i = 0; i < m; ++i) delta[size_t(i) * 10 + y[i]] -= 1.0f;
    for (auto& v : delta) v /= m;
    for (int l = 2; l >= 0; --l) {
      int in = dims_[l], out = dims_[l + 1];
      float* gw = W(grads_, l);
      float* gb = B(grads_, l);
      std::fill(gw, gw + size_t(in) * out, 0.0f);
      std::fill(gb, gb + out, 0.0f);
      MatTMulAdd(act_[l].data(), delta.data(), gw, m, in, out);
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < out; ++j) gb[j] += delta[size_t(i) * out + j];
      }
      ready(MlpLayout::WeightTensor(l));
      ready(MlpLayout::WeightTensor(l) + 1);
      if (l == 0) break;
      std::vector<float> prev(size_t(m) * in);
      MatMulT(delta.data(), W(params_, l), prev.data(), m, in, out);
      for (size_t i = 0; i < prev.size(); ++i) {
        if (act_[l][i] <= 0.0f) prev[i] = 0.0f;  // ReLU
      }
      delta.swap(prev);
    }
  }

  // SGD with momentum on the (averaged) gradients.
  void Step(float lr, float momentum) override {
    for (size_t i = 0; i < params_.size(); ++i) {
      velocity_[i] = momentum * velocity_[i] + grads_[i];
      params_[i] -= lr * velocity_[i];
    }
  }

 private:
  float* W(std::vector<float>& v, int l) { return v.data() + layout_.weight(l); }
  float* B(std::vector<float>& v, int l) { return v.data() + layout_.bias(l); }

  MlpLayout layout_;
  const int* dims_;
  std::vector<float> params_, grads_, velocity_;
  std::vector<float> act_[4];
};

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
    if (VisibleGpus(&why) == 0) {
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
