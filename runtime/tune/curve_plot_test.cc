#include "runtime/tune/curve_plot.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "runtime/tune/svg_text.h"
#include "runtime/tune/test_tables.h"

namespace cumulus::tune {
namespace {

using testing::AshaExperiment;
using testing::Trial;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

bool HaveTool(const char* name) {
  std::string cmd = std::string("command -v ") + name + " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// Writes `svg` and renders it with rsvg-convert; "" if it rendered to a PNG, else what failed.
// Set CUMULUS_TUNE_PLOT_DIR to keep the SVG and PNG files (to look at them).
std::string Render(const std::string& svg, const std::string& name) {
  const char* keep = std::getenv("CUMULUS_TUNE_PLOT_DIR");
  std::string dir = keep ? keep : ::testing::TempDir();
  std::string base = dir + "/" + name + "." + std::to_string(getpid());
  if (keep) base = dir + "/" + name;
  {
    std::ofstream f(base + ".svg", std::ios::binary);
    f << svg;
    if (!f) return "cannot write " + base + ".svg";
  }
  std::string cmd = "rsvg-convert -o '" + base + ".png' '" + base + ".svg' 2>'" + base + ".err'";
  int rc = std::system(cmd.c_str());
  std::ifstream err(base + ".err");
  std::stringstream err_text;
  err_text << err.rdbuf();
  std::ifstream png(base + ".png", std::ios::binary);
  char sig[8] = {};
  png.read(sig, 8);
  bool is_png = png.gcount() == 8 && std::string(sig + 1, 3) == "PNG";
  if (!keep) {
    std::remove((base + ".svg").c_str());
    std::remove((base + ".png").c_str());
  }
  std::remove((base + ".err").c_str());
  if (rc != 0) return "rsvg-convert exited " + std::to_string(rc) + ": " + err_text.str();
  if (!is_png) return "rsvg-convert wrote no PNG";
  return "";
}

// Well-formed XML by xmllint when present ("" if fine or not installed).
std::string XmlCheck(const std::string& svg) {
  if (!HaveTool("xmllint")) return "";
  std::string path = ::testing::TempDir() + "/xmlcheck." + std::to_string(getpid()) + ".svg";
  std::ofstream(path, std::ios::binary) << svg;
  int rc = std::system(("xmllint --noout '" + path + "' 2>/dev/null").c_str());
  std::remove(path.c_str());
  return rc == 0 ? "" : "xmllint rejects the document";
}

#define EXPECT_RENDERS(svg, name)                                                       \
  do {                                                                                  \
    if (!HaveTool("rsvg-convert"))                                                      \
      GTEST_SKIP() << "rsvg-convert not installed (Debian librsvg2-bin): render check " \
                      "skipped";                                                        \
    EXPECT_EQ(XmlCheck(svg), "");                                                       \
    EXPECT_EQ(Render(svg, name), "");                                                   \
  } while (0)

size_t Stopped(const ExperimentTable& t, TrialState state) {
  size_t n = 0;
  for (const TrialRow& r : t.trials) {
    bool drawn = false;
    for (const TrialPoint& p : r.history) {
      auto m = p.metrics.find(t.metric);
      drawn |= m != p.metrics.end() && std::isfinite(m->second);
    }
    n += r.state == state && drawn;
  }
  return n;
}

TEST(CurvePlot, AshaExperimentStructure) {
  ExperimentTable t = AshaExperiment(40, 5);
  std::string svg = PlotSvg(t, {});
  const TrialRow* best = BestTrial(t);
  ASSERT_NE(best, nullptr);
  // The best trial is drawn on top, in its own group, and named in the legend with its config.
  size_t group = svg.find("<g class=\"best\">");
  ASSERT_NE(group, std::string::npos);
  EXPECT_NE(svg.find("data-trial=\"" + best->id + "\"", group), std::string::npos);
  EXPECT_EQ(Count(svg, "data-trial=\"" + best->id + "\""), 1u);
  EXPECT_NE(svg.find("best " + best->id + ": acc "), std::string::npos);
  size_t config = svg.find("class=\"best-config\"");
  ASSERT_NE(config, std::string::npos);
  EXPECT_NE(svg.find("lr=" + FormatValue(best->config.values().at("lr")), config),
            std::string::npos);
  // One X per stopped trial, one square per failed trial, one dot per running trial.
  size_t stopped = Stopped(t, TrialState::kStoppedEarly);
  ASSERT_GT(stopped, 10u);
  EXPECT_EQ(Count(svg, "class=\"stop-mark\""), stopped);
  EXPECT_EQ(Count(svg, "class=\"fail-mark\""), Stopped(t, TrialState::kFailed));
  EXPECT_EQ(Count(svg, "class=\"run-mark\""),
            Stopped(t, TrialState::kRunning) - (best->state == TrialState::kRunning));
  // One dashed line per rung, one marker per cut-off.
  std::set<int64_t> rungs;
  for (auto [it, v] : t.cutoffs) rungs.insert(it);
  ASSERT_GE(rungs.size(), 2u);
  EXPECT_EQ(Count(svg, "class=\"cutoff-line\""), rungs.size());
  EXPECT_EQ(Count(svg, "class=\"cutoff-mark\""), t.cutoffs.size());
  // Every trial with points is drawn exactly once.
  for (const TrialRow& r : t.trials) EXPECT_EQ(Count(svg, "data-trial=\"" + r.id + "\""), 1u);
  EXPECT_NE(svg.find("acc (max) by iteration"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_RENDERS(svg, "asha");
}

TEST(CurvePlot, LegendKeepsConfigValuesWhole) {
  ExperimentTable t = AshaExperiment(20, 5);
  std::string best_id = BestTrial(t)->id;
  for (TrialRow& r : t.trials)
    if (r.id == best_id)
      r.config.Set("net", std::string("[C(64,1,1), C(128,3,1), P(2,2)]"))
          .Set("zz_long", std::string(80, 'z'));
  std::string svg = PlotSvg(t, {});
  // The value holds ", " but is one item: never split across legend lines.
  EXPECT_NE(svg.find("net=[C(64,1,1), C(128,3,1), P(2,2)]"), std::string::npos);
  // An item longer than a legend line is cut to the line, not left to run out of the box.
  EXPECT_NE(svg.find("zz_long=" + std::string(48 - 9, 'z') + "~<"), std::string::npos);
}

TEST(CurvePlot, LogXAndMinMode) {
  ExperimentTable t = AshaExperiment(40, 9);
  t.maximize = false;
  t.metric = "loss";
  t.cutoffs.clear();
  t.cutoffs.emplace_back(4, 0.9);
  t.cutoffs.emplace_back(4, 1.1);  // two brackets at the same rung: one line, two markers
  PlotOptions o;
  o.log_x = true;
  std::string svg = PlotSvg(t, o);
  EXPECT_NE(svg.find("loss (min) by iteration"), std::string::npos);
  EXPECT_NE(svg.find("iteration (log scale)"), std::string::npos);
  EXPECT_EQ(Count(svg, "class=\"cutoff-line\""), 1u);
  EXPECT_EQ(Count(svg, "class=\"cutoff-mark\""), 2u);
  EXPECT_RENDERS(svg, "log_min");
}

TEST(CurvePlot, NoTrialsAndNoReports) {
  ExperimentTable t;
  t.name = "empty";
  t.metric = "acc";
  std::string svg = PlotSvg(t, {});
  EXPECT_NE(svg.find("no trials yet"), std::string::npos);
  EXPECT_EQ(svg.find("<g class=\"best\">"), std::string::npos);
  std::string rendered = XmlCheck(svg);
  EXPECT_EQ(rendered, "");
  t.trials.push_back(Trial("t0", TrialState::kPending, {}));
  t.trials.push_back(Trial("t1", TrialState::kRunning, {}));
  std::string none = PlotSvg(t, {});
  EXPECT_NE(none.find("no reports yet"), std::string::npos);
  EXPECT_RENDERS(none, "no_reports");
}

TEST(CurvePlot, OnePointConstantAndNonFinite) {
  ExperimentTable t;
  t.name = "edge";
  t.metric = "acc";
  t.trials.push_back(Trial("t0", TrialState::kRunning, {0.5}));  // one point: a dot
  t.trials.push_back(Trial("t1", TrialState::kFinished, {0.5, 0.5, 0.5}));
  t.trials.push_back(Trial("t2", TrialState::kStoppedEarly, {0.5, kNaN, 0.5, kInf}));
  t.trials.push_back(Trial("t3", TrialState::kPending, {}));
  std::string svg = PlotSvg(t, {});
  EXPECT_NE(svg.find("2 non-finite values not drawn"), std::string::npos) << svg;
  EXPECT_NE(svg.find("1 trial without reports"), std::string::npos);
  EXPECT_EQ(Count(svg, "class=\"stop-mark\""), 1u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  // A constant metric still gets distinct tick labels.
  EXPECT_NE(svg.find(">0.50<"), std::string::npos) << svg;
  EXPECT_RENDERS(svg, "edge");
}

// Two diverged trials at chance do not press the others into one line: the axis spans the
// bundle, and the two are drawn at its edge, said in a note.
TEST(CurvePlot, ValuesFarFromTheRestAreDrawnAtTheEdge) {
  ExperimentTable t;
  t.name = "diverged";
  t.metric = "acc";
  for (int i = 0; i < 8; ++i) {
    double end = 0.84 + 0.005 * i;
    t.trials.push_back(
        Trial("t" + std::to_string(i), TrialState::kFinished, {end - 0.03, end - 0.01, end}));
  }
  t.trials.push_back(Trial("t8", TrialState::kStoppedEarly, {0.105}));
  t.trials.push_back(Trial("t9", TrialState::kStoppedEarly, {0.237}));
  std::string svg = PlotSvg(t, {});
  EXPECT_NE(svg.find("2 values far from the rest drawn at the edge of the axis"), std::string::npos)
      << svg;
  EXPECT_EQ(svg.find(">0.2<"), std::string::npos) << "the axis still reaches down to them";
  EXPECT_EQ(Count(svg, "class=\"stop-mark\""), 2u) << "both are still drawn";
  EXPECT_RENDERS(svg, "diverged");
}

TEST(CurvePlot, TextIsEscaped) {
  ExperimentTable t = AshaExperiment(6, 1, 0);
  t.name = "a<b & \"c\" 'd'\x01 \xff\xfe";
  t.metric = "acc<&>";
  for (TrialRow& r : t.trials) {
    r.id = "<" + r.id + "&>";
    for (TrialPoint& p : r.history) p.metrics["acc<&>"] = p.metrics["acc"];
    r.config.Set("act", std::string("re<lu> & \"x\""));
  }
  std::string svg = PlotSvg(t, {});
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot; &apos;d&apos;? ??"), std::string::npos);
  EXPECT_EQ(XmlEscape("\xC3\xA9\xE2\x82\xAC"), "\xC3\xA9\xE2\x82\xAC");  // UTF-8 kept
  EXPECT_EQ(XmlEscape("\xC3"), "?");                                     // cut sequence
  EXPECT_RENDERS(svg, "escaped");
}

TEST(CurvePlot, ThousandTrialsStaySmall) {
  ExperimentTable t = AshaExperiment(1000, 17, 10);
  std::string svg = PlotSvg(t, {});
  size_t points = 0;
  for (const TrialRow& r : t.trials) points += r.history.size();
  // Under 12 bytes a point (relative moves in tenths of a pixel), however many trials.
  EXPECT_LT(svg.size(), 12 * points + 100000) << svg.size() << " bytes for " << points;
  EXPECT_EQ(Count(svg, "class=\"stop-mark\""), Stopped(t, TrialState::kStoppedEarly));
  EXPECT_RENDERS(svg, "thousand");
}

TEST(CurvePlot, EveryTrialRunToTheEnd) {
  // Worst case for size: 1,000 trials of 100 reports each.
  ExperimentTable t;
  t.name = "full";
  t.metric = "acc";
  for (int i = 0; i < 1000; ++i) {
    std::vector<double> v;
    for (int k = 1; k <= 100; ++k) v.push_back(0.9 - 0.8 * std::exp(-k / (5.0 + i % 50)));
    t.trials.push_back(Trial("t" + std::to_string(i), TrialState::kFinished, v));
  }
  std::string svg = PlotSvg(t, {});
  EXPECT_LT(svg.size(), 1300000u) << svg.size();
  EXPECT_EQ(XmlCheck(svg), "");
}

}  // namespace
}  // namespace cumulus::tune
