#include "runtime/tune/curve_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <vector>

#include "runtime/tune/plot_axis.h"
#include "runtime/tune/svg_text.h"
#include "runtime/tune/trial_text.h"

namespace cumulus::tune {

namespace {

// Colours and strokes of each kind of curve.
struct Style {
  const char* stroke;
  const char* width;
  const char* opacity;
  const char* dash;  // nullptr: solid
};
const Style kStopped{"#a8a8a8", "1", "0.75", nullptr};
const Style kFinished{"#3b75af", "1.3", "0.8", nullptr};
const Style kRunning{"#2e9e44", "1.3", "0.9", nullptr};
const Style kPaused{"#d99a1e", "1.3", "0.9", nullptr};
const Style kFailed{"#d62728", "1.3", "0.9", "4 3"};
const Style kBest{"#f07800", "3", "1", nullptr};
const char* kInk = "#333333";
const char* kCutoff = "#555555";

const Style& StyleOf(TrialState s) {
  switch (s) {
    case TrialState::kStoppedEarly:
      return kStopped;
    case TrialState::kFinished:
      return kFinished;
    case TrialState::kRunning:
      return kRunning;
    case TrialState::kFailed:
      return kFailed;
    case TrialState::kPending:
    case TrialState::kPaused:
      return kPaused;
  }
  return kFinished;
}

class Plot {
 public:
  Plot(const ExperimentTable& table, const PlotOptions& options)
      : table_(table),
        o_(options),
        w_(std::max(options.width, 320)),
        h_(std::max(options.height, 240)) {
    left_ = 72;
    right_ = w_ - 24;
    top_ = 58;
    bottom_ = h_ - 52;
  }

  std::string Render() {
    best_ = BestTrial(table_);
    Collect();
    Scales();
    Header();
    Axes();
    out_ += "<clipPath id=\"plot-area\"><rect x=\"" + Px(left_) + "\" y=\"" + Px(top_ - 4) +
            "\" width=\"" + Px(right_ - left_ + 4) + "\" height=\"" + Px(bottom_ - top_ + 8) +
            "\"/></clipPath>\n<g clip-path=\"url(#plot-area)\">\n";
    CutoffLines();
    Curves();
    BestCurve();
    CutoffMarks();  // on top: a cut-off stays visible under the bundle of curves
    out_ += "</g>\n";
    if (o_.legend) Legend();
    Notes();
    return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
           "width=\"" +
           std::to_string(w_) + "\" height=\"" + std::to_string(h_) + "\" viewBox=\"0 0 " +
           std::to_string(w_) + " " + std::to_string(h_) +
           "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"11\">\n"
           "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" +
           out_ + "</svg>\n";
  }

 private:
  struct Curve {
    const TrialRow* trial;
    std::vector<std::pair<double, double>> points;  // (iteration, value), finite only
  };

  // The finite points of every trial and what is left out.
  void Collect() {
    for (const TrialRow& t : table_.trials) {
      Curve c{&t, {}};
      bool reported = false;
      for (const TrialPoint& p : t.history) {
        auto m = p.metrics.find(table_.metric);
        if (m == p.metrics.end()) continue;
        reported = true;
        if (!std::isfinite(m->second)) {
          ++non_finite_;
          continue;
        }
        if (o_.log_x && p.iteration <= 0) {
          ++non_positive_;
          continue;
        }
        c.points.emplace_back(static_cast<double>(p.iteration), m->second);
      }
      if (!reported) ++no_reports_;
      curves_.push_back(std::move(c));
    }
  }

