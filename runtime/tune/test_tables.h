// Experiment tables for the tests of runtime/tune (test-only; header-only).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tune/trial_table.h"

namespace cumulus::tune::testing {

inline TrialPoint Point(int64_t iteration, double value, const std::string& metric = "acc",
                        double seconds = -1) {
  TrialPoint p;
  p.iteration = iteration;
  p.metrics[metric] = value;
  p.seconds = seconds < 0 ? static_cast<double>(iteration) : seconds;
  return p;
}

inline TrialRow Trial(std::string id, TrialState state, std::vector<double> values,
                      Config config = {}) {
  TrialRow t;
  t.id = std::move(id);
  t.state = state;
  t.config = std::move(config);
  for (size_t i = 0; i < values.size(); ++i)
    t.history.push_back(Point(static_cast<int64_t>(i + 1), values[i]));
  return t;
}

// An ASHA-like experiment, deterministic from `seed`: `n` trials of a learning curve
// acc(t) = top - (top - 0.1) * exp(-t / tau) with noise, rungs at 1, 4, 16, 64 (max_t 100);
// a trial below the rung's top quarter of the trials recorded there before it stops. The last
// `running` trials are still running (cut short at a random iteration), one trial failed.
inline ExperimentTable AshaExperiment(int n, uint64_t seed, int running = 3) {
  ExperimentTable table;
  table.name = "fashion_mnist_asha";
  table.metric = "acc";
  table.maximize = true;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> noise(0, 0.006);
  const int64_t rungs[] = {1, 4, 16, 64};
  std::vector<std::vector<double>> recorded(4);
  for (int i = 0; i < n; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "t%04d", i);
    double lr = std::pow(10, -4 + 3 * u(rng));
    int64_t width = int64_t{32} << static_cast<int>(u(rng) * 4);
    Config config;
    config.Set("lr", lr).Set("width", width).Set("batch", int64_t{64}).Set("momentum", 0.9);
    double top = 0.93 - 0.25 * std::pow(std::log10(lr) + 2.2, 2) / 3 - (width == 32 ? 0.02 : 0);
    double tau = 3 + 20 * u(rng);
    TrialRow t;
    t.id = id;
    t.config = config;
    t.node = (i % 2) ? "a3f9c2d1e4b5a6c7d8e9" : "10.0.0.12:7000";
    t.state = TrialState::kFinished;
    int64_t end = 100;
    if (i >= n - running) end = 1 + static_cast<int64_t>(u(rng) * 60);
    for (int64_t it = 1; it <= end; ++it) {
      double acc = top - (top - 0.1) * std::exp(-static_cast<double>(it) / tau) + noise(rng);
      TrialPoint p = Point(it, acc, "acc", 2.5 * it);
      p.metrics["loss"] = 2.3 * (1 - acc);
      t.history.push_back(p);
      bool stop = false;
      for (int r = 0; r < 4; ++r) {
        if (rungs[r] != it) continue;
        std::vector<double>& seen = recorded[r];
        if (seen.size() >= 4) {
          std::vector<double> sorted = seen;
          std::sort(sorted.begin(), sorted.end());
          double cut = sorted[static_cast<size_t>(0.75 * (sorted.size() - 1))];
          if (acc < cut) stop = true;
        }
        seen.push_back(acc);
      }
      if (stop && i < n - running) {
        t.state = TrialState::kStoppedEarly;
        t.reason = "below the rung's top quarter at iteration " + std::to_string(it);
        break;
      }
    }
    if (t.state == TrialState::kFinished && i >= n - running) t.state = TrialState::kRunning;
    if (i == n / 2) {
      t.state = TrialState::kFailed;
      t.reason = "RuntimeError: CUDA out of memory, batch 64";
    }
    table.compute_seconds += t.history.empty() ? 0 : t.history.back().seconds;
    table.trials.push_back(std::move(t));
  }
  for (int r = 0; r < 4; ++r) {
    std::vector<double> sorted = recorded[r];
    if (sorted.size() < 4) continue;
    std::sort(sorted.begin(), sorted.end());
    table.cutoffs.emplace_back(rungs[r], sorted[static_cast<size_t>(0.75 * (sorted.size() - 1))]);
  }
  return table;
}

}  // namespace cumulus::tune::testing
