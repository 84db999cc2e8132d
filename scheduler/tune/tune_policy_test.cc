// Unit tests of the tuner's pure policy: configs, search spaces, searchers, trial schedulers.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "cumulus/tune_space.h"
#include "scheduler/tune/searcher.h"
#include "scheduler/tune/trial_scheduler.h"

namespace cumulus::tune {
namespace {

TEST(Config, GetIsTypedAndSaysWhatIsWrong) {
  Config c;
  c.Set("lr", 0.01).Set("width", int64_t{128}).Set("act", std::string("relu")).Set("bn", true);
  EXPECT_DOUBLE_EQ(c.Get<double>("lr"), 0.01);
  EXPECT_EQ(c.Get<int>("width"), 128);
  EXPECT_DOUBLE_EQ(c.Get<double>("width"), 128.0);  // an int reads as a double
  EXPECT_EQ(c.Get<std::string>("act"), "relu");
  EXPECT_TRUE(c.Get<bool>("bn"));
  try {
    (void)c.Get<double>("momentum");
    FAIL() << "a missing key must throw";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no key \"momentum\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("act, bn, lr, width"), std::string::npos) << e.what();
  }
  Result<int64_t> wrong = c.TryGet<int64_t>("lr");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(), "config key \"lr\" holds double 0.01, not an integer");
  EXPECT_FALSE(c.TryGet<int8_t>("width").ok());  // 128 does not fit
  EXPECT_FALSE(c.TryGet<std::string>("bn").ok());
}

TEST(Config, EncodeRoundTripsExactly) {
  Config c;
  c.Set("lr", 0.1 + 0.2).Set("n", int64_t{-9007199254740993}).Set("s", std::string("a\tb\nc\\"));
  c.Set("tiny", 4.9e-324).Set("flag", false).Set("we\tird", std::string());
  Result<Config> back = Config::Decode(c.Encode());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, c);
  EXPECT_EQ(back->Get<double>("lr"), 0.1 + 0.2);  // bit for bit
  for (std::string bad : {"x\td\t1.0", "x\tq\t1\n", "x\ti\t1e3\n", "x\tb\t2\n", "x\n",
                          "x\ti\t1\nx\ti\t2\n", "x\ts\tbad\\q\n"})
    EXPECT_FALSE(Config::Decode(bad).ok()) << bad;
  EXPECT_EQ(c.ToJson().substr(0, 15), "{\"flag\": false,");
}

TEST(SearchSpace, ValidateNamesWhatIsWrong) {
  EXPECT_NE(SearchSpace().Validate().message().find("empty"), std::string::npos);
  auto msg = [](const SearchSpace& s) { return s.Validate().message(); };
  EXPECT_NE(msg(SearchSpace().Uniform("lr", 1, 1)).find("\"lr\" (Uniform)"), std::string::npos);
  EXPECT_NE(msg(SearchSpace().Uniform("lr", 0, NAN)).find("finite"), std::string::npos);
  EXPECT_NE(msg(SearchSpace().LogUniform("lr", 0, 1)).find("above 0"), std::string::npos);
  EXPECT_NE(msg(SearchSpace().QUniform("x", 0.1, 0.2, 0.5)).find("no multiple"), std::string::npos);
  EXPECT_NE(msg(SearchSpace().QUniform("x", 0, 1, 0)).find("step q"), std::string::npos);
  EXPECT_NE(msg(SearchSpace().RandInt("n", 5, 5)).find("not below"), std::string::npos);
  EXPECT_NE(msg(SearchSpace().Choice("a", {})).find("no values"), std::string::npos);
  EXPECT_NE(msg(SearchSpace().Grid("a", {1.0}).Grid("a", {2.0})).find("twice"), std::string::npos);
  EXPECT_NE(msg(SearchSpace().Conditional("c", nullptr)).find("no function"), std::string::npos);
  EXPECT_TRUE(SearchSpace().Uniform("lr", 0, 1).Grid("b", {int64_t{1}}).Validate().ok());
}

SearchSpace Space() {
  SearchSpace s;
  s.LogUniform("lr", 1e-4, 1e-1)
      .QUniform("drop", 0.0, 0.5, 0.1)
      .RandInt("layers", 1, 4)
      .Choice("act", {std::string("relu"), std::string("tanh")})
      .Grid("batch", {int64_t{32}, int64_t{64}, int64_t{128}})
      .Conditional("momentum",
                   [](const Config& c) { return Value{c.Get<double>("lr") < 1e-2 ? 0.9 : 0.5}; });
  return s;
}