  void Scales() {
    // A few values far from the rest (a diverged trial at chance) would press every other curve
    // into one line: the y axis spans the values within Tukey's far fences (3 x the
    // interquartile range; with 8 values or more), and those outside are drawn at its edge and
    // counted in a note.
    std::vector<double> ys;
    for (const Curve& c : curves_) {
      for (auto [x, y] : c.points) ys.push_back(y);
    }
    double fence_lo = -HUGE_VAL, fence_hi = HUGE_VAL;
    if (ys.size() >= 8) {
      std::sort(ys.begin(), ys.end());
      double q1 = ys[ys.size() / 4], q3 = ys[(3 * ys.size()) / 4], iqr = q3 - q1;
      if (iqr > 0) fence_lo = q1 - 3 * iqr, fence_hi = q3 + 3 * iqr;
    }
    double xlo = HUGE_VAL, xhi = -HUGE_VAL, ylo = HUGE_VAL, yhi = -HUGE_VAL;
    for (const Curve& c : curves_) {
      for (auto [x, y] : c.points) {
        xlo = std::min(xlo, x), xhi = std::max(xhi, x);
        if (y < fence_lo || y > fence_hi) {
          ++off_scale_;
          continue;
        }
        ylo = std::min(ylo, y), yhi = std::max(yhi, y);
      }
    }
    for (auto [it, v] : table_.cutoffs) {
      if (o_.log_x && it <= 0) continue;
      xlo = std::min(xlo, static_cast<double>(it)), xhi = std::max(xhi, static_cast<double>(it));
      if (std::isfinite(v)) ylo = std::min(ylo, v), yhi = std::max(yhi, v);
    }
    empty_ = xlo > xhi;
    if (empty_) xlo = 1, xhi = 10;
    if (ylo > yhi) ylo = 0, yhi = 1;
    x_ = o_.log_x ? LogTicks(xlo, xhi) : LinearTicks(xlo, xhi, 9, true);
    y_ = LinearTicks(ylo, yhi, 7, false);
  }

  // Iteration to pixels. The data area starts kInset pixels right of the y axis, so a curve that
  // starts at the axis's first tick is not drawn on top of the axis line.
  double X(double it) const {
    constexpr double kInset = 8;
    double f = o_.log_x
                   ? (std::log10(it) - std::log10(x_.lo)) / (std::log10(x_.hi) - std::log10(x_.lo))
                   : (it - x_.lo) / (x_.hi - x_.lo);
    return left_ + kInset + f * (right_ - left_ - 2 * kInset);
  }
  // A value off the scale is drawn just past the axis's edge (inside the plot's clip).
  double Y(double v) const {
    double y = bottom_ - (v - y_.lo) / (y_.hi - y_.lo) * (bottom_ - top_);
    return std::clamp(y, top_ - 3, bottom_ + 3);
  }

  void Header() {
    std::string title = o_.title.empty()
                            ? table_.name + ": " + table_.metric +
                                  (table_.maximize ? " (max)" : " (min)") + " by iteration"
                            : o_.title;
    out_ += "<text class=\"title\" x=\"" + Px(left_) +
            "\" y=\"24\" font-size=\"16\" "
            "font-weight=\"bold\" fill=\"" +
            kInk + "\">" + XmlEscape(title) + "</text>\n";
    std::map<TrialState, int> counts;
    for (const TrialRow& t : table_.trials) ++counts[t.state];
    std::string sub = std::to_string(table_.trials.size()) + " trials";
    const TrialState order[] = {TrialState::kRunning,  TrialState::kPending,
                                TrialState::kPaused,   TrialState::kStoppedEarly,
                                TrialState::kFinished, TrialState::kFailed};
    bool first = true;
    for (TrialState s : order) {
      if (counts[s] == 0) continue;
      sub += (first ? ": " : ", ") + std::to_string(counts[s]) + " " + TrialStateName(s);
      first = false;
    }
    sub += " \xC2\xB7 compute " + FormatDuration(table_.compute_seconds);
    sub += " \xC2\xB7 " + std::string(table_.maximize ? "higher" : "lower") + " is better";
    out_ += "<text class=\"subtitle\" x=\"" + Px(left_) + "\" y=\"42\" fill=\"#666666\">" +
            XmlEscape(sub) + "</text>\n";
  }

