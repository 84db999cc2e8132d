#include "runtime/metrics/exposition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace cumulus::metrics {
namespace {

TEST(ExpositionTest, WritesHelpTypeAndSamplesInOrder) {
  Exposition e;
  e.Family("cumulus_tasks", "Tasks by state.", MetricType::kGauge);
  e.Add({{"State", "RUNNING"}}, 3);
  e.Add({{"State", "FINISHED"}}, 10);
  e.Family("cumulus_worker_failures_total", "Workers that died.", MetricType::kCounter);
  e.Add(2);
  EXPECT_EQ(e.Render(),
            "# HELP cumulus_tasks Tasks by state.\n"
            "# TYPE cumulus_tasks gauge\n"
            "cumulus_tasks{State=\"RUNNING\"} 3\n"
            "cumulus_tasks{State=\"FINISHED\"} 10\n"
            "# HELP cumulus_worker_failures_total Workers that died.\n"
            "# TYPE cumulus_worker_failures_total counter\n"
            "cumulus_worker_failures_total 2\n");
  EXPECT_EQ(e.samples(), 3u);
}

TEST(ExpositionTest, EscapesLabelValuesAndHelp) {
  Exposition e;
  e.Family("m", "a \\ back\nslash", MetricType::kGauge);
  e.Add({{"a", "x\"y"}, {"b", "c:\\d"}, {"c", "line\nbreak"}}, 1);
  EXPECT_EQ(e.Render(),
            "# HELP m a \\\\ back\\nslash\n"
            "# TYPE m gauge\n"
            "m{a=\"x\\\"y\",b=\"c:\\\\d\",c=\"line\\nbreak\"} 1\n");
}

TEST(ExpositionTest, DropsBadNamesInsteadOfWritingThem) {
  Exposition e;
  e.Family("9starts_with_digit", "bad", MetricType::kGauge);
  e.Add(1);  // belongs to the dropped family: not written
  e.Family("ok_name", "good", MetricType::kGauge);
  e.Add({{"bad-label", "v"}}, 1);
  e.Add({{"__reserved", "v"}}, 1);
  e.Add({{"good_label", "v"}}, 2);
  std::string page = e.Render();
  EXPECT_EQ(page.find("9starts"), std::string::npos);
  EXPECT_EQ(page.find("bad-label"), std::string::npos);
  EXPECT_EQ(page.find("__reserved"), std::string::npos);
  EXPECT_NE(page.find("ok_name{good_label=\"v\"} 2\n"), std::string::npos);
  EXPECT_EQ(e.samples(), 1u);
  EXPECT_TRUE(ValidMetricName("cumulus:rate_5m"));
  EXPECT_FALSE(ValidLabelName("a:b"));
}

TEST(ExpositionTest, AFamilyNamedAgainContinues) {
  Exposition e;
  e.Family("a", "A.", MetricType::kGauge);
  e.Add({{"k", "1"}}, 1);
  e.Family("b", "B.", MetricType::kGauge);
  e.Add(5);
  e.Family("a", "A.", MetricType::kGauge);
  e.Add({{"k", "2"}}, 2);
  std::string page = e.Render();
  EXPECT_EQ(page.find("# TYPE a"), page.rfind("# TYPE a"));  // one HELP/TYPE per family
  EXPECT_LT(page.find("a{k=\"2\"}"), page.find("# HELP b"));
}

TEST(ExpositionTest, FormatsValues) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(-3), "-3");
  EXPECT_EQ(FormatValue(1e12), "1000000000000");
  EXPECT_EQ(FormatValue(0.5), "0.5");
  EXPECT_EQ(std::stod(FormatValue(0.1)), 0.1);
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(std::stod(FormatValue(1e300)), 1e300);
}

}  // namespace
}  // namespace cumulus::metrics
