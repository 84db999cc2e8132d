#include "runtime/tune/svg_text.h"

#include <cmath>
#include <cstdio>

namespace cumulus::tune {

std::string XmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    // The length of a well-formed UTF-8 sequence starting here (0: not one).
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n > 1) {
      if (i + n > s.size() || (c == 0xC0 || c == 0xC1 || c > 0xF4)) n = 0;
      for (size_t k = 1; n != 0 && k < n; ++k)
        if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) n = 0;
    }
    if (n == 0) {
      out += '?';
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(s, i, n);
      i += n;
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f ? '?' : static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

std::string Tenths(int64_t t) {
  std::string out = t < 0 ? "-" : "";
  uint64_t a = t < 0 ? static_cast<uint64_t>(-t) : static_cast<uint64_t>(t);
  out += std::to_string(a / 10);
  if (a % 10 != 0) out += "." + std::to_string(a % 10);
  return out;
}

std::string Px(double v) { return Tenths(static_cast<int64_t>(std::llround(v * 10))); }

std::string ShortNumber(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

double TextWidth(const std::string& s, double font_size) {
  size_t cols = 0;
  for (unsigned char c : s) cols += (c & 0xC0) != 0x80;
  return static_cast<double>(cols) * font_size * 0.6;
}

std::vector<std::string> WrapConfig(const Config& config, size_t max_chars) {
  std::vector<std::string> lines;
  std::string cur;
  size_t cur_cols = 0;
  for (const auto& [k, v] : config.values()) {
    std::string item = k + "=" + FormatValue(v);
    size_t cols = 0, cut = item.size();
    for (size_t i = 0; i < item.size(); ++i) {
      if ((static_cast<unsigned char>(item[i]) & 0xC0) == 0x80) continue;
      if (++cols == max_chars) cut = i;  // the byte where the max_chars-th character starts
    }
    if (cols > max_chars) item = item.substr(0, cut) + "~", cols = max_chars;
    if (!cur.empty() && cur_cols + 2 + cols > max_chars) {
      lines.push_back(cur + ",");
      cur.clear();
      cur_cols = 0;
    }
    if (!cur.empty()) cur += ", ", cur_cols += 2;
    cur += item;
    cur_cols += cols;
  }
  if (!cur.empty()) lines.push_back(cur);
  return lines;
}

}  // namespace cumulus::tune
