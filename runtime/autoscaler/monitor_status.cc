#include "runtime/autoscaler/monitor_status.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cumulus/internal/json.h"

namespace cumulus {

namespace {

std::string Money(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4f", v);
  return buf;
}

std::string Limit(double v) { return std::isinf(v) ? "null" : Money(v); }

std::string Quote(const std::string& s) { return internal::JsonQuote(s); }

// A span of microseconds as "42s" / "3m" (below 0: 0s).
std::string Span(int64_t micros) {
  int64_t s = std::max<int64_t>(micros / 1000000, 0);
  return s < 120 ? std::to_string(s) + "s" : std::to_string(s / 60) + "m";
}
// From now to `micros` as "+42s" / "+3m"; from `micros` to now as "42s" / "3m".
std::string Until(int64_t micros, int64_t now) { return "+" + Span(micros - now); }
std::string Ago(int64_t micros, int64_t now) { return Span(now - micros); }

double PerHour(const autoscale::Decision& d) {
  double sum = 0;
  for (auto& t : d.types) sum += t.price_per_hour_now;
  return sum;
}

const TypeBooks* BooksOf(const MonitorBooks& books, const std::string& type) {
  auto it = books.types.find(type);
  return it == books.types.end() ? nullptr : &it->second;
}

}  // namespace

std::string StatusText(const MonitorStatusInput& in) {
  const autoscale::Decision& d = *in.decision;
  std::string out =
      "Autoscaler (cluster " + in.config->cluster_name + "): spent " +
      Money(in.books->TotalSpend()) +
      (std::isinf(in.config->budget.total) ? "" : " of " + Money(in.config->budget.total)) + ", " +
      Money(PerHour(d)) + "/h now" +
      (std::isinf(in.config->budget.per_hour)
           ? ""
           : " (budget " + Money(in.config->budget.per_hour) + "/h)") +
      "\n";
  char line[256];
  std::snprintf(line, sizeof(line), "  %-16s %7s %9s %4s %8s %6s %10s %8s  %s\n", "TYPE", "RUNNING",
                "LAUNCHING", "IDLE", "DRAINING", "FAILED", "COST", "PER HOUR", "BACKOFF");
  out += line;
  for (auto& t : d.types) {
    const TypeBooks* b = BooksOf(*in.books, t.type);
    std::string backoff = "-";
    if (t.backoff_until > in.now_micros) {
      backoff = "until " + Until(t.backoff_until, in.now_micros) +
                (b ? " (" + b->history.last_error + ")" : "");
    } else if (b && b->history.failures_in_a_row > 0) {
      // Over, and no node of the type has come up since: the error stays in sight.
      backoff = "- (over; last failed " + Ago(b->history.last_failure, in.now_micros) +
                " ago: " + b->history.last_error + ")";
    }
    // The backoff (with the provider's error, of any length) goes after the fixed-width columns,
    // not through `line`, whose size would cut it and the row's newline.
    std::snprintf(line, sizeof(line), "  %-16s %7d %9d %4d %8d %6d %10s %8s  ", t.type.c_str(),
                  t.running, t.launching + t.launches, t.idle, t.draining,
                  b ? b->failed_launches : 0, Money(b ? b->spend : 0).c_str(),
                  Money(t.price_per_hour_now).c_str());
    // Registered machines whose nodes are not alive now are billed (PER HOUR) but not RUNNING.
    if (t.unreachable > 0) {
      backoff += "; " + std::to_string(t.unreachable) +
                 " not alive now (recovering, or dead within the grace)";
    }
    out += line + backoff + "\n";
  }
  if (d.verdicts.empty()) {
    out += "  Pending demand: none\n";
  } else {
    out += "  Pending demand and why (no) node is launched for it:\n";
    for (auto& v : d.verdicts) {
      out += "    " + std::to_string(v.count) + " x " + v.id + ": " +
             autoscale::ReasonName(v.reason) + (v.detail.empty() ? "" : " (" + v.detail + ")") +
             "\n";
    }
  }
  return out;
}

std::string StatusJson(const MonitorStatusInput& in) {
  const autoscale::Decision& d = *in.decision;
  std::string out = "{\"updated_micros\":" + std::to_string(in.now_micros) +
                    ",\"cluster\":" + Quote(in.config->cluster_name) +
                    ",\"spend\":" + Money(in.books->TotalSpend()) +
                    ",\"per_hour\":" + Money(PerHour(d)) +
                    ",\"budget_per_hour\":" + Limit(in.config->budget.per_hour) +
                    ",\"budget_total\":" + Limit(in.config->budget.total) + ",\"types\":[";
  bool first = true;
  for (auto& t : d.types) {
    const TypeBooks* b = BooksOf(*in.books, t.type);
    out += std::string(first ? "" : ",") + "{\"type\":" + Quote(t.type) +
           ",\"running\":" + std::to_string(t.running) +
           ",\"launching\":" + std::to_string(t.launching + t.launches) +
           ",\"idle\":" + std::to_string(t.idle) + ",\"draining\":" + std::to_string(t.draining) +
           ",\"unreachable\":" + std::to_string(t.unreachable) +
           ",\"failed_launches\":" + std::to_string(b ? b->failed_launches : 0) +
           ",\"cost\":" + Money(b ? b->spend : 0) + ",\"per_hour\":" + Money(t.price_per_hour_now) +
           ",\"backoff_until_micros\":" +
           std::to_string(t.backoff_until > in.now_micros ? t.backoff_until : 0) +
           ",\"last_error\":" + Quote(b ? b->history.last_error : "") + "}";
    first = false;
  }
  out += "],\"demand\":[";
  first = true;
  for (auto& v : d.verdicts) {
    out += std::string(first ? "" : ",") + "{\"id\":" + Quote(v.id) +
           ",\"count\":" + std::to_string(v.count) +
           ",\"reason\":" + Quote(autoscale::ReasonName(v.reason)) +
           ",\"detail\":" + Quote(v.detail) + "}";
    first = false;
  }
  return out + "]}";
}

}  // namespace cumulus
