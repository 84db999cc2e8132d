// The `budget` scheduler: promotion-based successive halving while new trials arrive, then the
// rest of a compute budget spent on the paused trials nearest the leaders.
//
// Why: a stop rule has to be right about every trial it stops, and on curves that cross or drop
// late no rule measured here was, short of running most trials far (docs/tune_replay.md). A budget
// turns the question around: with C = budget_fraction x (trials added) x max_t iterations to
// spend, which trials should have them? Nothing is stopped on its own evidence; a trial ends only
// when the budget left cannot take it to its next rung.
//   - Screening: every trial runs min_prefix iterations (m = max(grace, ceil(budget_min_prefix x
//     max_t))) before it is judged at all: judgments after one or two iterations were where every
//     rule lost its winners.
//   - Promotion (while the searcher has new configs): rungs at m x rf^k. A trial reaching a rung
//     goes on if it is in the rung's top 1/rf so far, else pauses (no resources held); a paused
//     trial is resumed once it is in its rung's top 1/rf (the highest rung first). This is ASHA
//     with promotion, and spends a few percent of the budget on the clear leaders.
//   - Re-check (the searcher has no new configs): the paused trial nearest the leaders (the
//     smallest share of its own rung's trials ahead of it; a trial that did not reach a rung
//     counts as behind every one that did) runs to its next rung, if the budget left covers that;
//     at the rung it goes on only while no paused trial is nearer the leaders. Trials whose next
//     rung the budget no longer covers are stopped. The share, not the count, of trials ahead:
//     a count favours the deep rungs, where few trials are recorded (ranked by count, of the
//     33-39 trials of 200 that reached the fourth rung on the synthetic sets, 24-31 ran to the
//     end), while a trial paused at the first rung, where values say least about the final one,
//     was rarely looked at again (docs/tune_replay.md).
//   - A trial's score at a rung (what promotion and the re-check compare) is, by default
//     (budget_score = fit), its curve extrapolated to max_t: an exponential approach to an
//     asymptote fitted to its reports so far, kept between its last value and its last value plus
//     what it has gained so far (Extrapolate). The value at an early rung says little of the
//     final one (a slow learner that ends on top is behind there); ranked by it, the top rows of
//     the replayed curve sets were cut at the first rungs, which was where `budget` lost them
//     (docs/tune_replay.md). budget_score = last ranks by the value reported at the rung (the
//     rule before 2026-12-06); line and mean by a line through, or the mean of, the reports since
//     the previous rung (against per-epoch noise; measured no better).
//   - Many trials at once (since 2026-12-07; budget_eager is the rule before): a trial at a rung
//     is judged against the trials still on their way there too. It goes on (or is resumed) only
//     if it is in the rung's top 1/rf even when each of them beats it, else it waits for them;
//     the re-check starts once every trial has run its prefix; and while other trials run, the
//     re-check resumes a paused trial only if it is in its rung's top 1/rf that way, and only if
//     the budget left then still covers taking the leader (the best score at a rung) to max_t.
//     Judged on what had reported so far, the first trials to reach a rung went on whatever they
//     were worth, and with a worker free for every paused trial the budget was spread over the
//     middle rungs with none left to reach the end: with 64 trials at once, 4 of 86 replayed
//     curve sets met the target, now 73 (docs/tune_replay.md).
// The budget counts iterations, the scheduler's clock; with uneven costs per iteration the
// compute spent differs from it by the cost's spread.
#include "scheduler/tune/budget_promotion.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace cumulus::tune {
namespace {

// Of `sorted` (a rung's scores, ascending, NaN left out), those above `score`: what TrialsAhead
// and the scheduler's places count (NaN is above nothing, nothing is above NaN).
size_t AheadIn(const std::vector<double>& sorted, double score) {
  if (std::isnan(score)) return 0;
  return static_cast<size_t>(sorted.end() - std::upper_bound(sorted.begin(), sorted.end(), score));
}

class BudgetPromotion final : public TrialScheduler {
 public:
  explicit BudgetPromotion(const SchedulerOptions& o) : o_(o) {
    auto first =
        static_cast<int64_t>(std::ceil(o.budget_min_prefix * static_cast<double>(o.max_t)));
    first = std::clamp<int64_t>(std::max(first, o.grace_period), 1, o.max_t);
    for (double m = static_cast<double>(first); m < static_cast<double>(o.max_t);
         m *= o.budget_reduction_factor) {
      auto t = static_cast<int64_t>(std::llround(m));
      if (rungs_.empty() || t > rungs_.back().milestone) {
        int64_t since = t - (rungs_.empty() ? 0 : rungs_.back().milestone);
        auto w =
            static_cast<int64_t>(std::llround(o.budget_score_window * static_cast<double>(since)));
        rungs_.push_back(Rung{t, std::max<int64_t>(w, 2), {}, {}});
        window_ = std::max(window_, rungs_.back().window);
      }
    }
  }
  std::string_view name() const override { return "budget"; }