std::vector<Config> Draw(Searcher& s, TrialId first, size_t n) {
  std::vector<Config> out;
  for (size_t i = 0; i < n; ++i) {
    auto c = s.Suggest(first + i);
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok() || !c->has_value()) break;
    out.push_back(**c);
  }
  return out;
}

TEST(RandomSearcher, DrawsInRangeCoversTheGridAndStopsAtNumSamplesTimesGrid) {
  SearcherOptions o;
  o.seed = 7;
  o.num_samples = 4;
  auto s = MakeSearcher(Space(), o);
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<Config> all = Draw(**s, 1, 100);
  ASSERT_EQ(all.size(), 12u);  // 4 rounds x 3 grid points
  std::map<int64_t, int> per_batch;
  for (const Config& c : all) {
    double lr = c.Get<double>("lr");
    EXPECT_GE(lr, 1e-4);
    EXPECT_LT(lr, 1e-1);
    double drop = c.Get<double>("drop");
    EXPECT_NEAR(drop * 10, std::round(drop * 10), 1e-9);
    EXPECT_GE(c.Get<int64_t>("layers"), 1);
    EXPECT_LE(c.Get<int64_t>("layers"), 3);
    EXPECT_EQ(c.Get<double>("momentum"), lr < 1e-2 ? 0.9 : 0.5);
    ++per_batch[c.Get<int64_t>("batch")];
  }
  EXPECT_EQ(per_batch, (std::map<int64_t, int>{{32, 4}, {64, 4}, {128, 4}}));
}

TEST(Searchers, RestoredStateContinuesTheSameSequence) {
  for (SearcherKind kind : {SearcherKind::kRandom, SearcherKind::kGrid, SearcherKind::kTpe}) {
    SearcherOptions o;
    o.kind = kind;
    o.seed = 3;
    o.num_samples = 40;
    o.tpe_startup_trials = 4;
    auto a = MakeSearcher(Space(), o);
    ASSERT_TRUE(a.ok()) << a.status();
    // Ten trials, some ended with scores (TPE models them), then a snapshot.
    std::vector<Config> first = Draw(**a, 1, 10);
    for (TrialId id = 1; id <= 8; ++id)
      (*a)->OnTrialEnd(id, -std::fabs(std::log10(first[id - 1].Get<double>("lr")) + 2.5),
                       static_cast<int64_t>(id % 3 + 1));
    std::string saved = (*a)->Save();
    std::vector<Config> after_a = Draw(**a, 11, 10);
    auto b = MakeSearcher(Space(), o);
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE((*b)->Restore(saved).ok()) << (*a)->name();
    EXPECT_EQ(Draw(**b, 11, 10), after_a) << (*a)->name();
    EXPECT_FALSE((*b)->Restore(saved.substr(0, saved.size() / 2)).ok()) << (*a)->name();
    EXPECT_FALSE((*b)->Restore("garbage").ok()) << (*a)->name();
  }
}

TEST(GridSearcher, EveryCombinationOfGridAndChoiceOnce) {
  SearcherOptions o;
  o.kind = SearcherKind::kGrid;
  auto s = MakeSearcher(Space(), o);
  ASSERT_TRUE(s.ok());
  std::vector<Config> all = Draw(**s, 1, 100);
  ASSERT_EQ(all.size(), 6u);
  std::set<std::pair<std::string, int64_t>> seen;
  for (const Config& c : all) seen.emplace(c.Get<std::string>("act"), c.Get<int64_t>("batch"));
  EXPECT_EQ(seen.size(), 6u);
}

TEST(Searchers, AConditionalThatThrowsIsAnErrorNamingIt) {
  SearchSpace s;
  s.Uniform("x", 0, 1).Conditional("y",
                                   [](const Config& c) { return Value{c.Get<double>("nope")}; });
  auto r = MakeSearcher(s, SearcherOptions{});
  ASSERT_TRUE(r.ok());
  auto c = (*r)->Suggest(1);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("conditional parameter \"y\" threw: config has no key"),
            std::string::npos)
      << c.status();
  EXPECT_FALSE(MakeSearcher(SearchSpace(), SearcherOptions{}).ok());
  EXPECT_EQ(ParseSearcherKind("bayes").status().message(),
            "unknown searcher \"bayes\": use random, grid or tpe");
}

