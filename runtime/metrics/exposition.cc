#include "runtime/metrics/exposition.h"

#include <cmath>
#include <cstdio>

namespace cumulus::metrics {

namespace {

bool NameChar(char c, bool first, bool colon) {
  bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}

}  // namespace

bool ValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!NameChar(name[i], i == 0, /*colon=*/true)) return false;
  }
  return true;
}

bool ValidLabelName(std::string_view name) {
  if (name.empty() || name.rfind("__", 0) == 0) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!NameChar(name[i], i == 0, /*colon=*/false)) return false;
  }
  return true;
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", value);
  } else {
    std::snprintf(buf, sizeof(buf), "%.17g", value);
  }
  return buf;
}

void Exposition::Family(const std::string& name, const std::string& help, MetricType type) {
  current_ = -1;
  if (!ValidMetricName(name)) return;
  for (size_t i = 0; i < families_.size(); ++i) {
    if (families_[i].name == name) {
      current_ = static_cast<long>(i);
      return;
    }
  }
  families_.push_back(Fam{name, help, type, {}});
  current_ = static_cast<long>(families_.size() - 1);
}

void Exposition::Add(const Labels& labels, double value) {
  if (current_ < 0) return;
  for (auto& [name, v] : labels) {
    if (!ValidLabelName(name)) return;
  }
  families_[static_cast<size_t>(current_)].samples.push_back(Sample{labels, value});
}

size_t Exposition::samples() const {
  size_t n = 0;
  for (auto& f : families_) n += f.samples.size();
  return n;
}

std::string Exposition::Render() const {
  std::string out;
  out.reserve(64 * (families_.size() + samples()));
  for (auto& f : families_) {
    out += "# HELP " + f.name + " " + EscapeHelp(f.help) + "\n";
    out += "# TYPE " + f.name + (f.type == MetricType::kCounter ? " counter\n" : " gauge\n");
    for (auto& s : f.samples) {
      out += f.name;
      if (!s.labels.empty()) {
        out += '{';
        for (size_t i = 0; i < s.labels.size(); ++i) {
          if (i) out += ',';
          out += s.labels[i].first + "=\"" + EscapeLabelValue(s.labels[i].second) + '"';
        }
        out += '}';
      }
      out += ' ' + FormatValue(s.value) + '\n';
    }
  }
  return out;
}

}  // namespace cumulus::metrics
