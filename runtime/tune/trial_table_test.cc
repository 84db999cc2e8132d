#include "runtime/tune/trial_table.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/tune/test_tables.h"

namespace cumulus::tune {
namespace {

using testing::AshaExperiment;
using testing::Point;
using testing::Trial;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// RFC 4180 reader: rows of fields (quoted fields may hold commas, quotes, newlines).
std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false, in_quotes = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_quotes) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      EXPECT_TRUE(field.empty()) << "quote inside an unquoted field";
      in_quotes = quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (c == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
    } else {
      field += c;
    }
  }
  EXPECT_FALSE(in_quotes) << "unterminated quoted field";
  EXPECT_TRUE(rows.back().empty() && field.empty()) << "last line lacks its newline";
  rows.pop_back();
  (void)quoted;
  return rows;
}

// A strict JSON checker (RFC 8259 grammar; no NaN/Infinity literals).
class JsonChecker {
 public:
  explicit JsonChecker(const std::string& s) : s_(s) {}
  bool Valid() {
    Ws();
    if (!Val()) return false;
    Ws();
    return i_ == s_.size();
  }

 private:
  void Ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Lit(const char* w) {
    size_t n = std::strlen(w);
    if (s_.compare(i_, n, w) != 0) return false;
    i_ += n;
    return true;
  }
  bool Str() {
    if (s_[i_] != '"') return false;
    for (++i_; i_ < s_.size(); ++i_) {
      unsigned char c = s_[i_];
      if (c < 0x20) return false;
      if (c == '\\') {
        ++i_;
        if (i_ >= s_.size() || std::string("\"\\/bfnrtu").find(s_[i_]) == std::string::npos)
          return false;
      } else if (c == '"') {
        ++i_;
        return true;
      }
    }
    return false;
  }
  bool Num() {
    size_t start = i_;
    if (s_[i_] == '-') ++i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) ||
                              std::string(".eE+-").find(s_[i_]) != std::string::npos))
      ++i_;
    return i_ > start && std::isdigit(static_cast<unsigned char>(s_[i_ - 1]));
  }
  bool Val() {
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '"') return Str();
    if (c == '{' || c == '[') {
      char close = c == '{' ? '}' : ']';
      ++i_;
      Ws();
      if (i_ < s_.size() && s_[i_] == close) return ++i_, true;
      while (true) {
        Ws();
        if (c == '{') {
          if (!Str()) return false;
          Ws();
          if (s_[i_++] != ':') return false;
          Ws();
        }
        if (!Val()) return false;
        Ws();
        if (i_ >= s_.size()) return false;
        if (s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (s_[i_] == close) return ++i_, true;
        return false;
      }
    }
    if (Lit("true") || Lit("false") || Lit("null")) return true;
    return Num();
  }
  const std::string& s_;
  size_t i_ = 0;
};

ExperimentTable SmallTable() {
  ExperimentTable t;
  t.name = "demo";
  t.metric = "acc";
  t.maximize = true;
  Config c1;
  c1.Set("lr", 0.1).Set("width", int64_t{128});
  Config c2;
  c2.Set("lr", 0.001).Set("act", std::string("relu, \"leaky\""));
  t.trials.push_back(Trial("t0001", TrialState::kFinished, {0.5, 0.8, 0.7}, c1));
  t.trials.push_back(Trial("t0002", TrialState::kStoppedEarly, {0.3}, c2));
  t.trials[1].reason = "below cut-off 0.4, at rung 1\nsecond line";
  t.trials[1].node = "n1";
  t.trials[0].restarts = 2;
  t.cutoffs = {{1, 0.4}};
  t.compute_seconds = 4;
  return t;
}

TEST(TrialTable, StateNames) {
  EXPECT_STREQ(TrialStateName(TrialState::kPending), "PENDING");
  EXPECT_STREQ(TrialStateName(TrialState::kRunning), "RUNNING");
  EXPECT_STREQ(TrialStateName(TrialState::kPaused), "PAUSED");
  EXPECT_STREQ(TrialStateName(TrialState::kStoppedEarly), "STOPPED");
  EXPECT_STREQ(TrialStateName(TrialState::kFinished), "FINISHED");
  EXPECT_STREQ(TrialStateName(TrialState::kFailed), "FAILED");
}

