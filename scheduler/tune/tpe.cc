#include "scheduler/tune/tpe.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace cumulus::tune {
namespace {

struct Observation {
  Config config;
  double score = 0;
  int64_t iterations = 0;
};

// A numeric parameter in the space TPE models it in: log for LogUniform, widened by half a step
// for integers and quantized values, so each one owns an interval of equal width.
struct Axis {
  double lo = 0, hi = 0;
};

Axis AxisOf(const Param& p) {
  switch (p.kind) {
    case Param::Kind::kLogUniform:
      return {std::log(p.lo), std::log(p.hi)};
    case Param::Kind::kRandInt:
      return {p.lo - 0.5, p.hi - 0.5};
    case Param::Kind::kQUniform:
      return {std::ceil(p.lo / p.q) * p.q - p.q / 2, std::floor(p.hi / p.q) * p.q + p.q / 2};
    default:
      return {p.lo, p.hi};
  }
}

double ToAxis(const Param& p, const Value& v) {
  double x = 0;
  if (auto* d = std::get_if<double>(&v)) x = *d;
  if (auto* i = std::get_if<int64_t>(&v)) x = static_cast<double>(*i);
  return p.kind == Param::Kind::kLogUniform ? std::log(std::max(x, 1e-300)) : x;
}

Value FromAxis(const Param& p, double x) {
  switch (p.kind) {
    case Param::Kind::kLogUniform:
      return std::clamp(std::exp(x), p.lo, std::nextafter(p.hi, p.lo));
    case Param::Kind::kRandInt:
      return std::clamp(static_cast<int64_t>(std::llround(x)), static_cast<int64_t>(p.lo),
                        static_cast<int64_t>(p.hi) - 1);
    case Param::Kind::kQUniform: {
      double first = std::ceil(p.lo / p.q), last = std::floor(p.hi / p.q);
      return std::clamp(std::round(x / p.q), first, last) * p.q;
    }
    default:
      return std::clamp(x, p.lo, std::nextafter(p.hi, p.lo));
  }
}

double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// A Parzen estimator over [lo, hi]: a truncated Gaussian at each observation and one wide prior.
class Parzen {
 public:
  Parzen(const std::vector<double>& xs, Axis a) : a_(a) {
    double range = a.hi - a.lo;
    mus_ = xs;
    mus_.push_back((a.lo + a.hi) / 2);
    std::vector<size_t> order(mus_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return mus_[x] < mus_[y]; });
    sigmas_.assign(mus_.size(), range);
    double min_sigma = range / std::min(100.0, static_cast<double>(mus_.size()) + 1);
    for (size_t k = 0; k < order.size(); ++k) {
      size_t i = order[k];
      if (i == mus_.size() - 1) continue;  // the prior keeps the whole range
      double left = k == 0 ? a.lo : mus_[order[k - 1]];
      double right = k + 1 == order.size() ? a.hi : mus_[order[k + 1]];
      double s = std::max(mus_[i] - left, right - mus_[i]);
      sigmas_[i] = std::clamp(s, min_sigma, range);
    }
  }

  double Sample(Rng& rng) const {
    size_t i = rng.Below(mus_.size());
    for (int tries = 0; tries < 100; ++tries) {
      double x = mus_[i] + sigmas_[i] * rng.Normal();
      if (x >= a_.lo && x <= a_.hi) return x;
    }
    return std::clamp(mus_[i], a_.lo, a_.hi);
  }

  double LogPdf(double x) const {
    double sum = 0;
    for (size_t i = 0; i < mus_.size(); ++i) {
      double s = sigmas_[i];
      double mass = NormalCdf((a_.hi - mus_[i]) / s) - NormalCdf((a_.lo - mus_[i]) / s);
      double z = (x - mus_[i]) / s;
      sum += std::exp(-0.5 * z * z) / (s * std::sqrt(2 * M_PI) * std::max(mass, 1e-12));
    }
    return std::log(std::max(sum / static_cast<double>(mus_.size()), 1e-300));
  }

 private:
  Axis a_;
  std::vector<double> mus_, sigmas_;
};

size_t IndexOf(const Param& p, const Value& v) {
  for (size_t k = 0; k < p.values.size(); ++k)
    if (p.values[k] == v) return k;
  return 0;
}

class TpeSearcher final : public Searcher {
 public:
  TpeSearcher(SearchSpace space, const SearcherOptions& o)
      : space_(std::move(space)), o_(o), rng_(o.seed) {
    uint64_t g = space_.GridSize();
    total_ = o.num_samples > UINT64_MAX / g ? UINT64_MAX : o.num_samples * g;
  }

  std::string_view name() const override { return "tpe"; }

  Result<std::optional<Config>> Suggest(TrialId id) override {
    if (given_ >= total_) return std::optional<Config>{};
    Config c;
    if (done_.size() < o_.tpe_startup_trials) {
      CUMULUS_ASSIGN_OR_RETURN(c, RandomConfig());
    } else {
      CUMULUS_ASSIGN_OR_RETURN(c, ModelConfig());
    }
    ++given_;
    pending_[id] = c;
    return std::optional<Config>(std::move(c));
  }

  void OnTrialEnd(TrialId id, std::optional<double> score, int64_t iterations) override {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    if (score.has_value() && std::isfinite(*score))
      done_.push_back(Observation{it->second, *score, iterations});
    pending_.erase(it);
  }

