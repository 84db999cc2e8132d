// The experiment's spec: its record round-trips the scheduler's settings, a spec written before a
// setting was recorded reads that setting's default (SchedulerOptions'), not zero, and the
// settings reach the scheduler the tuner makes from the spec.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "cumulus/tune.h"
#include "runtime/tune/experiment_state.h"
#include "runtime/tune/journal.h"
#include "scheduler/tune/trial_scheduler.h"

namespace cumulus::tune {
namespace {

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

TEST(ExperimentSpec, BudgetSettingsRoundTrip) {
  ExperimentSpec s;
  s.name = "e";
  s.metric = "accuracy";
  s.num_samples = 4;
  s.scheduler = "budget";
  s.budget_fraction = 0.1;
  s.budget_min_prefix = 0;
  s.budget_reduction_factor = 3;
  s.budget_promotion_share = 0.5;
  s.budget_score = "line";
  s.budget_score_window = 0.5;
  s.budget_eager = true;
  auto back = DecodeSpec(EncodeSpec(s));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->budget_fraction, 0.1);
  EXPECT_EQ(back->budget_min_prefix, 0);  // zero is a value, not "absent"
  EXPECT_EQ(back->budget_reduction_factor, 3);
  EXPECT_EQ(back->budget_promotion_share, 0.5);
  EXPECT_EQ(back->budget_score, "line");
  EXPECT_EQ(back->budget_score_window, 0.5);
  EXPECT_TRUE(back->budget_eager);
  s.budget_eager = false;  // false is a value too, not "absent" (whose default is true)
  EXPECT_FALSE(DecodeSpec(EncodeSpec(s))->budget_eager);
}

// A spec as journals before the budget settings held it: made by `capnp encode` with the schema
// of the time (fields @0 to @32; name "old", scheduler "budget", 20 samples, max_iterations 10).
TEST(ExperimentSpec, SpecFromBeforeTheBudgetSettingsReadsTheDefaults) {
  const std::string old = FromHex(
      "00000000270000000000000013000a0001000000000000001400000000000000070000000000000001000000"
      "0000000000000000000008400100000000000000010000000000000003000000000000000400000000000000"
      "000000000000d03f000000000000d03f0a000000000000000a00000000000000000000000000000001000000"
      "0200000001000000000000000000000000000000000000000000000000000000000000002500000022000000"
      "2500000052000000290000004a0000002d0000003a0000002d0000003a000000000000000000000000000000"
      "000000000000000000000000210000000e00000000000000000000006f6c6400000000005175616472617469"
      "63000000000000006163637572616379000000000000000072616e646f6d0000627564676574000001000000"
      "120000007800000000000000");
  auto spec = DecodeSpec(old);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "old");
  EXPECT_EQ(spec->scheduler, "budget");
  EXPECT_EQ(spec->max_iterations, 10);
  const SchedulerOptions defaults;
  EXPECT_EQ(spec->budget_fraction, defaults.budget_fraction);
  EXPECT_EQ(spec->budget_reduction_factor, defaults.budget_reduction_factor);
  EXPECT_EQ(spec->budget_promotion_share, defaults.budget_promotion_share);
  // Not today's defaults but what such an experiment ran with: the prefix (0.10 since
  // 2026-12-07) and the score (fit since 2026-12-06).
  EXPECT_EQ(spec->budget_min_prefix, 0.05);
  EXPECT_EQ(spec->budget_score, "last");
  EXPECT_EQ(spec->budget_score_window, defaults.budget_score_window);
  EXPECT_TRUE(spec->budget_eager);  // the rule before 2026-12-07
  // ExperimentSpec's own defaults (a spec made in code) agree as well.
  const ExperimentSpec fresh;
  EXPECT_EQ(fresh.budget_fraction, defaults.budget_fraction);
  EXPECT_EQ(fresh.budget_min_prefix, defaults.budget_min_prefix);
  EXPECT_EQ(fresh.budget_reduction_factor, defaults.budget_reduction_factor);
  EXPECT_EQ(fresh.budget_promotion_share, defaults.budget_promotion_share);
  EXPECT_EQ(fresh.budget_score, BudgetScoreName(defaults.budget_score));
  EXPECT_EQ(fresh.budget_score_window, defaults.budget_score_window);
  EXPECT_EQ(fresh.budget_eager, defaults.budget_eager);
  // And so do the public settings' (cumulus/tune.h).
  const SchedulerSettings user;
  EXPECT_EQ(user.budget_fraction, defaults.budget_fraction);
  EXPECT_EQ(user.budget_min_prefix, defaults.budget_min_prefix);
  EXPECT_EQ(user.budget_reduction_factor, defaults.budget_reduction_factor);
  EXPECT_EQ(user.budget_promotion_share, defaults.budget_promotion_share);
  EXPECT_EQ(user.budget_score, BudgetScoreName(defaults.budget_score));
  EXPECT_EQ(user.budget_score_window, defaults.budget_score_window);
  EXPECT_EQ(user.budget_eager, defaults.budget_eager);
}

