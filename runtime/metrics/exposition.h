// Exposition: metrics in the Prometheus text format, version 0.0.4 (what a Prometheus server
// scrapes from GET /metrics). A caller adds families (name, HELP, TYPE) and their samples, and
// Render() writes them: one `# HELP` and one `# TYPE` line per family, then its samples, with
// label values and help text escaped as the format requires (backslash, double quote, newline).
//
// Names are checked when a family or sample is added: a metric name must match
// [a-zA-Z_:][a-zA-Z0-9_:]* and a label name [a-zA-Z_][a-zA-Z0-9_]* (not starting "__"); a bad
// one is a programming error and is dropped (the family, or the sample), never written, so that
// one bad name cannot make a scraper reject the whole page.
//
// Not thread-safe; a plain value built per scrape.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cumulus::metrics {

// The Content-Type of a page Render() writes.
inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

enum class MetricType { kGauge, kCounter };

using Labels = std::vector<std::pair<std::string, std::string>>;  // name, value; in order

class Exposition {
 public:
  // Starts a family; the samples added next (Add) belong to it until the next Family. A name
  // used before continues that family (its samples are written together).
  void Family(const std::string& name, const std::string& help, MetricType type);
  // A sample of the current family (none started, or the family was dropped: ignored).
  void Add(const Labels& labels, double value);
  void Add(double value) { Add({}, value); }

  // The page: families in the order they were started.
  std::string Render() const;
  // How many samples were kept (for tests and the scrape's own metric).
  size_t samples() const;

 private:
  struct Sample {
    Labels labels;
    double value;
  };
  struct Fam {
    std::string name, help;
    MetricType type;
    std::vector<Sample> samples;
  };
  std::vector<Fam> families_;
  long current_ = -1;  // index in families_, -1: none (or dropped)
};

bool ValidMetricName(std::string_view name);
bool ValidLabelName(std::string_view name);
// A label value inside its double quotes: \ -> \\, " -> \", newline -> \n.
std::string EscapeLabelValue(std::string_view value);
// HELP text: \ -> \\, newline -> \n.
std::string EscapeHelp(std::string_view help);
// A sample's value: integers without exponent or fraction ("42"), others with enough digits to
// read back the same double, and "NaN", "+Inf", "-Inf".
std::string FormatValue(double value);

}  // namespace cumulus::metrics