  void OnTrialAdd(TrialId id, const Config&) override { Add(id); }

  Decision OnReport(const TrialReport& r) override {
    Trial& tr = Add(r.trial);
    Remember(tr, r);
    int64_t step = std::max<int64_t>(r.iteration - tr.last, 0);
    used_ += step;
    if (tr.target > 0) {
      reserved_ -= std::min(r.iteration, tr.target) - std::min(tr.last, tr.target);
      if (r.iteration >= tr.target) tr.target = 0;
    }
    tr.last = r.iteration;
    tr.paused = false;
    Decision d;
    Rung* rung = RungAt(r.iteration);
    if (rung == nullptr) return d;
    double score = Score(tr, *rung);
    tr.score = score;
    rung->recorded[r.trial] = score;
    rung->values[r.trial] = tr.recent.back().second;
    int64_t need = NextStop(r.iteration) - r.iteration;
    const Census census = Count();
    const size_t incoming = census.Incoming(rung->milestone);
    RungsSorted sorted;
    if (!recheck_) {
      if (!Proven(*rung, score, incoming, &sorted)) return Pause(r, *rung, NotInTop(incoming));
      if (need > PromotionRemaining())
        return Pause(r, *rung, "the budget so far does not reach the next rung");
      Reserve(tr, NextStop(r.iteration));
      return d;
    }
    const int64_t shortfall = Shortfall(census, r.trial);
    std::optional<Place> nearer = NearestPaused(Remaining(), &sorted);
    const bool others_run = census.running > 1;  // it is one of them (none counted when eager)
    if (need > Remaining()) return Pause(r, *rung, "the budget left does not reach the next rung");
    if (nearer && Nearer(*nearer, PlaceOf(tr, r.trial, &sorted)))
      return Pause(r, *rung, "a paused trial is nearer the leaders");
    if (others_run && !Proven(*rung, score, incoming, &sorted))
      return Pause(r, *rung, NotInTop(incoming));
    if (need + shortfall > Remaining())
      return Pause(r, *rung,
                   "the budget left is kept to take the leading trial (trial " +
                       std::to_string(*census.leader) + ") to iteration " +
                       std::to_string(o_.max_t));
    Reserve(tr, NextStop(r.iteration));
    return d;
  }

  void OnTrialEnd(TrialId id, bool) override {
    auto it = trials_.find(id);
    if (it == trials_.end()) return;
    Trial& tr = it->second;
    if (tr.target > 0) reserved_ -= tr.target - std::min(tr.last, tr.target);
    tr.target = 0;
    tr.paused = false;
    tr.ended = true;
    tr.history = CurveHistory();  // it reports no more
  }

