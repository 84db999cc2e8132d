#include "runtime/tune/trial_text.h"

#include <gtest/gtest.h>

#include <sstream>

#include "runtime/tune/test_tables.h"

namespace cumulus::tune {
namespace {

using testing::AshaExperiment;
using testing::Trial;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

ExperimentTable Small() {
  ExperimentTable t;
  t.name = "demo";
  t.metric = "acc";
  Config a, b, c;
  a.Set("lr", 0.01).Set("width", int64_t{128}).Set("batch", int64_t{64});
  b.Set("lr", 0.0001).Set("width", int64_t{64}).Set("batch", int64_t{64});
  c.Set("lr", 0.1).Set("width", int64_t{256}).Set("batch", int64_t{64});
  t.trials.push_back(Trial("t0000", TrialState::kFinished, {0.5, 0.7, 0.9}, a));
  t.trials.push_back(Trial("t0001", TrialState::kStoppedEarly, {0.2}, b));
  t.trials.back().reason = "below the cut-off 0.4\nat rung 1";
  t.trials.back().node = "a3f9c2d1e4b5a6c7d8e9f0";
  t.trials.push_back(Trial("t0002", TrialState::kRunning, {0.6, 0.65}, c));
  t.trials.push_back(Trial("t0003", TrialState::kPending, {}, c));
  t.trials.back().reason = "waiting for 1 GPU (no node has one free)";
  t.compute_seconds = 3725;
  return t;
}

TEST(TrialText, SummaryBestAndOneLinePerTrial) {
  std::string text = TrialsText(Small(), 120);
  auto lines = Lines(text);
  ASSERT_EQ(lines.size(), 2u + 1u + 4u) << text;
  EXPECT_EQ(lines[0],
            "demo  acc (max)  compute 1h02m  4 trials: 1 RUNNING, 1 PENDING, 1 STOPPED, "
            "1 FINISHED");
  // The keys that vary first, then batch (one value for every trial).
  EXPECT_EQ(lines[1], "best t0000 acc=0.9 at iteration 3 {lr=0.01, width=128, batch=64}");
  // Keys that vary (lr, width) are columns; batch, the same for every trial, is only in the best
  // line.
  EXPECT_LT(lines[2].find("lr"), lines[2].find("width")) << lines[2];
  EXPECT_EQ(lines[2].find("batch"), std::string::npos) << lines[2];
  EXPECT_EQ(lines[2].rfind("reason"), lines[2].size() - 6) << lines[2];
  EXPECT_EQ(lines[3].substr(0, 5), "t0000");
  EXPECT_NE(lines[3].find("FINISHED"), std::string::npos);
  EXPECT_NE(lines[4].find("below the cut-off 0.4 at rung 1"), std::string::npos) << lines[4];
  EXPECT_NE(lines[4].find("a3f9c2d1e4b~"), std::string::npos) << lines[4];  // node abbreviated
  EXPECT_NE(lines[6].find("waiting for 1 GPU"), std::string::npos) << lines[6];
  // The pending trial has no metric yet.
  EXPECT_NE(lines[6].find("PENDING      0     -     -  -"), std::string::npos) << lines[6];
}

TEST(TrialText, EveryLineFitsTheWidth) {
  ExperimentTable t = AshaExperiment(60, 3);
  t.trials[5].restarts = 2;
  t.trials[7].config.Set("a_very_long_parameter_name", std::string("a_long_string_value_here"));
  for (size_t width : {40, 60, 80, 100, 132, 200}) {
    std::string text = TrialsText(t, width);
    auto lines = Lines(text);
    EXPECT_EQ(lines.size(), 3u + t.trials.size()) << "width " << width;
    for (const std::string& l : lines) EXPECT_LE(CodePoints(l), width) << l;
    if (width >= 100) {
      EXPECT_NE(lines[2].find("restarts"), std::string::npos) << lines[2];
    }
  }
  // Narrow: config keys that do not fit are counted, not silently dropped.
  auto narrow = Lines(TrialsText(t, 80));
  EXPECT_NE(narrow[2].find("+"), std::string::npos) << narrow[2];
  // Below 40 columns the table is drawn 40 wide.
  for (const std::string& l : Lines(TrialsText(t, 10))) EXPECT_LE(CodePoints(l), 40u) << l;
}

TEST(TrialText, Utf8IsCutOnCharacterBoundaries) {
  ExperimentTable t = Small();
  t.trials[0].reason = std::string(200, 'x') + "\xC3\xA9\xC3\xA9\xC3\xA9";
  t.trials[1].reason = "\xC3\xA9t\xC3\xA9 " + std::string(200, 'y');
  for (size_t width : {70, 71, 72, 73}) {
    for (const std::string& l : Lines(TrialsText(t, width))) {
      EXPECT_LE(CodePoints(l), width);
      // No line ends inside a multi-byte character.
      size_t i = l.size();
      while (i > 0 && (static_cast<unsigned char>(l[i - 1]) & 0xC0) == 0x80) --i;
      if (i > 0 && static_cast<unsigned char>(l[i - 1]) >= 0xC0)
        ADD_FAILURE() << "cut inside a character: " << l;
    }
  }
}

TEST(TrialText, MaxRowsKeepsRunningAndBestAndCountsTheRest) {
  ExperimentTable t = AshaExperiment(100, 11, /*running=*/4);
  TextOptions options;
  options.width = 120;
  options.max_rows = 10;
  std::string text = TrialsText(t, options);
  auto lines = Lines(text);
  ASSERT_EQ(lines.size(), 3u + 10u + 1u) << text;
  EXPECT_NE(lines.back().find("90 more trials not shown"), std::string::npos) << lines.back();
  int running = 0;
  for (const std::string& l : lines) running += l.find(" RUNNING ") != std::string::npos;
  EXPECT_EQ(running, 4) << text;
  const TrialRow* best = BestTrial(t);
  ASSERT_NE(best, nullptr);
  bool best_shown = false;
  for (size_t i = 3; i < lines.size(); ++i) best_shown |= lines[i].rfind(best->id, 0) == 0;
  EXPECT_TRUE(best_shown) << text;
  // Shown lines keep table order.
  for (size_t i = 4; i + 1 < lines.size(); ++i) EXPECT_LT(lines[i - 1], lines[i]);
}

TEST(TrialText, EmptyExperiment) {
  ExperimentTable t;
  t.name = "e";
  t.metric = "loss";
  t.maximize = false;
  auto lines = Lines(TrialsText(t, 80));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "e  loss (min)  compute 0.0s  0 trials");
  EXPECT_EQ(lines[1], "best: none yet (no trial has reported loss)");
}

TEST(TrialText, Durations) {
  EXPECT_EQ(FormatDuration(42.46), "42.5s");
  EXPECT_EQ(FormatDuration(725), "12m05s");
  EXPECT_EQ(FormatDuration(3 * 3600 + 125), "3h02m");
  EXPECT_EQ(FormatDuration(2 * 86400 + 4 * 3600 + 59), "2d04h");
  EXPECT_EQ(FormatDuration(-1), "0.0s");
}

}  // namespace
}  // namespace cumulus::tune