TEST(TpeSearcher, ConcentratesNearTheOptimumOfAOneDimensionalObjective) {
  SearchSpace s;
  s.Uniform("x", 0, 1);
  auto mean_distance = [&](SearcherKind kind) {
    SearcherOptions o;
    o.kind = kind;
    o.seed = 11;
    o.num_samples = 60;
    auto r = MakeSearcher(s, o);
    double sum = 0;
    for (TrialId id = 1; id <= 60; ++id) {
      double x = (*(*r)->Suggest(id))->Get<double>("x");
      (*r)->OnTrialEnd(id, -(x - 0.3) * (x - 0.3), 1);
      if (id > 40) sum += std::fabs(x - 0.3);
    }
    return sum / 20;
  };
  double tpe = mean_distance(SearcherKind::kTpe), random = mean_distance(SearcherKind::kRandom);
  EXPECT_LT(tpe, random / 2) << "tpe " << tpe << " random " << random;
}

TEST(Percentile, MatchesNumpyLinearInterpolation) {
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3, 4}, 75), 3.25);
  EXPECT_DOUBLE_EQ(Percentile({5}, 75), 5);
  EXPECT_DOUBLE_EQ(Percentile({4, 1, 3, 2}, 50), 2.5);
}

SchedulerOptions Options(SchedulerKind kind, int64_t max_t = 16) {
  SchedulerOptions o;
  o.kind = kind;
  o.max_t = max_t;
  return o;
}

TEST(Asha, RaysRuleAtEachRung) {
  SchedulerOptions o = Options(SchedulerKind::kAsha);  // rungs 1, 4 (16 is max_t)
  auto s = MakeTrialScheduler(o);
  ASSERT_TRUE(s.ok());
  for (TrialId id = 1; id <= 4; ++id) (*s)->OnTrialAdd(id, Config{});
  // Rung 1: the first trial passes (nothing recorded), later ones against the 75th percentile.
  EXPECT_EQ((*s)->OnReport({1, 1, 0.5}).action, Action::kContinue);
  EXPECT_EQ((*s)->OnReport({2, 1, 0.4}).action, Action::kStop);  // below 0.5
  EXPECT_EQ((*s)->OnReport({3, 1, 0.6}).action, Action::kContinue);
  Decision d = (*s)->OnReport({4, 1, 0.55});  // cut-off: 75th pct of {0.5, 0.4, 0.6} = 0.55
  EXPECT_EQ(d.action, Action::kContinue);
  // Between rungs nothing is decided; at rung 4 the same rule.
  EXPECT_EQ((*s)->OnReport({1, 2, 0.1}).action, Action::kContinue);
  EXPECT_EQ((*s)->OnReport({1, 4, 0.7}).action, Action::kContinue);
  d = (*s)->OnReport({3, 4, 0.69});
  EXPECT_EQ(d.action, Action::kStop);
  EXPECT_NE(d.reason.find("rung at iteration 4"), std::string::npos) << d.reason;
  // Min mode turns it around.
  o.mode = Mode::kMin;
  auto m = MakeTrialScheduler(o);
  EXPECT_EQ((*m)->OnReport({1, 1, 0.5}).action, Action::kContinue);
  EXPECT_EQ((*m)->OnReport({2, 1, 0.6}).action, Action::kStop);
}

TEST(MedianStopping, StopsBelowTheMedianOfOthersRunningMeans) {
  SchedulerOptions o = Options(SchedulerKind::kMedian);
  auto s = MakeTrialScheduler(o);
  for (TrialId id = 1; id <= 3; ++id) {
    EXPECT_EQ((*s)->OnReport({id, 1, 0.5 + 0.1 * id}).action, Action::kContinue);
    EXPECT_EQ((*s)->OnReport({id, 2, 0.6 + 0.1 * id}).action, Action::kContinue);
  }
  // Others' running means at 1: 0.6, 0.7, 0.8 (median 0.7); at 2: 0.65, 0.75, 0.85 (0.75).
  EXPECT_EQ((*s)->OnReport({4, 1, 0.7}).action, Action::kContinue);
  Decision d = (*s)->OnReport({4, 2, 0.72});  // best so far 0.72 < 0.75
  EXPECT_NE(d.reason.find("below the median 0.75 of 3"), std::string::npos) << d.reason;
  EXPECT_EQ(d.action, Action::kStop) << d.reason;
  EXPECT_EQ((*s)->OnReport({5, 1, 0.69}).action, Action::kStop);
}

