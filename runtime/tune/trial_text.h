// The trial table a terminal shows: what the tuner's live progress view redraws and what
// `cumulus trials` prints. A pure function of the table (no terminal codes, no clock).
//
//   fashion_mnist_asha  acc (max)  compute 40m32s  40 trials: 3 RUNNING, 29 STOPPED, 7 FINISHED, 1
//   FAILED best t0012 acc=0.9307 at iteration 100 {batch=64, lr=0.00671224, momentum=0.9,
//   width=256} trial  state     iter    last    best  node                 lr  width  reason t0012
//   FINISHED   100  0.9307   0.942  10.0.0.12:7~   0.006712    256 t0020  FAILED       1  0.1296
//   0.1296  10.0.0.12:7~   0.007324     32  RuntimeError: CUDA out of~ t0037  RUNNING     30 0.6976
//   0.6976  a3f9c2d1e4b~  0.0009507    256
//
// Every line is at most `width` characters (code points); text cut to fit ends with '~'. The
// config columns are the keys whose value differs between trials, in name order, as many as fit
// (the rest are counted as "+N" in the header line); the best line shows the best trial's whole
// config. The reason column takes what width is left.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/tune/trial_table.h"

namespace cumulus::tune {

struct TextOptions {
  size_t width = 100;  // terminal columns; values below 40 are taken as 40
  // At most this many trial lines (0: every trial). When there are more trials, lines go first
  // to running and paused trials, then the best trial, pending and failed ones, then finished and
  // stopped trials by their last metric (best first); the lines keep table order, and one more
  // line counts the trials not shown, by state. For a live view that fits the screen.
  size_t max_rows = 0;
};

// The summary (name, metric and mode, counts per state, compute used), the best trial so far,
// the column header and one line per trial; every line ends with '\n'.
std::string TrialsText(const ExperimentTable& table, const TextOptions& options);
std::string TrialsText(const ExperimentTable& table, size_t width);

// "42.5s", "12m05s", "3h02m", "2d04h": a duration as a person reads it.
std::string FormatDuration(double seconds);

}  // namespace cumulus::tune