  void Axes() {
    std::string grid, ticks;
    for (size_t i = 0; i < y_.values.size(); ++i) {
      std::string y = Px(Y(y_.values[i]));
      grid += "<line x1=\"" + Px(left_) + "\" y1=\"" + y + "\" x2=\"" + Px(right_) + "\" y2=\"" +
              y + "\"/>";
      ticks += "<text x=\"" + Px(left_ - 7) + "\" y=\"" + y + "\" dy=\"0.35em\" " +
               "text-anchor=\"end\">" + XmlEscape(y_.labels[i]) + "</text>";
    }
    for (size_t i = 0; i < x_.values.size(); ++i) {
      std::string x = Px(X(x_.values[i]));
      grid += "<line x1=\"" + x + "\" y1=\"" + Px(top_) + "\" x2=\"" + x + "\" y2=\"" +
              Px(bottom_) + "\"/>";
      ticks += "<line x1=\"" + x + "\" y1=\"" + Px(bottom_) + "\" x2=\"" + x + "\" y2=\"" +
               Px(bottom_ + 5) + "\" stroke=\"" + kInk + "\"/>";
      ticks += "<text x=\"" + x + "\" y=\"" + Px(bottom_ + 18) + "\" text-anchor=\"middle\">" +
               XmlEscape(x_.labels[i]) + "</text>";
    }
    out_ += "<g class=\"grid\" stroke=\"#e6e6e6\" stroke-width=\"1\">" + grid + "</g>\n";
    out_ += "<g class=\"ticks\" fill=\"" + std::string(kInk) + "\">" + ticks + "</g>\n";
    out_ += "<path class=\"axes\" d=\"M" + Px(left_) + " " + Px(top_) + "V" + Px(bottom_) + "H" +
            Px(right_) + "\" fill=\"none\" stroke=\"" + kInk + "\"/>\n";
    out_ += "<text class=\"xlabel\" x=\"" + Px((left_ + right_) / 2) + "\" y=\"" +
            Px(bottom_ + 38) + "\" text-anchor=\"middle\" font-size=\"12\" fill=\"" + kInk + "\">" +
            (o_.log_x ? "iteration (log scale)" : "iteration") + "</text>\n";
    double cy = (top_ + bottom_) / 2;
    out_ += "<text class=\"ylabel\" x=\"18\" y=\"" + Px(cy) +
            "\" text-anchor=\"middle\" font-size=\"12\" fill=\"" + kInk +
            "\" transform=\"rotate(-90 18 " + Px(cy) + ")\">" + XmlEscape(table_.metric) +
            (table_.maximize ? " (max)" : " (min)") + "</text>\n";
    if (empty_) {
      std::string msg = table_.trials.empty() ? "no trials yet" : "no reports yet";
      out_ += "<text class=\"empty\" x=\"" + Px((left_ + right_) / 2) + "\" y=\"" + Px(cy) +
              "\" text-anchor=\"middle\" font-size=\"14\" fill=\"#888888\">" + msg + "</text>\n";
    }
  }

  // One dashed line per distinct rung iteration.
  void CutoffLines() {
    std::set<int64_t> rungs;
    for (auto [it, v] : table_.cutoffs)
      if (!o_.log_x || it > 0) rungs.insert(it);
    if (rungs.empty()) return;
    out_ += "<g class=\"cutoffs\" stroke=\"" + std::string(kCutoff) +
            "\" stroke-width=\"1\" stroke-dasharray=\"5 4\" opacity=\"0.7\">";
    for (int64_t it : rungs) {
      std::string x = Px(X(static_cast<double>(it)));
      out_ += "<line class=\"cutoff-line\" x1=\"" + x + "\" y1=\"" + Px(top_) + "\" x2=\"" + x +
              "\" y2=\"" + Px(bottom_) + "\"/>";
    }
    out_ += "</g>\n";
  }

  void CutoffMarks() {
    std::string marks;
    for (auto [it, v] : table_.cutoffs) {
      if ((o_.log_x && it <= 0) || !std::isfinite(v)) continue;
      int64_t x = std::llround(X(static_cast<double>(it)) * 10);
      int64_t y = std::llround(Y(v) * 10);
      marks += "<path class=\"cutoff-mark\" d=\"M" + Tenths(x) + " " + Tenths(y - 50) + "l5 5-5 " +
               "5-5-5z\"/>";
    }
    if (marks.empty()) return;
    out_ += "<g fill=\"#222222\" stroke=\"white\" stroke-width=\"0.8\">" + marks + "</g>\n";
  }