TEST(Pbt, TheBottomTrialExploitsATopTrialAndPerturbsItsConfig) {
  SchedulerOptions o = Options(SchedulerKind::kPbt);
  o.pbt_interval = 2;
  o.pbt_resample_probability = 0;
  o.pbt_mutations.Uniform("lr", 0.001, 1).Choice("w", {int64_t{1}, int64_t{2}, int64_t{4}});
  auto s = MakeTrialScheduler(o);
  ASSERT_TRUE(s.ok()) << s.status();
  for (TrialId id = 1; id <= 4; ++id)
    (*s)->OnTrialAdd(id, Config().Set("lr", 0.1 * id).Set("w", int64_t{2}));
  for (TrialId id = 1; id <= 4; ++id)
    EXPECT_EQ((*s)->OnReport({id, 1, 0.1 * id}).action, Action::kContinue);
  for (TrialId id = 4; id >= 2; --id)
    EXPECT_EQ((*s)->OnReport({id, 2, 0.1 * id}).action, Action::kContinue);
  Decision d = (*s)->OnReport({1, 2, 0.1});
  ASSERT_EQ(d.action, Action::kExploit);
  EXPECT_EQ(d.exploit_from, 4u);
  double lr = d.new_config.Get<double>("lr");
  EXPECT_TRUE(std::fabs(lr - 0.32) < 1e-12 || std::fabs(lr - 0.48) < 1e-12) << lr;
  int64_t w = d.new_config.Get<int64_t>("w");
  EXPECT_TRUE(w == 1 || w == 4) << w;
}

// A trial that ended (here: failed at the top of the population) is no donor and no rank: the
// bottom trial exploits the best trial still training.
TEST(Pbt, AnEndedTrialIsNeitherRankedNorCopiedFrom) {
  SchedulerOptions o = Options(SchedulerKind::kPbt);
  o.pbt_interval = 2;
  o.pbt_quantile = 0.25;
  o.pbt_mutations.Uniform("lr", 0.001, 1);
  auto s = MakeTrialScheduler(o);
  ASSERT_TRUE(s.ok()) << s.status();
  for (TrialId id = 1; id <= 5; ++id) (*s)->OnTrialAdd(id, Config().Set("lr", 0.1 * id));
  for (TrialId id = 1; id <= 5; ++id)
    EXPECT_EQ((*s)->OnReport({id, 1, 0.1 * id}).action, Action::kContinue);
  (*s)->OnTrialEnd(5, false);  // the leader fails
  for (TrialId id = 4; id >= 2; --id)
    EXPECT_EQ((*s)->OnReport({id, 2, 0.1 * id}).action, Action::kContinue);
  // Four trials still train: the top quarter is trial 4 alone (with trial 5 ranked, the top
  // quarter of five would be trial 5 and 4, and the pick among them random).
  for (int k = 0; k < 4; ++k) {
    Decision d = (*s)->OnReport({1, 2 * (k + 1), 0.1});
    ASSERT_EQ(d.action, Action::kExploit) << d.reason;
    EXPECT_EQ(d.exploit_from, 4u) << d.reason;
    (*s)->OnReport({4, 2 * (k + 1) + 1, 0.9});  // stays on top
  }
}

// An exploit that was not carried out (no donor checkpoint) leaves the trial as it was: its own
// config is what a later exploit of it perturbs, and its own score is what it ranks with.
TEST(Pbt, ASkippedExploitLeavesTheTrialItsOwnConfigAndScore) {
  SchedulerOptions o = Options(SchedulerKind::kPbt);
  o.pbt_interval = 1;
  o.pbt_quantile = 0.5;
  o.pbt_resample_probability = 0;
  o.pbt_mutations.Uniform("lr", 0.001, 1);
  auto s = MakeTrialScheduler(o);
  ASSERT_TRUE(s.ok()) << s.status();
  (*s)->OnTrialAdd(1, Config().Set("lr", 0.5));
  (*s)->OnTrialAdd(2, Config().Set("lr", 0.1));
  EXPECT_EQ((*s)->OnReport({1, 1, 0.2}).action, Action::kContinue);
  Decision d = (*s)->OnReport({2, 1, 0.9});  // trial 1 at the bottom, 2 on top
  EXPECT_EQ(d.action, Action::kContinue) << d.reason;
  d = (*s)->OnReport({1, 2, 0.2});
  ASSERT_EQ(d.action, Action::kExploit) << d.reason;
  EXPECT_EQ(d.exploit_from, 2u);
  (*s)->OnExploitSkipped(1);
  // Trial 1 still ranks with its own 0.2 (not 2's 0.9) and keeps lr 0.5: when trial 2 falls to
  // the bottom, it copies trial 1's own config, perturbed (0.4 or 0.6; 2's was 0.1).
  d = (*s)->OnReport({2, 2, 0.1});
  ASSERT_EQ(d.action, Action::kExploit) << d.reason;
  EXPECT_EQ(d.exploit_from, 1u);
  double lr = d.new_config.Get<double>("lr");
  EXPECT_TRUE(std::fabs(lr - 0.4) < 1e-12 || std::fabs(lr - 0.6) < 1e-12) << lr;
}

