// Tests of the `budget` trial scheduler (budget_promotion.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "scheduler/tune/budget_promotion.h"
#include "scheduler/tune/random.h"
#include "scheduler/tune/trial_scheduler.h"

namespace cumulus::tune {
namespace {

// The rung layout these tests are written for: a 5 % prefix (the default before 2026-12-07), so
// max_t 40 has rungs at 2, 4, 8, 16, 32.
SchedulerOptions BudgetOptions(int64_t max_t) {
  SchedulerOptions o;
  o.kind = SchedulerKind::kBudget;
  o.max_t = max_t;
  o.budget_min_prefix = 0.05;
  return o;
}

TEST(BudgetPromotion, IsTheDefault) {
  EXPECT_EQ(SchedulerOptions().kind, SchedulerKind::kBudget);
  EXPECT_EQ(*ParseSchedulerKind("budget"), SchedulerKind::kBudget);
  EXPECT_EQ(SchedulerKindName(SchedulerKind::kBudget), "budget");
}

// By default every trial runs 10 % of max_t before it is judged: with max_t 40 both of two
// trials go on through iteration 3, and the worse is first paused at the rung at 4.
TEST(BudgetPromotion, TheDefaultPrefixIsATenthOfMaxT) {
  SchedulerOptions o;
  o.max_t = 40;
  EXPECT_DOUBLE_EQ(o.budget_min_prefix, 0.10);
  auto s = MakeTrialScheduler(o);
  ASSERT_TRUE(s.ok()) << s.status();
  for (TrialId id : {1, 2}) (*s)->OnTrialAdd(id, Config());
  for (int64_t t = 1; t <= 3; ++t) {
    EXPECT_EQ((*s)->OnReport({1, t, 0.2 * static_cast<double>(t)}).action, Action::kContinue);
    EXPECT_EQ((*s)->OnReport({2, t, 0.01}).action, Action::kContinue) << t;
  }
  Decision d = (*s)->OnReport({2, 4, 0.01});
  EXPECT_EQ(d.action, Action::kPause);
  EXPECT_NE(d.reason.find("waits at the rung at iteration 4"), std::string::npos) << d.reason;
  EXPECT_EQ((*s)->OnReport({1, 4, 0.8}).action, Action::kContinue);
}

TEST(BudgetPromotion, ATrialNotAtARungIsBehindEveryTrialThatIs) {
  std::map<TrialId, double> rung{{1, 0.9}, {2, 0.5}, {3, 0.1}};
  EXPECT_EQ(TrialsAhead(&rung, 0.9), 0u);
  EXPECT_EQ(TrialsAhead(&rung, 0.3), 2u);
  EXPECT_EQ(TrialsAhead(nullptr, 1.0), SIZE_MAX);
  EXPECT_GT(TrialsAhead(nullptr, 1.0), TrialsAhead(&rung, -1.0));
}

TEST(BudgetPromotion, NearerTheLeadersIsASmallerShareOfTheRungAhead) {
  std::map<TrialId, double> first, deep{{1, 0.9}, {2, 0.8}, {3, 0.7}, {4, 0.6}};
  for (TrialId id = 1; id <= 20; ++id) first[id] = 0.05 * static_cast<double>(id);
  // Three of 20 ahead at a wide rung is nearer than two of 4 at a narrow one.
  EXPECT_EQ(TrialsAhead(&first, 0.86), 3u);
  EXPECT_DOUBLE_EQ(SharesAhead(&first, 0.86), 0.15);
  EXPECT_DOUBLE_EQ(SharesAhead(&deep, 0.75), 0.5);
  EXPECT_GT(SharesAhead(nullptr, 1.0), SharesAhead(&deep, -1.0));
}

// The re-check resumes the paused trial with the smallest share of its rung ahead of it, though
// another at a deeper rung has fewer trials ahead. max_t 40: rungs at 2, 4, 8, 16, 32.
TEST(BudgetPromotion, TheRecheckResumesTheSmallestShareAheadFirst) {
  SchedulerOptions o = BudgetOptions(40);
  // Trials added up front and driven by hand, one at a time: judged on what has reported so far
  // (budget_eager), since this test is about the ranking; the wait for the trials on their way
  // to a rung is tested by ATrialWaitsAtARungForTheTrialsOnTheirWayThere.
  o.budget_eager = true;
  auto s = MakeTrialScheduler(o);
  ASSERT_TRUE(s.ok()) << s.status();
  for (TrialId id = 1; id <= 20; ++id) (*s)->OnTrialAdd(id, Config());
  auto at_two = [](TrialId id) { return 0.01 * static_cast<double>(id); };
  // Trials 19 and 20 reach the rung at 2 first, each in the top half so far, and go on to 4,
  // where 20 (0.5) is first and 19 (0.4) is below the median of the two: it pauses there with
  // one trial of two ahead, a share of 1/2.
  for (TrialId id : {19, 20}) {
    EXPECT_EQ((*s)->OnReport({id, 1, at_two(id)}).action, Action::kContinue);
    EXPECT_EQ((*s)->OnReport({id, 2, at_two(id)}).action, Action::kContinue) << id;
  }
  for (TrialId id : {20, 19}) {
    double at_four = id == 20 ? 0.5 : 0.4;
    EXPECT_EQ((*s)->OnReport({id, 3, at_four}).action, Action::kContinue);
    Decision d = (*s)->OnReport({id, 4, at_four});
    EXPECT_EQ(d.action, id == 20 ? Action::kContinue : Action::kPause) << id << ": " << d.reason;
  }
  // Trials 18, 17, ..., 1 reach the rung at 2 below the median there and pause: trial 18 has two
  // of 20 ahead, more trials than trial 19 has at its rung but a smaller share (1/10).
  for (TrialId id = 18; id >= 1; --id) {
    EXPECT_EQ((*s)->OnReport({id, 1, at_two(id)}).action, Action::kContinue);
    EXPECT_EQ((*s)->OnReport({id, 2, at_two(id)}).action, Action::kPause) << id;
  }
  TrialScheduler::NextRun next = (*s)->ChooseTrialToRun(false);
  ASSERT_TRUE(next.resume.has_value());
  EXPECT_EQ(*next.resume, 18u);
}

TEST(BudgetPromotion, EveryTrialRunsItsPrefixAndARungsTopIsPromoted) {
  // max_t 40: the first rung is at ceil(0.05 x 40) = 2, then 4, 8, 16, 32 (rf 2).
  SchedulerOptions o = BudgetOptions(40);
  // Trials added up front and driven by hand, one at a time: judged on what has reported so far
  // (budget_eager), since this test is about the ranking; the wait for the trials on their way
  // to a rung is tested by ATrialWaitsAtARungForTheTrialsOnTheirWayThere.
  o.budget_eager = true;
  auto s = MakeTrialScheduler(o);
  ASSERT_TRUE(s.ok()) << s.status();
  for (TrialId id = 1; id <= 10; ++id) (*s)->OnTrialAdd(id, Config());
  // Before its first rung a trial goes on whatever it reports.
  EXPECT_EQ((*s)->OnReport({1, 1, 0.1}).action, Action::kContinue);
  EXPECT_EQ((*s)->OnReport({1, 2, 0.2}).action, Action::kContinue);  // alone at the rung: top
  EXPECT_EQ((*s)->OnReport({2, 1, 0.0}).action, Action::kContinue);
  Decision d = (*s)->OnReport({2, 2, 0.1});  // below the median of {0.2, 0.1}
  EXPECT_EQ(d.action, Action::kPause);
  EXPECT_NE(d.reason.find("waits at the rung at iteration 2"), std::string::npos) << d.reason;
  EXPECT_EQ((*s)->OnReport({3, 1, 0.3}).action, Action::kContinue);
  EXPECT_EQ((*s)->OnReport({3, 2, 0.4}).action, Action::kContinue);
  EXPECT_FALSE((*s)->ChooseTrialToRun(true).resume.has_value());  // 0.1 < median 0.2
  for (TrialId id : {4, 5}) {
    EXPECT_EQ((*s)->OnReport({id, 1, 0.01}).action, Action::kContinue);
    EXPECT_EQ((*s)->OnReport({id, 2, 0.04 + 0.01 * static_cast<double>(id)}).action,
              Action::kPause);
  }
  // Rung 2 holds {0.2, 0.1, 0.4, 0.08, 0.09}: trial 2 (0.1) is now in its top half.
  TrialScheduler::NextRun next = (*s)->ChooseTrialToRun(true);
  ASSERT_TRUE(next.resume.has_value());
  EXPECT_EQ(*next.resume, 2u);
  EXPECT_TRUE(next.stop.empty());
}

// One worker, trials added in a random order: trial k's curve is level_k x t / (t + 2), so the
// order at every iteration is the order of the final values.
struct Replay {
  int64_t iterations = 0;
  std::map<TrialId, int64_t> reached;  // trial -> the last iteration it ran
  size_t stopped = 0;
};

Replay Drive(TrialScheduler& s, const std::vector<double>& level, int64_t max_t) {
  Replay run;
  std::map<TrialId, bool> paused;
  auto value = [&](TrialId id, int64_t t) {
    return level[id - 1] * static_cast<double>(t) / static_cast<double>(t + 2);
  };
  auto run_trial = [&](TrialId id) {
    for (int64_t t = run.reached[id] + 1; t <= max_t; ++t) {
      ++run.iterations;
      run.reached[id] = t;
      Decision d = s.OnReport({id, t, value(id, t)});
      if (d.action == Action::kPause) {
        paused[id] = true;
        return;
      }
      if (d.action == Action::kStop || t == max_t) {
        s.OnTrialEnd(id, t == max_t);
        return;
      }
    }
  };
  for (TrialId id = 1; id <= level.size(); ++id) {
    s.OnTrialAdd(id, Config());
    for (;;) {  // promoted trials first, as the tuner does
      TrialScheduler::NextRun next = s.ChooseTrialToRun(true);
      EXPECT_TRUE(next.stop.empty());
      if (!next.resume) break;
      paused.erase(*next.resume);
      run_trial(*next.resume);
    }
    run_trial(id);
  }
  for (;;) {
    TrialScheduler::NextRun next = s.ChooseTrialToRun(false);
    for (auto& [id, why] : next.stop) {
      EXPECT_TRUE(paused.erase(id)) << "stopped trial " << id << " was not paused";
      EXPECT_NE(why.find("budget left"), std::string::npos) << why;
      s.OnTrialEnd(id, false);
      ++run.stopped;
    }
    if (!next.resume) break;
    EXPECT_TRUE(paused.erase(*next.resume));
    run_trial(*next.resume);
  }
  EXPECT_TRUE(paused.empty()) << paused.size() << " trials left paused for ever";
  return run;
}

TEST(BudgetPromotion, SpendsAtMostItsBudgetAndFinishesTheLeaders) {
  constexpr int64_t kMaxT = 40;
  constexpr size_t kTrials = 60;
  Rng rng(7);
  std::vector<double> level(kTrials);
  for (double& l : level) l = 0.2 + 0.7 * rng.Uniform01();
  SchedulerOptions o = BudgetOptions(kMaxT);
  auto s = MakeTrialScheduler(o);
  ASSERT_TRUE(s.ok());
  Replay run = Drive(**s, level, kMaxT);
  EXPECT_LE(run.iterations, static_cast<int64_t>(o.budget_fraction * kTrials * kMaxT));
  EXPECT_GE(run.iterations, static_cast<int64_t>(0.9 * o.budget_fraction * kTrials * kMaxT))
      << "the budget is there to be spent";
  EXPECT_GT(run.stopped, 0u);
  // Every trial ran its prefix; the best ones ran to the end, and a trial that ran further never
  // ranks below one that stopped earlier (the curves never cross).
  std::vector<TrialId> by_level(kTrials);
  for (TrialId id = 1; id <= kTrials; ++id) by_level[id - 1] = id;
  std::sort(by_level.begin(), by_level.end(),
            [&](TrialId a, TrialId b) { return level[a - 1] > level[b - 1]; });
  for (TrialId id : by_level) EXPECT_GE(run.reached[id], 2) << "trial " << id;
  for (size_t k = 0; k < 3; ++k)
    EXPECT_EQ(run.reached[by_level[k]], kMaxT) << k << "th best trial did not finish";
  size_t finished = 0;
  for (auto& [id, t] : run.reached) finished += t == kMaxT;
  EXPECT_GE(finished, 5u);
  EXPECT_LT(finished, kTrials / 2);
}

TEST(BudgetPromotion, ALargerBudgetRunsMoreTrialsToTheEnd) {
  Rng rng(11);
  std::vector<double> level(40);
  for (double& l : level) l = rng.Uniform01();
  auto finished = [&](double fraction) {
    SchedulerOptions o = BudgetOptions(20);
    o.budget_fraction = fraction;
    auto s = MakeTrialScheduler(o);
    Replay run = Drive(**s, level, 20);
    EXPECT_LE(run.iterations, static_cast<int64_t>(fraction * 40 * 20));
    size_t n = 0;
    for (auto& [id, t] : run.reached) n += t == 20;
    return n;
  };
  EXPECT_LT(finished(0.15), finished(0.5));
  EXPECT_EQ(finished(1.0), level.size());
}

// Two trials level until iteration 12, then at the rung at 16 (max_t 40: rungs at 2, 4, 8, 16,
// 32): `steady` reports 0.80 four times; `lucky` 0.70 three times and then one noisy 0.83. The
// steady one reaches the rung first and goes on (alone there). What happens to the lucky one?
Decision LuckyAtTheRung(BudgetScore score) {
  SchedulerOptions o = BudgetOptions(40);
  o.budget_score = score;  // budget_score_window 1: the 8 iterations since the rung at 8
  // Trials added up front and driven by hand, one at a time: judged on what has reported so far
  // (budget_eager), since this test is about the ranking; the wait for the trials on their way
  // to a rung is tested by ATrialWaitsAtARungForTheTrialsOnTheirWayThere.
  o.budget_eager = true;
  auto s = MakeTrialScheduler(o);
  EXPECT_TRUE(s.ok()) << s.status();
  for (TrialId id = 1; id <= 40; ++id) (*s)->OnTrialAdd(id, Config());  // budget enough
  const TrialId steady = 1, lucky = 2;
  for (TrialId id : {steady, lucky})
    for (int64_t t = 1; t <= 12; ++t)
      EXPECT_EQ((*s)->OnReport({id, t, 0.70}).action, Action::kContinue) << id << " at " << t;
  for (int64_t t = 13; t <= 16; ++t)
    EXPECT_EQ((*s)->OnReport({steady, t, 0.80}).action, Action::kContinue) << t;
  for (int64_t t = 13; t <= 15; ++t)
    EXPECT_EQ((*s)->OnReport({lucky, t, 0.70}).action, Action::kContinue) << t;
  return (*s)->OnReport({lucky, 16, 0.83});
}

TEST(BudgetPromotion, ANoisyLastReportDoesNotWinARungWithASmoothedScore) {
  // The last value alone ranks the lucky trial first (0.83 against 0.80): promoted.
  EXPECT_EQ(LuckyAtTheRung(BudgetScore::kLast).action, Action::kContinue);
  // Over iterations 9-16 its mean (0.716) and its line at 16 (0.754) are below the steady
  // trial's (0.75 and 0.817).
  for (BudgetScore score : {BudgetScore::kMean, BudgetScore::kLine}) {
    Decision d = LuckyAtTheRung(score);
    EXPECT_EQ(d.action, Action::kPause) << static_cast<int>(score);
    EXPECT_NE(d.reason.find("(0.83, its score there 0.7"), std::string::npos) << d.reason;
  }
}

TEST(BudgetPromotion, ExtrapolateFindsTheAsymptoteOfASaturatingCurve) {
  auto curve = [](double a, double d, double tau, int64_t n) {
    std::vector<std::pair<int64_t, double>> r;
    for (int64_t t = 1; t <= n; ++t)
      r.emplace_back(t, a - d * std::exp(-static_cast<double>(t) / tau));
    return r;
  };
  // 0.9 - 0.6 exp(-t / 5) seen to iteration 6 (0.72 there): at 40 it is 0.9 less 2e-4.
  EXPECT_NEAR(Extrapolate(curve(0.9, 0.6, 5, 6), 40), 0.9 - 0.6 * std::exp(-8.0), 1e-4);
  // A loss as a score (its negative): -(60 + 400 exp(-t / 8)), seen to 12 (-149 there): -60.2
  // at 60.
  EXPECT_NEAR(Extrapolate(curve(-60, 400, 8, 12), 60), -60 - 400 * std::exp(-60.0 / 8), 0.01);
  // No more than it gained so far: 1 - 0.9 exp(-t / 100) seen to 3 has gained 0.017 since
  // its first report; its asymptote, 1, is far beyond.
  auto slow = curve(1, 0.9, 100, 3);
  EXPECT_DOUBLE_EQ(Extrapolate(slow, 50), slow.back().second + (slow[2].second - slow[0].second));
  // A curve getting worse, and too few reports to fit: the last value.
  EXPECT_DOUBLE_EQ(Extrapolate({{1, 0.5}, {2, 0.4}, {3, 0.3}}, 10), 0.3);
  EXPECT_DOUBLE_EQ(Extrapolate({{1, 0.2}, {2, 0.4}}, 10), 0.4);
  EXPECT_DOUBLE_EQ(Extrapolate({{1, 0.2}, {2, 0.2}, {3, 0.2}}, 10), 0.2);
}

// max_t 40 and a prefix of 8 (rungs at 8, 16, 32). `fast` plateaus at 0.7 (0.698 at 8); `slow`
// heads for 0.95 and is behind at 8 (0.656). `fast` reaches the rung first and goes on (alone
// there); what happens to `slow` at the rung?
Decision SlowLearnerAtTheFirstRung(BudgetScore score) {
  SchedulerOptions o = BudgetOptions(40);
  o.budget_min_prefix = 0.2;
  o.budget_fraction = 1;  // promotions are not short of budget here
  o.budget_score = score;
  // Trials added up front and driven by hand, one at a time: judged on what has reported so far
  // (budget_eager), since this test is about the ranking; the wait for the trials on their way
  // to a rung is tested by ATrialWaitsAtARungForTheTrialsOnTheirWayThere.
  o.budget_eager = true;
  auto s = MakeTrialScheduler(o);
  EXPECT_TRUE(s.ok()) << s.status();
  for (TrialId id = 1; id <= 40; ++id) (*s)->OnTrialAdd(id, Config());
  const TrialId fast = 1, slow = 2;
  auto value = [](TrialId id, int64_t t) {
    double x = static_cast<double>(t);
    return id == 1 ? 0.7 - 0.5 * std::exp(-x / 1.5) : 0.95 - 0.8 * std::exp(-x / 8);
  };
  for (int64_t t = 1; t <= 8; ++t)
    EXPECT_EQ((*s)->OnReport({fast, t, value(fast, t)}).action, Action::kContinue) << t;
  for (int64_t t = 1; t < 8; ++t)
    EXPECT_EQ((*s)->OnReport({slow, t, value(slow, t)}).action, Action::kContinue) << t;
  return (*s)->OnReport({slow, 8, value(slow, 8)});
}

TEST(BudgetPromotion, ASlowLearnerHeadedHigherGoesOnWhenRankedByItsFittedCurve) {
  EXPECT_EQ(SchedulerOptions().budget_score, BudgetScore::kFit);
  EXPECT_EQ(SlowLearnerAtTheFirstRung(BudgetScore::kFit).action, Action::kContinue);
  // By the value at the rung it is behind the plateau: paused.
  EXPECT_EQ(SlowLearnerAtTheFirstRung(BudgetScore::kLast).action, Action::kPause);
}

// A long run's history stays bounded and evenly spread: a lopsided thinning (halving the older
// reports again at each pass) kept 2 of the first 100 iterations of 1,000 and left a fit to the
// tail.
TEST(BudgetPromotion, ALongRunsHistoryIsThinnedEvenly) {
  CurveHistory h;
  for (int64_t t = 1; t <= 1000; ++t) h.Add(t, static_cast<double>(t));
  auto r = h.Reports();
  ASSERT_LE(r.size(), CurveHistory::kMax + 2);
  ASSERT_GE(r.size(), CurveHistory::kMax / 2);
  EXPECT_EQ(r.front().first, 1);
  EXPECT_EQ(r.back().first, 1000);
  size_t early = 0;
  for (auto& [t, v] : r) early += t <= 100;
  EXPECT_GE(early, r.size() / 10 - 1) << "the first tenth of the run is a tenth of the points";
  // Between the first and the latest, one spacing.
  for (size_t i = 2; i + 1 < r.size(); ++i)
    EXPECT_EQ(r[i].first - r[i - 1].first, r[2].first - r[1].first) << i;
  // A resume from iteration 500 replaces what came after it.
  h.Add(500, -1);
  r = h.Reports();
  EXPECT_EQ(r.back().first, 500);
  EXPECT_EQ(r.back().second, -1);
  for (size_t i = 1; i < r.size(); ++i) EXPECT_LT(r[i - 1].first, r[i].first);
  h.Add(1, 7);
  EXPECT_EQ(h.Reports().size(), 1u);
}

// The plot's rung mark is in reported values, not in the fit's scores.
TEST(BudgetPromotion, TheRungsCutoffIsInReportedValues) {
  SchedulerOptions o = BudgetOptions(40);
  o.budget_min_prefix = 0.2;  // rungs at 8, 16, 32
  o.budget_fraction = 1;
  auto s = MakeTrialScheduler(o);
  ASSERT_TRUE(s.ok()) << s.status();
  for (TrialId id = 1; id <= 4; ++id) (*s)->OnTrialAdd(id, Config());
  for (TrialId id = 1; id <= 4; ++id)
    for (int64_t t = 1; t <= 8; ++t)
      (*s)->OnReport({id, t, 0.1 * static_cast<double>(id) * (1 - std::exp(-t / 20.0))});
  auto cut = (*s)->Cutoffs();
  ASSERT_FALSE(cut.empty());
  EXPECT_EQ(cut[0].iteration, 8);
  // Values at 8: 0.033 x id; the fit's scores run to 0.1 x id. The top half's quantile by value:
  EXPECT_NEAR(cut[0].value, 0.1 * 2.5 * (1 - std::exp(-8 / 20.0)), 1e-9);
}

// Four trials run at once (max_t 40: rungs at 2, 4, ...). The first to reach the rung at 2 is the
// best so far, but three trials are still on their way there: it is in the top half only if
// fewer than (1 + 3) / 2 are ahead of it, counting them all as ahead, so it waits; so do the
// next two. The last one finds none on its way and is judged on the four: below the top half.
// Then the top two of the four are resumed, and no other.
TEST(BudgetPromotion, ATrialWaitsAtARungForTheTrialsOnTheirWayThere) {
  for (bool eager : {false, true}) {
    SchedulerOptions o = BudgetOptions(40);
    o.budget_eager = eager;
    auto s = MakeTrialScheduler(o);
    ASSERT_TRUE(s.ok()) << s.status();
    for (TrialId id = 1; id <= 4; ++id) (*s)->OnTrialAdd(id, Config());
    for (TrialId id = 1; id <= 4; ++id)
      EXPECT_EQ((*s)->OnReport({id, 1, 0.1}).action, Action::kContinue);
    Decision first = (*s)->OnReport({1, 2, 0.9});
    if (eager) {  // the rule before: alone at the rung, so in its top half, and on it goes
      EXPECT_EQ(first.action, Action::kContinue);
      continue;
    }
    EXPECT_EQ(first.action, Action::kPause);
    EXPECT_NE(first.reason.find("not in its top 1/2 so far, counting the 3 trials on their way "
                                "there as ahead of it"),
              std::string::npos)
        << first.reason;
    EXPECT_EQ((*s)->OnReport({2, 2, 0.8}).action, Action::kPause);
    EXPECT_EQ((*s)->OnReport({3, 2, 0.3}).action, Action::kPause);
    Decision last = (*s)->OnReport({4, 2, 0.2});
    EXPECT_EQ(last.action, Action::kPause);
    EXPECT_EQ(last.reason.find("on their way"), std::string::npos) << last.reason;
    TrialScheduler::NextRun next = (*s)->ChooseTrialToRun(true);
    ASSERT_TRUE(next.resume.has_value());
    EXPECT_EQ(*next.resume, 1u);
    next = (*s)->ChooseTrialToRun(true);
    ASSERT_TRUE(next.resume.has_value());
    EXPECT_EQ(*next.resume, 2u);
    EXPECT_FALSE((*s)->ChooseTrialToRun(true).resume.has_value());
  }
}

// Every trial of the experiment at once, each advancing one iteration per step, as the replay
// bench's simulated clock runs them with even costs: trial k's curve is level_k x t / (t + 2), so
// the ranks never change. Returns the iteration each trial reached.
std::map<TrialId, int64_t> DriveAllAtOnce(TrialScheduler& s, const std::vector<double>& level,
                                          int64_t max_t) {
  std::map<TrialId, int64_t> reached;
  std::vector<TrialId> running;
  const TrialId n = level.size();
  TrialId added = 0;
  auto fill = [&] {
    while (running.size() < level.size()) {
      TrialScheduler::NextRun next = s.ChooseTrialToRun(added < n);
      for (auto& [id, why] : next.stop) s.OnTrialEnd(id, false);
      if (next.resume) {
        running.push_back(*next.resume);
      } else if (added < n) {
        s.OnTrialAdd(++added, Config());
        running.push_back(added);
      } else {
        break;
      }
    }
  };
  fill();
  for (int step = 0; !running.empty() && step < 100000; ++step) {
    std::vector<TrialId> now = running;
    running.clear();
    for (TrialId id : now) {
      int64_t t = ++reached[id];
      Decision d = s.OnReport({id, t, level[id - 1] * static_cast<double>(t) / (t + 2.0)});
      if (d.action == Action::kStop || t == max_t) {
        s.OnTrialEnd(id, t == max_t);
      } else if (d.action != Action::kPause) {
        running.push_back(id);
      }
    }
    fill();
  }
  return reached;
}

// 64 trials at once, max_t 40. Judged on what had reported so far (budget_eager), the first to
// reach each rung went on and the budget was spread over the middle rungs: the best trial never
// reached the end (on replayed curves, 3.8 points behind full search; docs/tune_replay.md). Now
// the best trials run to the end within the budget.
TEST(BudgetPromotion, WithEveryTrialAtOnceTheBestRunToTheEnd) {
  constexpr int64_t kMaxT = 40;
  Rng rng(5);
  std::vector<double> level(64);
  for (double& l : level) l = 0.2 + 0.7 * rng.Uniform01();
  std::vector<TrialId> by_level(level.size());
  for (TrialId id = 1; id <= level.size(); ++id) by_level[id - 1] = id;
  std::sort(by_level.begin(), by_level.end(),
            [&](TrialId a, TrialId b) { return level[a - 1] > level[b - 1]; });
  auto best_reached = [&](bool eager) {
    SchedulerOptions o = BudgetOptions(kMaxT);
    o.budget_eager = eager;
    auto s = MakeTrialScheduler(o);
    EXPECT_TRUE(s.ok());
    std::map<TrialId, int64_t> reached = DriveAllAtOnce(**s, level, kMaxT);
    int64_t spent = 0;
    for (auto& [id, t] : reached) spent += t;
    EXPECT_LE(spent, static_cast<int64_t>(o.budget_fraction * 64 * kMaxT));
    return reached[by_level[0]];
  };
  EXPECT_EQ(best_reached(false), kMaxT);
  EXPECT_LT(best_reached(true), kMaxT) << "the rule before finished the best trial here too";
}

TEST(BudgetPromotion, BadOptionsAreOneClearError) {
  SchedulerOptions o = BudgetOptions(10);
  o.budget_fraction = 0;
  EXPECT_EQ(MakeTrialScheduler(o).status().message(),
            "scheduler: budget_fraction (of full compute) must be in (0, 1], not 0");
  o = BudgetOptions(10);
  o.budget_reduction_factor = 1;
  EXPECT_FALSE(MakeTrialScheduler(o).ok());
  o = BudgetOptions(10);
  o.budget_min_prefix = 1.5;
  EXPECT_FALSE(MakeTrialScheduler(o).ok());
  o = BudgetOptions(10);
  o.budget_promotion_share = std::nan("");
  EXPECT_EQ(MakeTrialScheduler(o).status().message(),
            "scheduler: budget_promotion_share must be in [0, 1], not nan");
  o = BudgetOptions(10);
  o.budget_score_window = -1;
  EXPECT_EQ(MakeTrialScheduler(o).status().message(),
            "scheduler: budget_score_window (a fraction of the iterations between rungs) must be "
            "in [0, 1], not -1");
}

}  // namespace
}  // namespace cumulus::tune
