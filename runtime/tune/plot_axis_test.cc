#include "runtime/tune/plot_axis.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace cumulus::tune {
namespace {

void ExpectCovers(const AxisTicks& t, double lo, double hi) {
  EXPECT_LT(t.lo, t.hi);
  EXPECT_LE(t.lo, lo);
  EXPECT_GE(t.hi, hi);
  ASSERT_EQ(t.values.size(), t.labels.size());
  ASSERT_GE(t.values.size(), 2u);
  for (size_t i = 1; i < t.values.size(); ++i) EXPECT_LT(t.values[i - 1], t.values[i]);
  for (double v : t.values) {
    EXPECT_GE(v, t.lo - 1e-12);
    EXPECT_LE(v, t.hi + 1e-12);
  }
}

TEST(PlotAxis, LinearNiceSteps) {
  AxisTicks t = LinearTicks(0.12, 0.93, 7, false);
  ExpectCovers(t, 0.12, 0.93);
  EXPECT_EQ(t.labels, (std::vector<std::string>{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}));
  AxisTicks it = LinearTicks(1, 100, 9, true);
  ExpectCovers(it, 1, 100);
  EXPECT_EQ(it.labels.front(), "0");
  EXPECT_EQ(it.labels.back(), "100");
}

TEST(PlotAxis, IntegerAxisNeverStepsBelowOne) {
  AxisTicks t = LinearTicks(1, 3, 9, true);
  ExpectCovers(t, 1, 3);
  for (size_t i = 1; i < t.values.size(); ++i) EXPECT_GE(t.values[i] - t.values[i - 1], 1.0);
  AxisTicks one = LinearTicks(1, 1, 9, true);  // a single iteration
  ExpectCovers(one, 1, 1);
}

TEST(PlotAxis, ConstantAndDegenerateRanges) {
  ExpectCovers(LinearTicks(0.5, 0.5, 7, false), 0.5, 0.5);
  ExpectCovers(LinearTicks(0, 0, 7, false), 0, 0);
  ExpectCovers(LinearTicks(-3e8, -3e8, 7, false), -3e8, -3e8);
  ExpectCovers(LinearTicks(1e-9, 1e-9, 7, false), 1e-9, 1e-9);
  ExpectCovers(LinearTicks(5, 2, 7, false), 2, 5);  // reversed
  double inf = std::numeric_limits<double>::infinity();
  ExpectCovers(LinearTicks(0, inf, 7, false), 0, 1);
}

TEST(PlotAxis, LabelsHaveTheDecimalsTheStepNeeds) {
  AxisTicks t = LinearTicks(0.001, 0.004, 7, false);
  ExpectCovers(t, 0.001, 0.004);
  for (const std::string& l : t.labels) EXPECT_LE(l.size(), 6u) << l;  // "0.0005", not 0.000500001
  AxisTicks big = LinearTicks(0, 5e7, 6, false);
  EXPECT_EQ(big.labels.back(), "5e+07");
  AxisTicks neg = LinearTicks(-1, 1, 5, false);
  for (const std::string& l : neg.labels) EXPECT_NE(l, "-0");
}

TEST(PlotAxis, LogTicks) {
  AxisTicks t = LogTicks(1, 100);
  ExpectCovers(t, 1, 100);
  EXPECT_EQ(t.labels, (std::vector<std::string>{"1", "2", "5", "10", "20", "50", "100"}));
  AxisTicks wide = LogTicks(1, 1e5);
  ExpectCovers(wide, 1, 1e5);
  EXPECT_EQ(wide.values.size(), 6u);  // decades only
  AxisTicks one = LogTicks(4, 4);
  ExpectCovers(one, 4, 4);
  // Iterations 1 to 4 (a short experiment): every whole step, not 1 and 2 alone.
  AxisTicks few = LogTicks(1, 4);
  ExpectCovers(few, 1, 4);
  EXPECT_EQ(few.labels, (std::vector<std::string>{"1", "2", "3", "4"}));
}

}  // namespace
}  // namespace cumulus::tune