  // "M x y l dx dy dx dy ..." in tenths of a pixel; consecutive identical points dropped.
  std::string PathData(const Curve& c) const {
    std::string d;
    int64_t px = 0, py = 0;
    for (size_t i = 0; i < c.points.size(); ++i) {
      int64_t x = std::llround(X(c.points[i].first) * 10);
      int64_t y = std::llround(Y(c.points[i].second) * 10);
      if (i == 0) {
        d = "M" + Tenths(x) + " " + Tenths(y) + "l";
      } else if (x != px || y != py) {
        std::string dx = Tenths(x - px), dy = Tenths(y - py);
        if (d.back() != 'l' && dx[0] != '-') d += ' ';
        d += dx;
        if (dy[0] != '-') d += ' ';
        d += dy;
      }
      px = x, py = y;
    }
    if (!d.empty() && d.back() == 'l') d.pop_back();
    return d;
  }

  static std::string StrokeAttrs(const Style& s) {
    std::string a = std::string("fill=\"none\" stroke=\"") + s.stroke + "\" stroke-width=\"" +
                    s.width + "\" stroke-opacity=\"" + s.opacity +
                    "\" stroke-linejoin=\"round\" stroke-linecap=\"round\"";
    if (s.dash) a += std::string(" stroke-dasharray=\"") + s.dash + "\"";
    return a;
  }

  // The end marker of a curve of state `s` at (x, y) pixels.
  static std::string EndMark(TrialState s, double x, double y) {
    switch (s) {
      case TrialState::kStoppedEarly:
        return "<path class=\"stop-mark\" d=\"M" + Px(x - 3.5) + " " + Px(y - 3.5) + "l7 7m0-7" +
               "l-7 7\"/>";
      case TrialState::kFailed:
        return "<rect class=\"fail-mark\" x=\"" + Px(x - 3) + "\" y=\"" + Px(y - 3) +
               "\" width=\"6\" height=\"6\"/>";
      case TrialState::kRunning:
        return "<circle class=\"run-mark\" cx=\"" + Px(x) + "\" cy=\"" + Px(y) + "\" r=\"2.5\"/>";
      case TrialState::kPaused:
      case TrialState::kPending:
        return "<circle class=\"pause-mark\" cx=\"" + Px(x) + "\" cy=\"" + Px(y) +
               "\" r=\"3\" fill=\"white\"/>";
      case TrialState::kFinished:
        return "";
    }
    return "";
  }

  // `opacity` for a group of `n` curves: as given up to 50, then falling as 1/sqrt(n), >= 0.2.
  static std::string Faded(const char* opacity, size_t n) {
    double o = std::atof(opacity);
    if (n > 50) o = std::max(0.2, o * std::sqrt(50.0 / static_cast<double>(n)));
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.2g", o);
    return buf;
  }