TEST(CurveBound, PausesBelowARungAndStopsOnlyWhatNoSeenGainCouldLift) {
  SchedulerOptions o = Options(SchedulerKind::kBound, 3);  // rungs: 1 (rf 4)
  o.bound_min_finished = 2;
  auto s = MakeTrialScheduler(o);
  // The first two trials run to the end whatever they report: gains from iteration 1 of 0.3
  // and 0.1, from iteration 2 of 0.1 and 0.05; the best finished is 0.8.
  const double a[] = {0.5, 0.7, 0.8}, b[] = {0.6, 0.65, 0.7};
  for (int64_t t = 1; t <= 3; ++t) {
    EXPECT_EQ((*s)->OnReport({1, t, a[t - 1]}).action, Action::kContinue);
    EXPECT_EQ((*s)->OnReport({2, t, b[t - 1]}).action, Action::kContinue);
  }
  (*s)->OnTrialEnd(1, true);
  (*s)->OnTrialEnd(2, true);
  Decision d = (*s)->OnReport({4, 1, 0.51});  // could reach 0.81, but not in the rung's top 1/4
  EXPECT_EQ(d.action, Action::kPause) << d.reason;
  d = (*s)->OnReport({5, 1, 0.49});  // 0.49 + 0.3 < 0.8
  EXPECT_EQ(d.action, Action::kStop);
  EXPECT_NE(d.reason.find("short of the best finished result 0.8"), std::string::npos) << d.reason;
  EXPECT_EQ((*s)->OnReport({6, 1, 0.7}).action, Action::kContinue);  // the rung's top 1/4
  // While new configs come, the paused trial waits; when none do, it runs again.
  TrialScheduler::NextRun next = (*s)->ChooseTrialToRun(true);
  EXPECT_FALSE(next.resume.has_value());
  EXPECT_TRUE(next.stop.empty());
  next = (*s)->ChooseTrialToRun(false);
  ASSERT_TRUE(next.resume.has_value());
  EXPECT_EQ(*next.resume, 4u);
  EXPECT_EQ((*s)->OnReport({4, 2, 0.69}).action, Action::kStop);  // 0.69 + 0.1 < 0.8
  // A paused trial is stopped once a better finished result puts it out of reach.
  EXPECT_EQ((*s)->OnReport({7, 1, 0.55}).action, Action::kPause);  // could reach 0.85
  EXPECT_EQ((*s)->OnReport({6, 2, 0.8}).action, Action::kContinue);
  EXPECT_EQ((*s)->OnReport({6, 3, 0.9}).action, Action::kContinue);
  (*s)->OnTrialEnd(6, true);
  next = (*s)->ChooseTrialToRun(true);
  ASSERT_EQ(next.stop.size(), 1u);
  EXPECT_EQ(next.stop[0].first, 7u);
  EXPECT_FALSE(next.resume.has_value());
}