TEST(TrialTable, LastAndBestAreModeAware) {
  TrialRow t = Trial("t", TrialState::kFinished, {0.5, 0.9, kNaN, 0.7});
  EXPECT_EQ(Iterations(t), 4);
  EXPECT_DOUBLE_EQ(*LastMetric(t, "acc"), 0.7);
  EXPECT_DOUBLE_EQ(*BestMetric(t, "acc", true), 0.9);
  EXPECT_DOUBLE_EQ(*BestMetric(t, "acc", false), 0.5);
  EXPECT_FALSE(LastMetric(t, "loss").has_value());
  EXPECT_FALSE(BestMetric(Trial("e", TrialState::kPending, {}), "acc", true).has_value());
  // The last report that has the metric counts, even if a later report lacks it.
  t.history.push_back(Point(5, 1.0, "other"));
  EXPECT_DOUBLE_EQ(*LastMetric(t, "acc"), 0.7);
}

TEST(TrialTable, BestTrialUsesLastValueModeAndIdTies) {
  ExperimentTable e;
  e.metric = "acc";
  // t1 peaked at 0.99 but ended at 0.6: by Ray's default (last) it is not the best.
  e.trials.push_back(Trial("t3", TrialState::kFinished, {0.5, 0.8}));
  e.trials.push_back(Trial("t1", TrialState::kFinished, {0.99, 0.6}));
  e.trials.push_back(Trial("t2", TrialState::kFinished, {0.1, 0.8}));
  e.trials.push_back(Trial("t0", TrialState::kRunning, {0.2, kInf}));  // non-finite: skipped
  e.trials.push_back(Trial("t4", TrialState::kPending, {}));
  ASSERT_NE(BestTrial(e), nullptr);
  EXPECT_EQ(BestTrial(e)->id, "t2");  // tie with t3 at 0.8, smaller id wins
  e.maximize = false;
  EXPECT_EQ(BestTrial(e)->id, "t1");
  ExperimentTable empty;
  empty.metric = "acc";
  EXPECT_EQ(BestTrial(empty), nullptr);
  empty.trials.push_back(Trial("t9", TrialState::kFailed, {kNaN}));
  EXPECT_EQ(BestTrial(empty), nullptr);
}

TEST(TrialTable, FormatNumberRoundTrips) {
  EXPECT_EQ(FormatNumber(0.1), "0.1");
  EXPECT_EQ(FormatNumber(1e-5), "1e-05");
  EXPECT_EQ(FormatNumber(3), "3");
  EXPECT_EQ(FormatNumber(kNaN), "nan");
  EXPECT_EQ(FormatNumber(-kInf), "-inf");
  double x = 0.1 + 0.2;
  EXPECT_EQ(std::stod(FormatNumber(x)), x);
}

TEST(TrialTable, CsvHasUnionOfConfigKeysAndQuotes) {
  std::string csv = TrialsCsv(SmallTable());
  auto rows = ParseCsv(csv);
  ASSERT_EQ(rows.size(), 3u) << csv;
  std::vector<std::string> header = {"id",     "state",      "iterations", "last",
                                     "best",   "seconds",    "node",       "restarts",
                                     "reason", "config/act", "config/lr",  "config/width"};
  EXPECT_EQ(rows[0], header);
  std::vector<std::string> r1 = {"t0001", "FINISHED", "3", "0.7", "0.8", "3",
                                 "",      "2",        "",  "",    "0.1", "128"};
  EXPECT_EQ(rows[1], r1);
  std::vector<std::string> r2 = {"t0002",
                                 "STOPPED",
                                 "1",
                                 "0.3",
                                 "0.3",
                                 "1",
                                 "n1",
                                 "0",
                                 "below cut-off 0.4, at rung 1\nsecond line",
                                 "relu, \"leaky\"",
                                 "0.001",
                                 ""};
  EXPECT_EQ(rows[2], r2);
  for (const auto& r : rows) EXPECT_EQ(r.size(), header.size());
}