  // Every curve but the best one: stopped trials first (underneath), then finished, paused and
  // running, then failed; each group shares its stroke, so a path is just its data.
  void Curves() {
    const TrialState layers[] = {TrialState::kStoppedEarly, TrialState::kFinished,
                                 TrialState::kPending,      TrialState::kPaused,
                                 TrialState::kRunning,      TrialState::kFailed};
    const char* names[] = {"stopped", "finished", "pending", "paused", "running", "failed"};
    size_t counts[std::size(layers)] = {};
    for (const Curve& c : curves_)
      for (size_t l = 0; l < std::size(layers); ++l)
        counts[l] += c.trial->state == layers[l] && c.trial != best_ && !c.points.empty();
    for (size_t l = 0; l < std::size(layers); ++l) {
      std::string paths, dots, marks;
      for (const Curve& c : curves_) {
        if (c.trial->state != layers[l] || c.trial == best_ || c.points.empty()) continue;
        std::string id = XmlEscape(c.trial->id);
        if (c.points.size() == 1) {
          dots += "<circle data-trial=\"" + id + "\" cx=\"" + Px(X(c.points[0].first)) +
                  "\" cy=\"" + Px(Y(c.points[0].second)) + "\" r=\"2\"/>";
        } else {
          paths += "<path data-trial=\"" + id + "\" d=\"" + PathData(c) + "\"/>\n";
        }
        marks += EndMark(layers[l], X(c.points.back().first), Y(c.points.back().second));
      }
      Style s = StyleOf(layers[l]);
      // Many curves of one kind (hundreds of trials stopped at the first rungs) fade, so the
      // bundle shows density instead of a solid blot.
      std::string opacity = Faded(s.opacity, counts[l]);
      s.opacity = opacity.c_str();
      if (!paths.empty())
        out_ += std::string("<g class=\"") + names[l] + "\" " + StrokeAttrs(s) + ">\n" + paths +
                "</g>\n";
      if (!dots.empty())
        out_ += std::string("<g class=\"") + names[l] + "-dots\" fill=\"" + s.stroke + "\">" +
                dots + "</g>\n";
      if (!marks.empty())
        out_ += std::string("<g class=\"") + names[l] + "-marks\" fill=\"" + s.stroke +
                "\" stroke=\"" + s.stroke + "\" stroke-width=\"1.6\" opacity=\"" +
                Faded("1", counts[l] / 4) + "\">" + marks + "</g>\n";
    }
  }

  void BestCurve() {
    if (best_ == nullptr) return;
    const Curve* c = nullptr;
    for (const Curve& k : curves_)
      if (k.trial == best_) c = &k;
    if (c == nullptr || c->points.empty()) return;
    std::string id = XmlEscape(best_->id);
    double ex = X(c->points.back().first), ey = Y(c->points.back().second);
    out_ += "<g class=\"best\">";
    if (c->points.size() > 1) {
      std::string d = PathData(*c);
      out_ += "<path d=\"" + d + "\" fill=\"none\" stroke=\"white\" stroke-width=\"5.5\" " +
              "stroke-linejoin=\"round\" stroke-opacity=\"0.9\"/>";
      out_ += "<path data-trial=\"" + id + "\" d=\"" + d + "\" " + StrokeAttrs(kBest) + "/>";
    }
    out_ += "<circle cx=\"" + Px(ex) + "\" cy=\"" + Px(ey) + "\" r=\"3.5\" fill=\"" + kBest.stroke +
            "\" stroke=\"white\"/>";
    std::string mark = EndMark(best_->state, ex, ey);
    if (!mark.empty() && best_->state != TrialState::kRunning)
      out_ += "<g fill=\"" + std::string(kBest.stroke) + "\" stroke=\"" + kBest.stroke +
              "\" stroke-width=\"1.6\">" + mark + "</g>";
    // The id beside the last point, inside the plot.
    bool left = ex > right_ - 60;
    out_ += "<text class=\"best-label\" x=\"" + Px(left ? ex - 7 : ex + 7) + "\" y=\"" +
            Px(ey - 7) + "\" text-anchor=\"" + (left ? "end" : "start") +
            "\" font-weight=\"bold\" fill=\"" + kBest.stroke + "\" stroke=\"white\" " +
            "stroke-width=\"3\" paint-order=\"stroke\">" + id + "</text>";
    out_ += "</g>\n";
  }

