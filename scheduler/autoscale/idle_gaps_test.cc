#include "scheduler/autoscale/idle_gaps.h"

#include <gtest/gtest.h>

namespace cumulus::autoscale {
namespace {

constexpr int64_t kMin = kMicrosPerMinute;
constexpr int64_t kBoot = 5 * kMin;
constexpr int64_t kFallback = 7 * kMin;

std::vector<int64_t> Gaps(std::initializer_list<std::pair<int, int64_t>> counts) {
  std::vector<int64_t> out;
  for (auto [n, gap] : counts) out.insert(out.end(), n, gap);
  return out;
}

TEST(LearnedIdleTimeoutTest, FewGapsKeepTheConfiguredTimeout) {
  EXPECT_EQ(LearnedIdleTimeout({}, kBoot, kFallback), kFallback);
  EXPECT_EQ(LearnedIdleTimeout(Gaps({{9, 1 * kMin}}), kBoot, kFallback), kFallback);
  EXPECT_EQ(LearnedIdleTimeout(Gaps({{10, 1 * kMin}}), kBoot, kFallback), 1 * kMin);
}

TEST(LearnedIdleTimeoutTest, KeepsANodeOnlyWhenWorkComesBackSoonerThanABoot) {
  // Work back within a minute each time: keeping a node a minute costs less than a boot.
  EXPECT_EQ(LearnedIdleTimeout(Gaps({{20, 1 * kMin}}), kBoot, kFallback), 1 * kMin);
  // Work back only after an hour, or never: waiting costs more than booting again.
  EXPECT_EQ(LearnedIdleTimeout(Gaps({{20, 60 * kMin}}), kBoot, kFallback), 0);
  EXPECT_EQ(LearnedIdleTimeout(Gaps({{20, kNeverCameBack}}), kBoot, kFallback), 0);
  // Most gaps 2 minutes, a few never: 18 x 2m + 2 x (2m + 5m) = 50m beats 20 boots = 100m.
  EXPECT_EQ(LearnedIdleTimeout(Gaps({{18, 2 * kMin}, {2, kNeverCameBack}}), kBoot, kFallback),
            2 * kMin);
  // Half 1 minute, half 20 minutes: T = 1m costs 10 x 1 + 10 x 6 = 70m; T = 20m costs 210m;
  // T = 0 costs 100m.
  EXPECT_EQ(LearnedIdleTimeout(Gaps({{10, 1 * kMin}, {10, 20 * kMin}}), kBoot, kFallback),
            1 * kMin);
}

TEST(LearnedIdleTimeoutTest, NeverLongerThanTheHorizon) {
  LearnOptions o;
  o.horizon_micros = 30 * kMicrosPerSecond;
  EXPECT_EQ(LearnedIdleTimeout(Gaps({{20, 1 * kMin}}), kBoot, kFallback, o), o.horizon_micros);
}

// A snapshot with one running node `id` of type "t", idle since `idle_since` (-1: busy).
Snapshot With(int64_t now, const std::string& id, int64_t idle_since) {
  Snapshot s;
  s.now = now;
  Node n;
  n.id = id;
  n.type = "t";
  n.state = NodeState::kRunning;
  n.idle_since = idle_since;
  n.busy = idle_since < 0;
  s.nodes.push_back(n);
  return s;
}

TEST(IdleGapRecorderTest, ANodeThatTakesWorkAgainEndsItsGap) {
  IdleGapRecorder r;
  r.Observe(With(10 * kMin, "n1", 8 * kMin), {});
  EXPECT_TRUE(r.Gaps().empty()) << "still idle: no gap yet";
  r.Observe(With(12 * kMin, "n1", -1), {});
  EXPECT_EQ(r.Gaps()["t"], std::vector<int64_t>{4 * kMin}) << "idle at 8m, busy seen at 12m";
  // Busy and idle again between two rounds: the gap ends by the new idle time at the latest.
  r.Observe(With(13 * kMin, "n1", 13 * kMin), {});
  r.Observe(With(20 * kMin, "n1", 18 * kMin), {});
  EXPECT_EQ(r.Gaps()["t"], (std::vector<int64_t>{4 * kMin, 5 * kMin}));
}

TEST(IdleGapRecorderTest, ALaunchEndsTheGapOfTheNodeDrainedLast) {
  IdleGapRecorder r;
  Snapshot s = With(10 * kMin, "n1", 2 * kMin);
  Node n2 = s.nodes[0];
  n2.id = "n2";
  n2.idle_since = 4 * kMin;
  s.nodes.push_back(n2);
  Decision drained;
  drained.drains = {{"n1", ""}, {"n2", ""}};
  r.Observe(s, drained);
  EXPECT_TRUE(r.Gaps().empty());
  Snapshot later;
  later.now = 30 * kMin;
  Decision launch;
  launch.launches = {{"t", 1, ""}};
  r.Observe(later, launch);
  EXPECT_EQ(r.Gaps()["t"], std::vector<int64_t>{26 * kMin}) << "n2, idle since 4m";
  // The other drained node: its type not asked for within the horizon (6 hours).
  later.now = 2 * kMin + 6 * 60 * kMin + 1;
  r.Observe(later, {});
  EXPECT_EQ(r.Gaps()["t"], (std::vector<int64_t>{26 * kMin, kNeverCameBack}));
}

TEST(IdleGapRecorderTest, KeepsOnlyTheMostRecentGaps) {
  LearnOptions o;
  o.max_gaps = 3;
  IdleGapRecorder r(o);
  for (int i = 1; i <= 5; ++i) {
    int64_t t = i * 100 * kMin;
    r.Observe(With(t, "n", t - i * kMin), {});
    r.Observe(With(t + 1, "n", -1), {});
  }
  EXPECT_EQ(r.Gaps()["t"], (std::vector<int64_t>{3 * kMin + 1, 4 * kMin + 1, 5 * kMin + 1}));
}

}  // namespace
}  // namespace cumulus::autoscale