  NextRun ChooseTrialToRun(bool can_start_new) override {
    NextRun next;
    Census census = Count();
    if (!can_start_new && census.screened) recheck_ = true;
    if (!recheck_) {
      // Promotion: a paused trial now in its rung's top 1/rf (counting the trials on their way
      // there as ahead of it), highest rung first.
      RungsSorted sorted;
      for (auto rung = rungs_.rbegin(); rung != rungs_.rend(); ++rung) {
        if (rung->recorded.empty()) continue;
        const size_t incoming = census.Incoming(rung->milestone);
        for (const auto& [id, score] : rung->recorded) {
          Trial& tr = trials_.at(id);
          if (tr.paused && tr.last == rung->milestone && Proven(*rung, score, incoming, &sorted) &&
              NextStop(tr.last) - tr.last <= PromotionRemaining()) {
            tr.paused = false;
            Reserve(tr, NextStop(tr.last));
            next.resume = id;
            return next;
          }
        }
      }
      return next;
    }
    int64_t remaining = Remaining();
    for (auto& [id, tr] : trials_) {
      if (!tr.paused || NextStop(tr.last) - tr.last <= remaining) continue;
      tr.paused = false;
      tr.ended = true;
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "paused at iteration %lld, and the budget left (%lld iterations of %lld) does "
                    "not reach its next rung at %lld",
                    static_cast<long long>(tr.last), static_cast<long long>(remaining),
                    static_cast<long long>(Budget()), static_cast<long long>(NextStop(tr.last)));
      next.stop.emplace_back(id, buf);
    }
    // The paused trial nearest the leaders, if the budget left also keeps what takes the leader
    // to max_t, and, while others run, it is in its rung's top 1/rf even if each trial on its way
    // there beats it; else the leader itself, if it is paused; else none (a trial that ends or
    // reaches a rung asks again).
    if (!next.stop.empty()) census = Count();  // those stopped no longer count
    RungsSorted sorted;
    auto may_run = [&](TrialId id) {
      const Trial& tr = trials_.at(id);
      if (NextStop(tr.last) - tr.last + Shortfall(census, id) > remaining) return false;
      if (census.running == 0) return true;
      const Rung* rung = RungAt(tr.last);
      return rung != nullptr && Proven(*rung, tr.score, census.Incoming(tr.last), &sorted);
    };
    std::optional<TrialId> pick;
    if (std::optional<Place> nearest = NearestPaused(remaining, &sorted);
        nearest && may_run(nearest->id)) {
      pick = nearest->id;
    } else if (census.leader && trials_.at(*census.leader).paused && may_run(*census.leader)) {
      pick = census.leader;
    }
    if (pick) {
      Trial& tr = trials_.at(*pick);
      tr.paused = false;
      Reserve(tr, NextStop(tr.last));
      next.resume = pick;
    }
    return next;
  }

  // In the metric's units: the rung's top-1/rf quantile of the values reported there. Under a
  // score other than the value (fit by default), trials are ranked by their scores, so the mark
  // is where the cut would be by value: some trials below it go on, some above it pause.
  std::vector<Cutoff> Cutoffs() const override {
    std::vector<Cutoff> out;
    for (const Rung& rung : rungs_) {
      if (rung.values.empty()) continue;
      std::vector<double> v;
      for (const auto& [_, x] : rung.values) v.push_back(x);
      double c = Percentile(v, (1 - 1 / o_.budget_reduction_factor) * 100);
      out.push_back(Cutoff{rung.milestone, o_.mode == Mode::kMax ? c : -c});
    }
    return out;
  }

 private:
  struct Trial {
    int64_t last = 0;    // the last iteration reported
    double score = 0;    // its score at its last rung (higher is better)
    int64_t target = 0;  // re-check: the iteration the reserved budget takes it to (0: none)
    bool paused = false;
    bool ended = false;
    // Its last reports (iteration, value as a score), oldest first, at most window_ of them.
    std::deque<std::pair<int64_t, double>> recent;
    CurveHistory history;  // budget_score fit: its reports, evenly thinned
  };
  struct Rung {
    int64_t milestone;
    int64_t window;  // how many of a trial's last reports its score here is made of
    std::map<TrialId, double> recorded;  // each trial's score here
    std::map<TrialId, double> values;    // the value each reported here (as a score)
  };