// One worker, trials run one at a time as the tuner would: trial k's curve rises to k / n, so the
// order never changes. Returns the iterations spent.
int64_t SpentIterations(TrialScheduler& s, TrialId n, int64_t max_t) {
  std::map<TrialId, int64_t> reached;
  int64_t spent = 0;
  auto run = [&](TrialId id) {
    for (int64_t t = reached[id] + 1; t <= max_t; ++t) {
      ++spent;
      reached[id] = t;
      double v = static_cast<double>(id) / static_cast<double>(n) * static_cast<double>(t) /
                 static_cast<double>(t + 2);
      Decision d = s.OnReport({id, t, v});
      if (d.action == Action::kPause) return;
      if (d.action == Action::kStop || t == max_t) return s.OnTrialEnd(id, t == max_t);
    }
  };
  TrialId added = 0;
  for (int guard = 0; guard < 10000; ++guard) {
    TrialScheduler::NextRun next = s.ChooseTrialToRun(added < n);
    for (auto& [id, why] : next.stop) s.OnTrialEnd(id, false);
    if (next.resume) {
      run(*next.resume);
    } else if (added < n) {
      s.OnTrialAdd(++added, Config());
      run(added);
    } else {
      break;
    }
  }
  return spent;
}

TEST(ExperimentSpec, BudgetSettingsReachTheScheduler) {
  ExperimentSpec spec;
  spec.name = "e";
  spec.metric = "accuracy";
  spec.num_samples = 20;
  spec.scheduler = "budget";
  spec.max_iterations = 20;
  auto defaults = SchedulerOptionsFromSpec(spec);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  spec.budget_fraction = 0.1;
  spec.budget_min_prefix = 0.1;
  spec.budget_reduction_factor = 3;
  spec.budget_promotion_share = 0.5;
  spec.budget_score = "mean";
  spec.budget_score_window = 0.25;
  spec.budget_eager = true;
  auto tiny = SchedulerOptionsFromSpec(spec);
  ASSERT_TRUE(tiny.ok()) << tiny.status();
  EXPECT_EQ(tiny->kind, SchedulerKind::kBudget);
  EXPECT_EQ(tiny->budget_fraction, 0.1);
  EXPECT_EQ(tiny->budget_min_prefix, 0.1);
  EXPECT_EQ(tiny->budget_reduction_factor, 3);
  EXPECT_EQ(tiny->budget_promotion_share, 0.5);
  EXPECT_EQ(tiny->budget_score, BudgetScore::kMean);
  EXPECT_EQ(tiny->budget_score_window, 0.25);
  EXPECT_TRUE(tiny->budget_eager);

  // 20 trials of 20 iterations: the default budget is 0.24 x 400 = 96 iterations, 0.1's is 40;
  // every trial runs its prefix (ceil(0.1 x 20) = 2 iterations) either way.
  auto full = MakeTrialScheduler(*defaults);
  auto small = MakeTrialScheduler(*tiny);
  ASSERT_TRUE(full.ok() && small.ok());
  int64_t spent_full = SpentIterations(**full, 20, 20);
  int64_t spent_small = SpentIterations(**small, 20, 20);
  EXPECT_LE(spent_small, 40);
  EXPECT_GE(spent_small, 40);  // a prefix of 2 iterations each is the whole budget
  EXPECT_GT(spent_full, 80) << "the default budget (96) was not spent";
  EXPECT_LE(spent_full, 96);
}

TEST(ExperimentSpec, BadBudgetSettingIsOneLineNamingIt) {
  ExperimentSpec spec;
  spec.scheduler = "budget";
  spec.budget_reduction_factor = 1;
  auto o = SchedulerOptionsFromSpec(spec);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(MakeTrialScheduler(*o).status().message(),
            "scheduler: budget_reduction_factor must be a number above 1, not 1");
}

TEST(ExperimentSpec, UnknownBudgetScoreIsOneLineNamingIt) {
  ExperimentSpec spec;
  spec.scheduler = "budget";
  spec.budget_score = "median";
  EXPECT_EQ(SchedulerOptionsFromSpec(spec).status().message(),
            "budget_score \"median\" is unknown: use last, mean, line or fit");
}

}  // namespace
}  // namespace cumulus::tune
