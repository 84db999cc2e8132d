// Searchers: where a tuning experiment's next trial config comes from. Pure code (no I/O, no
// clock); each one's whole state is saved as bytes and restored, so a restored experiment
// continues the searcher's sequence exactly (the live tuner journals it; see tune/journal.h).
//
//   random: every parameter drawn at random; Grid parameters are enumerated, so num_samples
//           rounds of random draws cover the grid num_samples times (Ray Tune's semantics).
//   grid:   every combination of the Grid and Choice parameters once per round, in order; numeric
//           ranges drawn at random for each point.
//   tpe:    the Tree-structured Parzen Estimator (Bergstra et al. 2011; Optuna's default sampler,
//           with its defaults: 10 random start-up trials, 24 candidates, gamma = min(ceil(n/10),
//           25)), each parameter modelled independently; trials stopped early count as worse than
//           every trial that went further (ranked by iterations reached, then by score).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cumulus/status.h"
#include "cumulus/tune_space.h"
#include "scheduler/tune/random.h"

namespace cumulus::tune {

using TrialId = uint64_t;

class Searcher {
 public:
  virtual ~Searcher() = default;
  virtual std::string_view name() const = 0;
  // The config of trial `id` (ids are given in increasing order), or nullopt once the searcher
  // has given all it will (num_samples reached). An error if a Conditional function throws.
  virtual Result<std::optional<Config>> Suggest(TrialId id) = 0;
  // Trial `id` ended. `score`: its result, higher is better (the tuner turns "min" metrics
  // around), nullopt if it failed before reporting; `iterations`: how far it got.
  virtual void OnTrialEnd(TrialId id, std::optional<double> score, int64_t iterations) {}
  // The searcher's whole state, and its inverse (on a searcher made with the same space and
  // options). Restore fails with InvalidArgument on malformed bytes and changes nothing then.
  virtual std::string Save() const = 0;
  virtual Status Restore(std::string_view state) = 0;
};

enum class SearcherKind { kRandom, kGrid, kTpe };
Result<SearcherKind> ParseSearcherKind(std::string_view name);  // "random", "grid", "tpe"

struct SearcherOptions {
  SearcherKind kind = SearcherKind::kRandom;
  uint64_t seed = 0;
  // Rounds: random and tpe give num_samples x GridSize() configs; grid gives num_samples rounds
  // of every Grid x Choice combination.
  uint64_t num_samples = 1;
  // tpe: random configs before the model is used, and candidates scored per parameter.
  uint64_t tpe_startup_trials = 10;
  uint64_t tpe_candidates = 24;
};

// Validates the space (SearchSpace::Validate) and the options.
Result<std::unique_ptr<Searcher>> MakeSearcher(const SearchSpace& space,
                                               const SearcherOptions& options);

// ---- building blocks shared with the schedulers (PBT's resampling) ---------------------------

// A value drawn from `p` (not Grid or Conditional: those take a point and a config).
Value SampleParam(const Param& p, Rng& rng);
// Every parameter of `space` in order: Grid ones from `grid_values` (by name), others drawn,
// Conditional ones computed. InvalidArgument if a Conditional function throws or a Grid value is
// missing from `grid_values`.
Result<Config> CompleteConfig(const SearchSpace& space, Rng& rng, const Config& grid_values);

}  // namespace cumulus::tune
