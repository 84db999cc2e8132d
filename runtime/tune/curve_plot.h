// The learning-curve picture of a tuning experiment (`cumulus trials EXPERIMENT --plot FILE.svg`):
// every trial's metric against its iteration, as one self-contained SVG document (no scripts, no
// external fonts or styles; renders with rsvg-convert, browsers, Inkscape).
//
// What it shows:
//  - axes with nice tick values (linear, or log x), the metric and its mode in the title, and a
//    line of counts per state with the compute used;
//  - the rung cut-offs: a dashed vertical line at each rung iteration and a diamond at each
//    cut-off value;
//  - finished trials in blue, running ones green (a dot at their latest report), paused ones amber
//    (a ring), trials stopped early grey and ending in an X, failed trials red and dashed
//    (a square where they failed); a kind with many curves (over 50) fades so density shows;
//  - the best trial (BestTrial: last value, mode-aware) thick orange on top, its id at its last
//    point, its id, value and config in a legend box in the corner of the plot that hides the
//    least of the curves;
//  - a note for what is not drawn: non-finite values (skipped; a line joins the finite points
//    around them), trials without reports, non-positive iterations on a log axis.
//
// Size: coordinates are tenths of a pixel, written as relative moves, and consecutive points that
// round to the same spot are dropped, so 1,000 trials of 100 reports are about 1 MB.
#pragma once

#include <string>

#include "runtime/tune/trial_table.h"

namespace cumulus::tune {

struct PlotOptions {
  int width = 960;     // pixels; values below 320 are taken as 320
  int height = 600;    // pixels; values below 240 are taken as 240
  bool log_x = false;  // iterations on a log10 axis (ASHA's rungs are geometric)
  std::string title;   // empty: "NAME: METRIC (max|min) by iteration"
  bool legend = true;  // the legend box with the best trial's config
};

// REQUIRES: nothing; any table (no trials, no reports, non-finite values) gives a valid document.
std::string PlotSvg(const ExperimentTable& table, const PlotOptions& options);

}  // namespace cumulus::tune