  void Remember(Trial& tr, const TrialReport& r) {
    // A trial resumed from an earlier checkpoint reports iterations again: they replace the old.
    while (!tr.recent.empty() && tr.recent.back().first >= r.iteration) tr.recent.pop_back();
    tr.recent.emplace_back(r.iteration, o_.mode == Mode::kMax ? r.metric : -r.metric);
    while (static_cast<int64_t>(tr.recent.size()) > window_) tr.recent.pop_front();
    if (o_.budget_score == BudgetScore::kFit) tr.history.Add(r.iteration, tr.recent.back().second);
  }

  double Score(const Trial& tr, const Rung& rung) const {
    double last = tr.recent.back().second;
    if (o_.budget_score == BudgetScore::kFit) return Extrapolate(tr.history.Reports(), o_.max_t);
    size_t n = std::min<size_t>(tr.recent.size(), static_cast<size_t>(rung.window));
    if (o_.budget_score == BudgetScore::kLast || n < 2) return last;
    auto begin = tr.recent.end() - static_cast<std::ptrdiff_t>(n);
    double mx = 0, my = 0;
    for (auto it = begin; it != tr.recent.end(); ++it) {
      mx += static_cast<double>(it->first);
      my += it->second;
    }
    mx /= static_cast<double>(n);
    my /= static_cast<double>(n);
    if (o_.budget_score == BudgetScore::kMean) return my;
    double sxy = 0, sxx = 0;
    for (auto it = begin; it != tr.recent.end(); ++it) {
      double dx = static_cast<double>(it->first) - mx;
      sxy += dx * (it->second - my);
      sxx += dx * dx;
    }
    if (sxx <= 0) return my;
    return my + sxy / sxx * (static_cast<double>(rung.milestone) - mx);
  }

  static std::string Format(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
  }

  Trial& Add(TrialId id) {
    auto [it, added] = trials_.try_emplace(id);
    if (added) {
      ++added_;
      it->second.target = FirstRung();  // the screening prefix, promised to every trial
      reserved_ += it->second.target;
    }
    return it->second;
  }

  Decision Pause(const TrialReport& r, const Rung& rung, const std::string& why) {
    trials_.at(r.trial).paused = true;
    Decision d;
    d.action = Action::kPause;
    d.reason = "waits at the rung at iteration " + std::to_string(rung.milestone) + " (" +
               Format(r.metric) + ScoreNote(trials_.at(r.trial)) + "): " + why;
    return d;
  }

  // ", its score there S" where the score is not the value reported (budget_score).
  std::string ScoreNote(const Trial& tr) const {
    if (o_.budget_score == BudgetScore::kLast || tr.score == tr.recent.back().second) return "";
    return ", its score there " + Format(o_.mode == Mode::kMax ? tr.score : -tr.score);
  }

  int64_t Budget() const {
    return static_cast<int64_t>(o_.budget_fraction * static_cast<double>(added_) *
                                static_cast<double>(o_.max_t));
  }
  int64_t Remaining() const { return Budget() - used_ - reserved_; }
  // While new trials arrive, promotions may spend up to budget_promotion_share of the budget so
  // far; the rest is kept for the re-check, when every trial's prefix can be compared.
  int64_t PromotionRemaining() const {
    return static_cast<int64_t>(o_.budget_promotion_share * static_cast<double>(Budget())) - used_ -
           reserved_;
  }

  void Reserve(Trial& tr, int64_t target) {
    if (tr.target > 0) reserved_ -= tr.target - tr.last;
    tr.target = target;
    reserved_ += target - tr.last;
  }

  Rung* RungAt(int64_t t) {
    for (Rung& r : rungs_)
      if (r.milestone == t) return &r;
    return nullptr;
  }
  const Rung* RungAt(int64_t t) const { return const_cast<BudgetPromotion*>(this)->RungAt(t); }

  int64_t FirstRung() const { return rungs_.empty() ? o_.max_t : rungs_.front().milestone; }