  // The top-left corner for a legend box of w x h pixels: the corner of the plot where the box
  // covers the least of the curves (the best curve counts 20 times), ties going to where learning
  // curves rarely are (bottom right for max, top right for min).
  std::pair<double, double> LegendCorner(double w, double h) const {
    const double l = left_ + 10, r = right_ - w - 10, t = top_ + 10, b = bottom_ - h - 10;
    std::vector<std::pair<double, double>> corners = {{r, b}, {r, t}, {l, b}, {l, t}};
    if (!table_.maximize) std::swap(corners[0], corners[1]), std::swap(corners[2], corners[3]);
    std::vector<double> cost(corners.size(), 0);
    auto visit = [&](double x, double y, double weight) {
      for (size_t i = 0; i < corners.size(); ++i)
        if (x >= corners[i].first && x <= corners[i].first + w && y >= corners[i].second &&
            y <= corners[i].second + h)
          cost[i] += weight;
    };
    for (const Curve& c : curves_) {
      double weight = c.trial == best_ ? 20 : 1;
      for (size_t k = 0; k < c.points.size(); ++k) {
        double x1 = X(c.points[k].first), y1 = Y(c.points[k].second);
        if (k == 0) {
          visit(x1, y1, weight);
          continue;
        }
        // Sample the segment every 8 pixels or so: long segments cross boxes between points.
        double x0 = X(c.points[k - 1].first), y0 = Y(c.points[k - 1].second);
        int steps = std::max(1, static_cast<int>(std::hypot(x1 - x0, y1 - y0) / 8));
        for (int sidx = 1; sidx <= steps; ++sidx)
          visit(x0 + (x1 - x0) * sidx / steps, y0 + (y1 - y0) * sidx / steps, weight);
      }
    }
    size_t best = 0;
    for (size_t i = 1; i < corners.size(); ++i)
      if (cost[i] < cost[best]) best = i;
    return corners[best];
  }

  struct Entry {
    std::string sample;  // SVG of the sample at (0, 0)..(24, 0), translated by the caller
    std::string text;
  };

  void Legend() {
    std::vector<Entry> entries;
    std::vector<std::string> config_lines;
    std::map<TrialState, int> drawn;
    for (const Curve& c : curves_)
      if (!c.points.empty() && c.trial != best_) ++drawn[c.trial->state];
    auto line = [](const Style& s) { return "<path d=\"M0 0h24\" " + StrokeAttrs(s) + "/>"; };
    std::string header;
    if (best_ != nullptr) {
      header = "best " + best_->id + ": " + table_.metric + " " +
               ShortNumber(*LastMetric(*best_, table_.metric)) + " at iteration " +
               std::to_string(Iterations(*best_));
      entries.push_back({"<path d=\"M0 0h24\" fill=\"none\" stroke=\"" + std::string(kBest.stroke) +
                             "\" stroke-width=\"3\"/>",
                         header});
      config_lines = WrapConfig(best_->config, 48);
    }
    // The best is drawn apart (above): its state's count says so, to agree with the tables.
    auto add = [&](TrialState s, const char* what, const std::string& mark) {
      if (drawn[s] == 0) return;
      bool best_too = best_ != nullptr && best_->state == s;
      entries.push_back({line(StyleOf(s)) + mark, std::string(what) + " (" +
                                                      std::to_string(drawn[s]) +
                                                      (best_too ? " + the best)" : ")")});
    };
    auto colour = [](const Style& s, const std::string& m) {
      return "<g fill=\"" + std::string(s.stroke) + "\" stroke=\"" + s.stroke +
             "\" stroke-width=\"1.6\">" + m + "</g>";
    };
    // Legend marks use their own classes, so counting the plot's marks is not disturbed.
    auto legend_mark = [&](TrialState s) {
      std::string m = EndMark(s, 24, 0);
      size_t p = m.find("class=\"");
      if (p != std::string::npos) m.insert(p + 7, "legend-");
      return colour(StyleOf(s), m);
    };
    add(TrialState::kFinished, "finished", "");
    add(TrialState::kRunning, "running", legend_mark(TrialState::kRunning));
    add(TrialState::kPaused, "paused", legend_mark(TrialState::kPaused));
    add(TrialState::kPending, "pending", legend_mark(TrialState::kPending));
    add(TrialState::kStoppedEarly, "stopped early", legend_mark(TrialState::kStoppedEarly));
    add(TrialState::kFailed, "failed", legend_mark(TrialState::kFailed));
    size_t cutoffs = 0;
    for (auto [it, v] : table_.cutoffs) cutoffs += std::isfinite(v) ? 1 : 0;
    if (!table_.cutoffs.empty())
      entries.push_back({"<path d=\"M12 -7v14\" stroke=\"" + std::string(kCutoff) +
                             "\" stroke-dasharray=\"3 2\"/><path d=\"M12 -5l5 5-5 5-5-5z\" "
                             "fill=\"#222222\" stroke=\"white\" stroke-width=\"0.8\"/>",
                         "rung cut-off at the end (" + std::to_string(cutoffs) + ")"});
    if (entries.empty()) return;

    const double row = 16, pad = 8, font = 11;
    double text_w = 0;
    for (const Entry& e : entries) text_w = std::max(text_w, TextWidth(e.text, font));
    for (const std::string& l : config_lines) text_w = std::max(text_w, TextWidth(l, 10));
    double box_w = std::min(pad + 24 + 8 + text_w + pad, right_ - left_ - 20);
    double box_h = pad + row * entries.size() + 13 * config_lines.size() + pad - 4;
    auto [bx, by] = LegendCorner(box_w, box_h);
    out_ += "<g class=\"legend\" transform=\"translate(" + Px(bx) + " " + Px(by) + ")\">";
    out_ += "<rect width=\"" + Px(box_w) + "\" height=\"" + Px(box_h) +
            "\" rx=\"4\" fill=\"white\" fill-opacity=\"0.92\" stroke=\"#bbbbbb\"/>";
    double y = pad + 6;
    for (size_t i = 0; i < entries.size(); ++i) {
      out_ += "<g transform=\"translate(" + Px(pad) + " " + Px(y) + ")\">" + entries[i].sample +
              "</g><text x=\"" + Px(pad + 32) + "\" y=\"" + Px(y) + "\" dy=\"0.35em\" fill=\"" +
              kInk + "\"" + (i == 0 && best_ ? " font-weight=\"bold\"" : "") + ">" +
              XmlEscape(entries[i].text) + "</text>";
      y += row;
      if (i == 0 && best_ != nullptr) {
        for (const std::string& l : config_lines) {
          out_ += "<text class=\"best-config\" x=\"" + Px(pad + 32) + "\" y=\"" + Px(y - 3) +
                  "\" dy=\"0.35em\" font-size=\"10\" fill=\"#555555\">" + XmlEscape(l) + "</text>";
          y += 13;
        }
      }
    }
    out_ += "</g>\n";
  }