  std::string Save() const override {
    std::string out;
    PutField(out, std::to_string(given_));
    PutField(out, rng_.Save());
    PutField(out, std::to_string(pending_.size()));
    for (const auto& [id, c] : pending_) {
      PutField(out, std::to_string(id));
      PutField(out, c.Encode());
    }
    PutField(out, std::to_string(done_.size()));
    char buf[48];
    for (const Observation& ob : done_) {
      PutField(out, ob.config.Encode());
      std::snprintf(buf, sizeof buf, "%a", ob.score);
      PutField(out, buf);
      PutField(out, std::to_string(ob.iterations));
    }
    return out;
  }

  Status Restore(std::string_view state) override {
    auto bad = [] { return Status::InvalidArgument("tpe searcher: saved state is malformed"); };
    std::string_view f;
    auto number = [&](uint64_t* n) { return TakeCount(state, n); };
    uint64_t given = 0, npending = 0, ndone = 0;
    if (!number(&given) || !TakeField(state, &f)) return bad();
    Rng rng;
    CUMULUS_RETURN_IF_ERROR(rng.Restore(f));
    if (!number(&npending)) return bad();
    std::map<TrialId, Config> pending;
    for (uint64_t i = 0; i < npending; ++i) {
      uint64_t id = 0;
      if (!number(&id) || !TakeField(state, &f)) return bad();
      Result<Config> c = Config::Decode(f);
      if (!c.ok()) return bad();
      pending[id] = *c;
    }
    if (!number(&ndone)) return bad();
    std::vector<Observation> done;
    for (uint64_t i = 0; i < ndone; ++i) {
      if (!TakeField(state, &f)) return bad();
      Result<Config> c = Config::Decode(f);
      if (!c.ok() || !TakeField(state, &f)) return bad();
      std::string s(f);
      char* end = nullptr;
      double score = std::strtod(s.c_str(), &end);
      uint64_t iters = 0;
      if (s.empty() || *end != '\0' || !number(&iters)) return bad();
      done.push_back(Observation{*c, score, static_cast<int64_t>(iters)});
    }
    if (!state.empty()) return bad();
    given_ = given, rng_ = rng, pending_ = std::move(pending), done_ = std::move(done);
    return Status::OK();
  }

 private:
  Result<Config> RandomConfig() {
    Config grid;
    for (const Param& p : space_.params())
      if (p.kind == Param::Kind::kGrid) grid.Set(p.name, SampleParam(p, rng_));
    return CompleteConfig(space_, rng_, grid);
  }

  Result<Config> ModelConfig() {
    std::vector<const Observation*> ranked;
    for (const Observation& ob : done_) ranked.push_back(&ob);
    std::stable_sort(ranked.begin(), ranked.end(), [](const Observation* a, const Observation* b) {
      if (a->iterations != b->iterations) return a->iterations > b->iterations;
      return a->score > b->score;
    });
    size_t n_good = std::min<size_t>(
        25, std::max<size_t>(1, static_cast<size_t>(std::ceil(0.1 * ranked.size()))));
    std::vector<const Observation*> good(ranked.begin(), ranked.begin() + n_good);
    std::vector<const Observation*> bad(ranked.begin() + n_good, ranked.end());

    Config chosen;
    for (const Param& p : space_.params()) {
      if (p.kind == Param::Kind::kConditional) continue;
      if (p.numeric()) {
        Axis a = AxisOf(p);
        auto xs = [&](const std::vector<const Observation*>& set) {
          std::vector<double> out;
          for (const Observation* ob : set)
            if (auto it = ob->config.values().find(p.name); it != ob->config.values().end())
              out.push_back(std::clamp(ToAxis(p, it->second), a.lo, a.hi));
          return out;
        };
        Parzen l(xs(good), a), g(xs(bad), a);
        double best_x = 0, best = -INFINITY;
        for (uint64_t k = 0; k < o_.tpe_candidates; ++k) {
          double x = l.Sample(rng_);
          double score = l.LogPdf(x) - g.LogPdf(x);
          if (score > best) best = score, best_x = x;
        }
        chosen.Set(p.name, FromAxis(p, best_x));
      } else {
        size_t n = p.values.size();
        auto weights = [&](const std::vector<const Observation*>& set) {
          std::vector<double> w(n, 1.0);
          for (const Observation* ob : set)
            if (auto it = ob->config.values().find(p.name); it != ob->config.values().end())
              w[IndexOf(p, it->second)] += 1.0;
          double sum = 0;
          for (double x : w) sum += x;
          for (double& x : w) x /= sum;
          return w;
        };
        std::vector<double> l = weights(good), g = weights(bad);
        size_t best_k = 0;
        double best = -INFINITY;
        for (uint64_t c = 0; c < o_.tpe_candidates; ++c) {
          double u = rng_.Uniform01(), acc = 0;
          size_t k = 0;
          for (; k + 1 < n; ++k) {
            acc += l[k];
            if (u < acc) break;
          }
          double score = std::log(l[k]) - std::log(g[k]);
          if (score > best) best = score, best_k = k;
        }
        chosen.Set(p.name, p.values[best_k]);
      }
    }
    // Conditional parameters from the chosen values, in order.
    Config grid;
    for (const auto& [k, v] : chosen.values()) grid.Set(k, v);
    return CompleteConfig(space_, rng_, grid);
  }

  SearchSpace space_;
  SearcherOptions o_;
  Rng rng_;
  uint64_t total_ = 0;
  uint64_t given_ = 0;
  std::map<TrialId, Config> pending_;
  std::vector<Observation> done_;
};

}  // namespace

Result<std::unique_ptr<Searcher>> MakeTpeSearcher(const SearchSpace& space,
                                                  const SearcherOptions& options) {
  return std::unique_ptr<Searcher>(new TpeSearcher(space, options));
}

}  // namespace cumulus::tune