  int64_t NextStop(int64_t t) const {
    for (const Rung& r : rungs_)
      if (r.milestone > t) return r.milestone;
    return o_.max_t;
  }

  // The score a trial needs to be in its rung's top 1/rf.
  double TopCut(const Rung& rung) const {
    std::vector<double> v;
    for (const auto& [_, x] : rung.recorded) v.push_back(x);
    return Percentile(v, (1 - 1 / o_.budget_reduction_factor) * 100);
  }

  // What the choices below count, in one pass over the trials: those running (not paused, not
  // ended; a trial added and not yet placed counts), how many of them are on their way to each
  // rung, the leader: the trial not ended with the best score at a rung (ties: the deeper rung,
  // then the older trial), and whether every trial has reached the first rung or ended.
  struct Census {
    bool screened = true;
    size_t running = 0;
    std::map<int64_t, size_t> incoming;  // rung -> running trials whose next stop it is
    std::optional<TrialId> leader;
    size_t Incoming(int64_t rung) const {
      auto it = incoming.find(rung);
      return it == incoming.end() ? 0 : it->second;
    }
  };
  Census Count() const {
    Census c;
    if (o_.budget_eager) return c;  // nothing waits, nothing is kept, the re-check may start
    const Trial* best = nullptr;
    for (const auto& [id, tr] : trials_) {
      if (tr.ended) continue;
      if (!tr.paused) {
        ++c.running;
        ++c.incoming[NextStop(tr.last)];
      }
      if (tr.last < FirstRung()) c.screened = false;
      if (tr.last < FirstRung() || std::isnan(tr.score)) continue;
      if (best == nullptr || tr.score > best->score ||
          (tr.score == best->score && tr.last > best->last)) {
        best = &tr;
        c.leader = id;
      }
    }
    return c;
  }
  // What taking the leader to max_t needs beyond what is reserved for it, unless `id` is it: the
  // budget's re-check keeps that much, so that it does not spread the budget over many trials'
  // middle rungs and leave none to reach the end (what it did with many trials running at once).
  int64_t Shortfall(const Census& c, TrialId id) const {
    if (!c.leader || *c.leader == id) return 0;
    const Trial& tr = trials_.at(*c.leader);
    return o_.max_t - std::max(tr.last, tr.target);
  }

  // Where a trial stands at its own rung: the share of the rung's trials with a higher score
  // (infinite with no rung or an empty one), how many those are, its rung, its id.
  struct Place {
    double share;
    size_t ahead;
    int64_t last;
    TrialId id;
  };
  // Nearer the leaders: a smaller share of its rung ahead; then fewer trials ahead; then the
  // deeper rung; then the older trial.
  static bool Nearer(const Place& a, const Place& b) {
    if (a.share != b.share) return a.share < b.share;
    if (a.ahead != b.ahead) return a.ahead < b.ahead;
    if (a.last != b.last) return a.last > b.last;
    return a.id < b.id;
  }
  // Each rung's scores, sorted (NaN left out), and its TopCut, filled as they are needed: one
  // choice sorts a rung once and places each trial by binary search. Walking the rung for every
  // pair of trials compared made a choice cubic in the trials (30 s for one 1,000-trial replay).
  struct SortedRung {
    std::vector<double> scores;
    std::optional<double> cut;
  };
  using RungsSorted = std::map<int64_t, SortedRung>;
  SortedRung& Sorted(const Rung& rung, RungsSorted* sorted) const {
    auto [it, fresh] = sorted->try_emplace(rung.milestone);
    if (fresh) {
      for (const auto& [_, x] : rung.recorded)
        if (!std::isnan(x)) it->second.scores.push_back(x);
      std::sort(it->second.scores.begin(), it->second.scores.end());
    }
    return it->second;
  }
  static size_t Ahead(const SortedRung& s, double score) { return AheadIn(s.scores, score); }
  // As TrialsAhead and SharesAhead count, over `sorted`.
  Place PlaceOf(const Trial& tr, TrialId id, RungsSorted* sorted) const {
    Place p{std::numeric_limits<double>::infinity(), SIZE_MAX, tr.last, id};
    const Rung* rung = RungAt(tr.last);
    if (rung == nullptr) return p;
    p.ahead = Ahead(Sorted(*rung, sorted), tr.score);
    if (!rung->recorded.empty())
      p.share = static_cast<double>(p.ahead) / static_cast<double>(rung->recorded.size());
    return p;
  }