TEST(TrialSchedulers, TheSameCallsGiveTheSameDecisions) {
  for (SchedulerKind kind :
       {SchedulerKind::kAsha, SchedulerKind::kHyperBand, SchedulerKind::kMedian,
        SchedulerKind::kPbt, SchedulerKind::kBound, SchedulerKind::kBudget}) {
    SchedulerOptions o = Options(kind, 9);
    o.seed = 5;
    o.pbt_mutations.Uniform("lr", 0.001, 1);
    auto a = MakeTrialScheduler(o), b = MakeTrialScheduler(o);
    Rng rng(1);
    for (TrialId id = 1; id <= 30; ++id) {
      Config c = Config().Set("lr", rng.Uniform01());
      (*a)->OnTrialAdd(id, c), (*b)->OnTrialAdd(id, c);
      for (int64_t t = 1; t <= 9; ++t) {
        TrialReport r{id, t, rng.Uniform01() * t};
        Decision da = (*a)->OnReport(r), db = (*b)->OnReport(r);
        ASSERT_EQ(da.action, db.action);
        ASSERT_EQ(da.new_config, db.new_config);
        if (da.action == Action::kPause) {
          TrialScheduler::NextRun na = (*a)->ChooseTrialToRun(false);
          TrialScheduler::NextRun nb = (*b)->ChooseTrialToRun(false);
          ASSERT_EQ(na.resume, nb.resume);
          ASSERT_EQ(na.stop, nb.stop);
        }
        if (da.action == Action::kStop || t == 9) {
          (*a)->OnTrialEnd(id, t == 9), (*b)->OnTrialEnd(id, t == 9);
          break;
        }
      }
    }
  }
}

// A trial stopped from outside (`cumulus stop trial`) ends without reaching its next rung, or
// before its first report, or while paused: every scheduler takes it as an early stop and never
// resumes it or names it again.
TEST(TrialSchedulers, ATrialStoppedFromOutsideIsNeverResumed) {
  for (SchedulerKind kind : {SchedulerKind::kFifo, SchedulerKind::kAsha, SchedulerKind::kHyperBand,
                             SchedulerKind::kMedian, SchedulerKind::kPbt, SchedulerKind::kBound,
                             SchedulerKind::kBudget}) {
    SchedulerOptions o = Options(kind, 9);
    o.bound_min_finished = 1;
    o.pbt_mutations.Uniform("lr", 0.001, 1);
    auto s = MakeTrialScheduler(o);
    ASSERT_TRUE(s.ok()) << s.status();
    Rng rng(3);
    for (TrialId id = 1; id <= 12; ++id) (*s)->OnTrialAdd(id, Config().Set("lr", 0.5));
    (*s)->OnTrialEnd(1, false);  // stopped before it ever ran
    std::set<TrialId> stopped = {1};
    for (TrialId id = 2; id <= 12; ++id) {
      for (int64_t t = 1; t <= 9; ++t) {
        Decision d = (*s)->OnReport({id, t, rng.Uniform01() * t});
        // Trials 2 and 3 are stopped by the user at iteration 2 (3 even if paused there).
        if ((id == 2 || id == 3) && t == 2) {
          (*s)->OnTrialEnd(id, false);
          stopped.insert(id);
          break;
        }
        if (d.action == Action::kStop || d.action == Action::kPause || t == 9) {
          if (d.action != Action::kPause) (*s)->OnTrialEnd(id, t == 9);
          break;
        }
      }
    }
    for (int round = 0; round < 12; ++round) {
      TrialScheduler::NextRun next = (*s)->ChooseTrialToRun(false);
      if (next.resume) {
        EXPECT_EQ(stopped.count(*next.resume), 0u)
            << SchedulerKindName(kind) << " resumed stopped trial " << *next.resume;
        (*s)->OnTrialEnd(*next.resume, false);
      }
      for (auto& [id, why] : next.stop)
        EXPECT_EQ(stopped.count(id), 0u)
            << SchedulerKindName(kind) << " stopped " << id << " again";
      if (!next.resume && next.stop.empty()) break;
    }
    (void)(*s)->Cutoffs();
  }
}

TEST(TrialSchedulers, BadOptionsAreOneClearError) {
  SchedulerOptions o = Options(SchedulerKind::kAsha);
  o.reduction_factor = 1;
  EXPECT_EQ(MakeTrialScheduler(o).status().message(),
            "scheduler: reduction_factor must be a number above 1");
  o = Options(SchedulerKind::kAsha);
  o.grace_period = 17;
  EXPECT_FALSE(MakeTrialScheduler(o).ok());
  o = Options(SchedulerKind::kPbt);
  o.pbt_quantile = 0.7;
  EXPECT_FALSE(MakeTrialScheduler(o).ok());
  EXPECT_EQ(ParseMode("maximum").status().message(),
            "mode \"maximum\" is neither max nor min: say whether a larger metric is better (max) "
            "or a smaller one (min)");
  EXPECT_FALSE(ParseSchedulerKind("bohb").ok());
}

}  // namespace
}  // namespace cumulus::tune
