#include "scheduler/tune/searcher.h"

#include <cmath>
#include <exception>

#include "scheduler/tune/tpe.h"

namespace cumulus::tune {

Result<SearcherKind> ParseSearcherKind(std::string_view name) {
  if (name == "random") return SearcherKind::kRandom;
  if (name == "grid") return SearcherKind::kGrid;
  if (name == "tpe") return SearcherKind::kTpe;
  return Status::InvalidArgument("unknown searcher \"" + std::string(name) +
                                 "\": use random, grid or tpe");
}

Value SampleParam(const Param& p, Rng& rng) {
  switch (p.kind) {
    case Param::Kind::kUniform:
      return p.lo + (p.hi - p.lo) * rng.Uniform01();
    case Param::Kind::kLogUniform:
      return std::exp(std::log(p.lo) + (std::log(p.hi) - std::log(p.lo)) * rng.Uniform01());
    case Param::Kind::kQUniform: {
      double first = std::ceil(p.lo / p.q), last = std::floor(p.hi / p.q);
      double k = first + static_cast<double>(rng.Below(static_cast<uint64_t>(last - first) + 1));
      return k * p.q;
    }
    case Param::Kind::kRandInt: {
      auto lo = static_cast<int64_t>(p.lo), hi = static_cast<int64_t>(p.hi);
      return lo + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(hi - lo)));
    }
    case Param::Kind::kChoice:
    case Param::Kind::kGrid:
      return p.values[rng.Below(p.values.size())];
    case Param::Kind::kConditional:
      break;
  }
  return Value{};
}

Result<Config> CompleteConfig(const SearchSpace& space, Rng& rng, const Config& grid_values) {
  Config c;
  for (const Param& p : space.params()) {
    if (auto it = grid_values.values().find(p.name); it != grid_values.values().end()) {
      c.Set(p.name, it->second);
      continue;
    }
    if (p.kind == Param::Kind::kGrid)
      return Status::Internal("grid parameter \"" + p.name + "\" has no value in the grid point");
    if (p.kind == Param::Kind::kConditional) {
      try {
        c.Set(p.name, p.fn(c));
      } catch (const std::exception& e) {
        return Status::InvalidArgument("conditional parameter \"" + p.name +
                                       "\" threw: " + e.what());
      } catch (...) {
        return Status::InvalidArgument("conditional parameter \"" + p.name +
                                       "\" threw a non-standard exception");
      }
      continue;
    }
    c.Set(p.name, SampleParam(p, rng));
  }
  return c;
}

namespace {

// Enumerates the product of the parameters `p` of the space for which enumerate(p) holds, first
// parameter slowest. Then draws the rest at random.
class EnumeratingSearcher final : public Searcher {
 public:
  EnumeratingSearcher(std::string_view name, SearchSpace space, const SearcherOptions& o,
                      bool choices_too)
      : name_(name), space_(std::move(space)), rng_(o.seed) {
    for (const Param& p : space_.params())
      if (p.kind == Param::Kind::kGrid || (choices_too && p.kind == Param::Kind::kChoice))
        axes_.push_back(&p);
    uint64_t size = 1;
    for (const Param* p : axes_)
      size = size > UINT64_MAX / p->values.size() ? UINT64_MAX : size * p->values.size();
    points_ = size;
    total_ = o.num_samples > UINT64_MAX / size ? UINT64_MAX : o.num_samples * size;
  }

  std::string_view name() const override { return name_; }

  Result<std::optional<Config>> Suggest(TrialId) override {
    if (given_ >= total_) return std::optional<Config>{};
    uint64_t k = given_ % points_;
    Config point;
    for (size_t i = axes_.size(); i-- > 0;) {
      const Param* p = axes_[i];
      point.Set(p->name, p->values[k % p->values.size()]);
      k /= p->values.size();
    }
    CUMULUS_ASSIGN_OR_RETURN(Config c, CompleteConfig(space_, rng_, point));
    ++given_;
    return std::optional<Config>(std::move(c));
  }

  std::string Save() const override {
    std::string out;
    PutField(out, std::to_string(given_));
    PutField(out, rng_.Save());
    return out;
  }

  Status Restore(std::string_view state) override {
    uint64_t n = 0;
    std::string_view rng;
    if (!TakeCount(state, &n) || !TakeField(state, &rng) || !state.empty())
      return Status::InvalidArgument(std::string(name_) + " searcher: saved state is malformed");
    Rng r;
    CUMULUS_RETURN_IF_ERROR(r.Restore(rng));
    given_ = n;
    rng_ = r;
    return Status::OK();
  }

 private:
  std::string_view name_;
  SearchSpace space_;
  Rng rng_;
  std::vector<const Param*> axes_;
  uint64_t points_ = 1;
  uint64_t total_ = 0;
  uint64_t given_ = 0;
};

}  // namespace

Result<std::unique_ptr<Searcher>> MakeSearcher(const SearchSpace& space, const SearcherOptions& o) {
  CUMULUS_RETURN_IF_ERROR(space.Validate());
  if (o.num_samples == 0) return Status::InvalidArgument("num_samples must be at least 1");
  switch (o.kind) {
    case SearcherKind::kRandom:
      return std::unique_ptr<Searcher>(new EnumeratingSearcher("random", space, o, false));
    case SearcherKind::kGrid:
      return std::unique_ptr<Searcher>(new EnumeratingSearcher("grid", space, o, true));
    case SearcherKind::kTpe:
      if (o.tpe_candidates == 0)
        return Status::InvalidArgument("tpe: the number of candidates must be at least 1");
      return MakeTpeSearcher(space, o);
  }
  return Status::InvalidArgument("unknown searcher kind");
}

}  // namespace cumulus::tune