  // In its rung's top 1/rf even if each of the `incoming` trials on their way there beats it:
  // fewer than (recorded + incoming) / rf ahead. With none on the way, at or above TopCut (the
  // rule for promotion since the start). Deciding on what has reported so far when many trials
  // run at once made the first to arrive go on, whatever they were worth.
  bool Proven(const Rung& rung, double score, size_t incoming, RungsSorted* sorted) const {
    SortedRung& s = Sorted(rung, sorted);
    if (incoming == 0) {
      if (!s.cut) s.cut = TopCut(rung);
      return score >= *s.cut;
    }
    return static_cast<double>(Ahead(s, score) + incoming) <
           static_cast<double>(rung.recorded.size() + incoming) / o_.budget_reduction_factor;
  }
  std::string NotInTop(size_t incoming) const {
    std::string why = "not in its top 1/" + Format(o_.budget_reduction_factor) + " so far";
    if (incoming > 0)
      why += ", counting the " + std::to_string(incoming) + (incoming == 1 ? " trial" : " trials") +
             " on their way there as ahead of it";
    return why;
  }

  // The paused trial nearest the leaders whose next rung fits in `remaining`.
  std::optional<Place> NearestPaused(int64_t remaining, RungsSorted* sorted) const {
    std::optional<Place> best;
    for (const auto& [id, tr] : trials_) {
      if (!tr.paused || NextStop(tr.last) - tr.last > remaining) continue;
      Place p = PlaceOf(tr, id, sorted);
      if (!best || Nearer(p, *best)) best = p;
    }
    return best;
  }

  SchedulerOptions o_;
  std::vector<Rung> rungs_;
  int64_t window_ = 2;  // the largest window of any rung: the reports kept per trial
  std::map<TrialId, Trial> trials_;
  uint64_t added_ = 0;    // trials seen: the budget's measure of the experiment's size
  int64_t used_ = 0;      // iterations reported over all trials
  int64_t reserved_ = 0;  // iterations promised to re-checked trials and not yet run
  bool recheck_ = false;  // the searcher has said it has no new configs
};

}  // namespace

size_t TrialsAhead(const std::map<TrialId, double>* rung_scores, double score) {
  if (rung_scores == nullptr) return SIZE_MAX;
  std::vector<double> sorted;  // as the scheduler's SortedRung holds a rung
  for (const auto& [_, x] : *rung_scores)
    if (!std::isnan(x)) sorted.push_back(x);
  std::sort(sorted.begin(), sorted.end());
  return AheadIn(sorted, score);
}

double SharesAhead(const std::map<TrialId, double>* rung_scores, double score) {
  if (rung_scores == nullptr || rung_scores->empty())
    return std::numeric_limits<double>::infinity();
  return static_cast<double>(TrialsAhead(rung_scores, score)) /
         static_cast<double>(rung_scores->size());
}

void CurveHistory::Add(int64_t iteration, double score) {
  std::pair<int64_t, double> report{iteration, score};
  if (!reported_) {
    reported_ = true;
    first_ = latest_ = report;
    return;
  }
  if (iteration <= latest_.first) {
    // Resumed from an earlier checkpoint: the reports from there on are replaced.
    if (iteration <= first_.first) {
      *this = CurveHistory();
      Add(iteration, score);
      return;
    }
    while (!kept_.empty() && kept_.back().first >= iteration) kept_.pop_back();
    count_ = static_cast<int64_t>(kept_.size()) * stride_;
    latest_ = report;
    return;
  }
  latest_ = report;
  if (++count_ % stride_ != 0) return;
  kept_.push_back(report);
  if (kept_.size() <= kMax) return;
  // Every second kept (those at multiples of the doubled stride): the spacing stays even, and a
  // fit still sees the early rise, not only the recent tail.
  size_t out = 0;
  for (size_t i = 1; i < kept_.size(); i += 2) kept_[out++] = kept_[i];
  kept_.resize(out);
  stride_ *= 2;
}