TEST(TrialTable, CsvBestRespectsMinMode) {
  ExperimentTable t = SmallTable();
  t.maximize = false;
  auto rows = ParseCsv(TrialsCsv(t));
  EXPECT_EQ(rows[1][4], "0.5");
}

TEST(TrialTable, JsonIsValidAndTyped) {
  ExperimentTable t = SmallTable();
  t.trials.push_back(Trial("t0003", TrialState::kFailed, {kNaN}));
  t.trials.back().reason = std::string("bad \x01 byte\ttab \"q\" \\");
  std::string json = TrialsJson(t);
  EXPECT_TRUE(JsonChecker(json).Valid()) << json;
  EXPECT_NE(json.find("\"best_trial\": \"t0001\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"mode\": \"max\""), std::string::npos);
  EXPECT_NE(json.find("\"config\": {\"lr\": 0.1, \"width\": 128}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"act\": \"relu, \\\"leaky\\\"\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"last\": null"), std::string::npos) << json;  // NaN is null
  EXPECT_NE(json.find("\"STOPPED\": 1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"cutoffs\": [{\"iteration\": 1, \"value\": 0.4}]"), std::string::npos);
  EXPECT_EQ(json.find("nan"), std::string::npos) << json;
}

TEST(TrialTable, JsonOfEmptyExperiment) {
  ExperimentTable t;
  t.name = "e";
  t.metric = "loss";
  t.maximize = false;
  std::string json = TrialsJson(t);
  EXPECT_TRUE(JsonChecker(json).Valid()) << json;
  EXPECT_NE(json.find("\"best_trial\": null"), std::string::npos);
  EXPECT_NE(json.find("\"trials\": []"), std::string::npos);
  EXPECT_EQ(ParseCsv(TrialsCsv(t)).size(), 1u);
}

TEST(TrialTable, HistoryHasEveryMetricKey) {
  TrialRow t = Trial("t0001", TrialState::kRunning, {0.5, 0.6});
  t.history[0].metrics["loss"] = 1.5;
  t.history[1].metrics["zeta"] = kInf;
  t.history[1].metrics["iteration"] = 7;  // a metric that collides with a fixed column
  t.history[1].seconds = 2.25;
  auto rows = ParseCsv(HistoryCsv(t, "acc"));
  ASSERT_EQ(rows.size(), 3u);
  std::vector<std::string> header = {"iteration",        "seconds", "acc",
                                     "metric/iteration", "loss",    "zeta"};
  EXPECT_EQ(rows[0], header);
  EXPECT_EQ(rows[1], (std::vector<std::string>{"1", "1", "0.5", "", "1.5", ""}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"2", "2.25", "0.6", "7", "", "inf"}));

  std::string json = HistoryJson(t, "acc");
  EXPECT_TRUE(JsonChecker(json).Valid()) << json;
  EXPECT_NE(json.find("\"last\": 0.6"), std::string::npos) << json;
  EXPECT_NE(json.find("{\"iteration\": 1, \"seconds\": 1, \"metrics\": {\"acc\": 0.5, "
                      "\"loss\": 1.5}}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"zeta\": null"), std::string::npos) << json;
}

TEST(TrialTable, LargeExperimentExportsStayWellFormed) {
  ExperimentTable t = AshaExperiment(200, 7);
  auto rows = ParseCsv(TrialsCsv(t));
  ASSERT_EQ(rows.size(), 201u);
  for (const auto& r : rows) ASSERT_EQ(r.size(), rows[0].size());
  EXPECT_TRUE(JsonChecker(TrialsJson(t)).Valid());
  const TrialRow* best = BestTrial(t);
  ASSERT_NE(best, nullptr);
  for (const TrialRow& r : t.trials) {
    auto v = LastMetric(r, "acc");
    if (v && std::isfinite(*v)) {
      EXPECT_LE(*v, *LastMetric(*best, "acc")) << r.id;
    }
  }
}

}  // namespace
}  // namespace cumulus::tune
