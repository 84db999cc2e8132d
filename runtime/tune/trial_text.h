// The trial table a terminal shows: what the tuner's live progress view redraws and what
// `cumulus trials` prints. A pure function of the table (no terminal codes, no clock).
//
//   fashion_mnist_asha  acc (max)  40 trials: 3 RUNNING, 30 STOPPED, 6 FINISHED, 1 FAILED  compute
//   1h02m best t0012 acc=0.9123 at iteration 100 {batch=64, lr=0.0021, momentum=0.9, width=128}
//   trial  state     iter    last    best  node          lr  width  batch  reason
//   t0000  FINISHED   100  0.9012  0.9040  10.0.0.12:7~  0.002  128     64
//   t0001  STOPPED      4  0.5521  0.5521  a3f9c2d1e4b~  0.0001   32     64  below the rung's ...
//
// Every line is at most `width` characters (code points). Config columns are the keys whose
// value differs between trials first, then the constant ones, each in name order; as many as fit
// are shown (the rest are counted in the column header line, and the best line shows the best
// trial's whole config as far as it fits). Text cut to fit ends with '~'.
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