std::vector<std::pair<int64_t, double>> CurveHistory::Reports() const {
  std::vector<std::pair<int64_t, double>> out;
  if (!reported_) return out;
  out.reserve(kept_.size() + 2);
  out.push_back(first_);
  for (const auto& r : kept_)
    if (r.first > out.back().first) out.push_back(r);
  if (latest_.first > out.back().first) out.push_back(latest_);
  return out;
}

// A restored experiment replays its journaled decisions through this code and refuses a decision
// that differs: a change to what this function returns (grid, refinement, clamp, thinning) changes
// what "fit" means, and needs a new budget_score name, not an edit of this one.
double Extrapolate(const std::vector<std::pair<int64_t, double>>& reports, int64_t max_t) {
  if (reports.empty()) return 0;
  double last = reports.back().second;
  if (reports.size() < 3) return last;
  double gain = std::max(last - reports.front().second, 0.0);
  auto n = static_cast<double>(reports.size());
  // The least-squares c + d exp(-t / tau) for one tau: its squared error and its value at max_t.
  auto fit = [&](double log_tau) -> std::pair<double, double> {
    double tau = std::exp(log_tau), sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& [t, y] : reports) {
      double x = std::exp(-static_cast<double>(t) / tau);
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    double det = n * sxx - sx * sx;
    if (det <= 1e-12 * n * n) return {std::numeric_limits<double>::infinity(), last};
    double d = (n * sxy - sx * sy) / det, c = (sy - d * sx) / n, sse = 0;
    for (const auto& [t, y] : reports) {
      double e = c + d * std::exp(-static_cast<double>(t) / tau) - y;
      sse += e * e;
    }
    return {sse, c + d * std::exp(-static_cast<double>(max_t) / tau)};
  };
  // tau from 0.3 iterations to 3 x max_t: a log grid, then a golden-section search between the
  // best point's neighbours.
  constexpr int kGrid = 60;
  const double lo = std::log(0.3), hi = std::log(3.0 * static_cast<double>(max_t));
  const double step = (hi - lo) / (kGrid - 1);
  int best_g = 0;
  std::pair<double, double> best{std::numeric_limits<double>::infinity(), last};
  for (int g = 0; g < kGrid; ++g) {
    auto f = fit(lo + step * g);
    if (f.first < best.first) best = f, best_g = g;
  }
  if (std::isinf(best.first)) return last;
  const double kGolden = (std::sqrt(5.0) - 1) / 2;
  double a = lo + step * std::max(best_g - 1, 0), b = lo + step * std::min(best_g + 1, kGrid - 1);
  double x1 = b - kGolden * (b - a), x2 = a + kGolden * (b - a);
  auto f1 = fit(x1), f2 = fit(x2);
  for (int i = 0; i < 30; ++i) {
    if (f1.first <= f2.first) {
      b = x2, x2 = x1, f2 = f1, x1 = b - kGolden * (b - a), f1 = fit(x1);
    } else {
      a = x1, x1 = x2, f1 = f2, x2 = a + kGolden * (b - a), f2 = fit(x2);
    }
  }
  for (const auto& f : {f1, f2})
    if (f.first < best.first) best = f;
  return std::clamp(best.second, last, last + gain);
}

Result<std::unique_ptr<TrialScheduler>> MakeBudgetPromotionScheduler(const SchedulerOptions& o) {
  return std::unique_ptr<TrialScheduler>(new BudgetPromotion(o));
}

}  // namespace cumulus::tune
