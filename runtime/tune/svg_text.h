// Text pieces of the SVG that curve_plot.cc writes: escaping, pixel numbers, rough text widths
// and a config wrapped into legend lines. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cumulus/tune_space.h"

namespace cumulus::tune {

// `s` as XML character data or attribute text: & < > " ' escaped, control characters other than
// tab and newline and bytes that are not UTF-8 replaced by '?'.
std::string XmlEscape(const std::string& s);

// A number of tenths of a pixel, as SVG text: 1234 -> "123.4", -50 -> "-5".
std::string Tenths(int64_t t);
// `v` pixels rounded to a tenth, as SVG text.
std::string Px(double v);
// `v` to 4 significant digits ("0.9307", "1.2e-05").
std::string ShortNumber(double v);

// A rough width in pixels of `s` at `font_size` (DejaVu Sans averages about 0.6 em a character).
double TextWidth(const std::string& s, double font_size);

// The config's "key=value" items joined by ", " into lines of at most `max_chars` code points
// (every line but the last ends with ","); an item is never split, whatever its value holds, and
// one longer than a line is cut to the line, ending with '~'.
std::vector<std::string> WrapConfig(const Config& config, size_t max_chars);

}  // namespace cumulus::tune
