// Tests of the prefix model behind bound_predict (final_bound.h).
#include "scheduler/tune/final_bound.h"

#include <gtest/gtest.h>

#include <cmath>

#include "scheduler/tune/trial_scheduler.h"

namespace cumulus::tune {
namespace {

// A saturating curve a (1 - e^(-t / tau)) over iterations 1..k.
CurvePoints Saturating(double a, double tau, int64_t k) {
  CurvePoints c;
  for (int64_t t = 1; t <= k; ++t) c[t] = a * (1 - std::exp(-static_cast<double>(t) / tau));
  return c;
}

TEST(FinalBound, NeedsEnoughFinishedCurvesAtTheIteration) {
  CurvePoints a = Saturating(0.8, 2, 10), b = Saturating(0.7, 3, 10), shortc = Saturating(1, 1, 3);
  EXPECT_FALSE(FitFinalBound({&a, &b}, 5, 2).has_value());           // fewer than 3
  EXPECT_FALSE(FitFinalBound({&a, &b, &shortc}, 5, 3).has_value());  // one has no value at 5
  EXPECT_TRUE(FitFinalBound({&a, &b, &shortc}, 2, 3).has_value());
}

TEST(FinalBound, CoversEveryFinishedCurveAndIsTightWhereTheyAgree) {
  // Curves of one shape (tau 2) and different heights: the gain from t is a fixed multiple of
  // the level, so the fit is exact and the bound is each curve's own final value.
  std::vector<CurvePoints> same;
  for (double a : {0.5, 0.6, 0.7, 0.8, 0.9}) same.push_back(Saturating(a, 2, 20));
  std::vector<const CurvePoints*> ptrs;
  for (const auto& c : same) ptrs.push_back(&c);
  auto fit = FitFinalBound(ptrs, 3, 3);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->margin, 0, 1e-6);  // the tiny ridge on collinear features
  CurvePoints fresh = Saturating(0.75, 2, 20);
  EXPECT_NEAR(FinalUpperBound(*fit, fresh), fresh.rbegin()->second, 1e-6);
  // A slow learner among them: its surprise becomes the margin, and no finished curve's own
  // final is above its bound (the margin is a leave-one-out residual, not an in-sample one).
  same.push_back(Saturating(0.95, 8, 20));
  ptrs.push_back(&same.back());
  fit = FitFinalBound(ptrs, 3, 3);
  ASSERT_TRUE(fit.has_value());
  EXPECT_GT(fit->margin, 0.01);
  for (const CurvePoints* c : ptrs) EXPECT_GE(FinalUpperBound(*fit, *c), c->rbegin()->second);
}

TEST(FinalBound, PredictingBoundStopsWhatTheFinishedCurvesRuleOut) {
  SchedulerOptions o;
  o.kind = SchedulerKind::kBound;
  o.max_t = 8;
  o.bound_min_finished = 4;
  o.bound_predict = true;
  auto s = MakeTrialScheduler(o);
  ASSERT_TRUE(s.ok()) << s.status();
  TrialId id = 1;
  for (double a : {0.5, 0.6, 0.7, 0.8}) {
    CurvePoints c = Saturating(a, 2, 8);
    for (const auto& [t, v] : c) ASSERT_EQ((*s)->OnReport({id, t, v}).action, Action::kContinue);
    (*s)->OnTrialEnd(id++, true);
  }
  // Same shape, lower: its final would be 0.55 x 0.98, short of the best finished (0.78).
  Decision d = (*s)->OnReport({id, 1, Saturating(0.55, 2, 8).at(1)});
  EXPECT_EQ(d.action, Action::kStop) << d.reason;
  EXPECT_NE(d.reason.find("short of the best finished result"), std::string::npos) << d.reason;
  // Higher than every finished curve: it runs on.
  EXPECT_EQ((*s)->OnReport({id + 1, 1, Saturating(0.9, 2, 8).at(1)}).action, Action::kContinue);
}

}  // namespace
}  // namespace cumulus::tune