  void Notes() {
    std::vector<std::string> notes;
    if (non_finite_ > 0)
      notes.push_back(std::to_string(non_finite_) + " non-finite value" +
                      (non_finite_ == 1 ? "" : "s") + " not drawn");
    if (no_reports_ > 0 && !table_.trials.empty() && !empty_)
      notes.push_back(std::to_string(no_reports_) + " trial" + (no_reports_ == 1 ? "" : "s") +
                      " without reports");
    if (off_scale_ > 0)
      notes.push_back(std::to_string(off_scale_) + " value" + (off_scale_ == 1 ? "" : "s") +
                      " far from the rest drawn at the edge of the axis (" + y_.labels.front() +
                      " to " + y_.labels.back() + ")");
    if (non_positive_ > 0)
      notes.push_back(std::to_string(non_positive_) + " point" + (non_positive_ == 1 ? "" : "s") +
                      " at iteration <= 0 not on the log axis");
    if (notes.empty()) return;
    std::string text;
    for (const std::string& n : notes) text += (text.empty() ? "" : "; ") + n;
    out_ += "<text class=\"note\" x=\"8\" y=\"" + std::to_string(h_ - 8) +
            "\" font-size=\"10\" fill=\"#a04000\">note: " + XmlEscape(text) + "</text>\n";
  }

  const ExperimentTable& table_;
  const PlotOptions& o_;
  const int w_, h_;
  double left_, right_, top_, bottom_;
  const TrialRow* best_ = nullptr;
  std::vector<Curve> curves_;
  AxisTicks x_, y_;
  bool empty_ = false;
  size_t non_finite_ = 0, no_reports_ = 0, non_positive_ = 0, off_scale_ = 0;
  std::string out_;
};

}  // namespace

std::string PlotSvg(const ExperimentTable& table, const PlotOptions& options) {
  return Plot(table, options).Render();
}

}  // namespace cumulus::tune
