#include "runtime/cli/state_table.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>

#include "cumulus/internal/json.h"
#include "runtime/base/numeric.h"
#include "runtime/cli/commands.h"

namespace cumulus::cli {

std::string JsonString(const std::string& s) { return internal::JsonQuote(s); }

namespace {

bool IsId(const std::string& k) {
  return k == "job" || k == "node" || k == "id" || k == "task" || k == "object" || k == "worker" ||
         k == "actor";
}

// The most rows --limit may ask for (more is the same as all of them).
constexpr int64_t kMaxLimit = 1'000'000'000;

}  // namespace

const std::vector<std::string>& KnownStates(const std::string& what) {
  static const auto* states = new std::map<std::string, std::vector<std::string>>{
      {"jobs", {"PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "FINISHED"}},
      {"actors", {"PENDING", "ALIVE", "EXITING", "RESTARTING", "DEAD"}},
      {"tasks", {"QUEUED", "RETRY_WAIT", "FORWARDED", "RUNNING", "FINISHED", "FAILED"}},
      {"workers", {"IDLE", "BUSY", "BLOCKED", "ACTOR", "EXITING"}},
  };
  static const auto* none = new std::vector<std::string>();
  auto it = states->find(what);
  return it == states->end() ? *none : it->second;
}

Result<std::string> IdPrefix(const std::string& what, const std::string& text) {
  if (text.empty()) {
    return Status::InvalidArgument("an empty " + what + " id names no " + what +
                                   "; give its id or the start of it");
  }
  std::string lower;
  for (char c : text) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) {
      return Status::InvalidArgument("'" + text + "' is not a " + what +
                                     " id (hex digits, or the start of them)");
    }
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return lower;
}

Result<size_t> Limit(const Flags& flags) {
  if (!flags.Has("limit")) return size_t{100};
  CUMULUS_ASSIGN_OR_RETURN(int64_t n, ParseInteger("--limit", flags.Get("limit"), {1, kMaxLimit}));
  return static_cast<size_t>(n);
}

Result<Filters> ParseFilters(const Flags& flags, const std::vector<std::string>& fields,
                             const std::vector<std::string>& states) {
  Filters filters;
  for (const std::string& f : flags.GetAll("filter")) {
    size_t eq = f.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--filter wants KEY=VALUE, got '" + f + "'");
    }
    std::string key = f.substr(0, eq);
    if (std::find(fields.begin(), fields.end(), key) == fields.end()) {
      std::string names;
      for (auto& n : fields) names += (names.empty() ? "" : ", ") + n;
      return Status::InvalidArgument("cannot filter on '" + key + "' (fields: " + names + ")");
    }
    std::string value = f.substr(eq + 1);
    if (key == "state" && !states.empty()) {
      std::string upper = value;
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (std::find(states.begin(), states.end(), upper) == states.end()) {
        std::string names;
        for (auto& n : states) names += (names.empty() ? "" : ", ") + n;
        return Status::InvalidArgument("no row can be in state '" + value + "' (states: " + names +
                                       ")");
      }
      value = upper;
    }
    filters.emplace_back(key, value);
  }
  return filters;
}

bool MatchesFilters(const Row& r, const Filters& filters) {
  for (auto& [k, v] : filters) {
    auto it = r.find(k);
    if (it == r.end()) return false;
    if (IsId(k) ? it->second.rfind(v, 0) != 0 : it->second != v) return false;
  }
  return true;
}

Status CheckCursor(const std::string& what, std::string* after) {
  std::string lower = *after;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find_first_not_of("0123456789abcdef") == std::string::npos) {
    *after = lower;  // ids are written in lower case; ABCD is abcd, as describe and drain take it
    return Status();
  }
  return Status::InvalidArgument("--after '" + *after + "' is not a " + what +
                                 " id (give the id the 'next page: --after ID' line names)");
}

Result<std::vector<Row>> Select(const std::vector<Row>& rows, const Filters& filters,
                                const std::string& key, const std::string& after, size_t limit,
                                bool in_key_order, size_t* total) {
  size_t from = 0;
  if (!after.empty()) {
    from = rows.size() + 1;  // not found yet
    for (size_t i = 0; i < rows.size(); ++i) {
      auto it = rows[i].find(key);
      if (it != rows[i].end() && it->second == after) {
        from = i + 1;
        break;
      }
    }
    if (from > rows.size() && in_key_order) {
      // Its row has gone: continue with the first row whose key sorts after it.
      from = 0;
      while (from < rows.size() && rows[from].count(key) && rows[from].at(key) <= after) ++from;
    } else if (from > rows.size()) {
      return Status::InvalidArgument("--after '" + after + "' names no " + key +
                                     " in this listing (it may have gone since that page; list "
                                     "again without --after)");
    }
  }
  std::vector<Row> out;
  *total = 0;
  for (size_t i = from; i < rows.size(); ++i) {
    if (!MatchesFilters(rows[i], filters)) continue;
    ++*total;
    if (out.size() < limit) out.push_back(rows[i]);
  }
  return out;
}

std::string When(int64_t micros) {
  if (micros <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(micros / 1000000);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return buf;
}

std::string Bytes(uint64_t n) {
  char buf[32];
  if (n >= (1ull << 30)) {
    std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(n) / (1ull << 30));
  } else if (n >= (1ull << 20)) {
    std::snprintf(buf, sizeof(buf), "%.0f MiB", static_cast<double>(n) / (1ull << 20));
  } else if (n >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.0f KiB", static_cast<double>(n) / 1024);
  } else {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(n));
  }
  return buf;
}

void PrintRows(const std::vector<Row>& rows, const std::vector<std::string>& columns, bool json,
               size_t total, const std::string& next_after) {
  if (json) {
    std::string out = "[";
    for (size_t i = 0; i < rows.size(); ++i) {
      out += i ? ",{" : "{";
      bool first = true;
      for (auto& [k, v] : rows[i]) {
        out += (first ? "" : ",") + JsonString(k) + ":" + JsonString(v);
        first = false;
      }
      out += "}";
    }
    std::printf("%s]\n", out.c_str());
    return;
  }
  std::vector<size_t> width(columns.size());
  auto cell = [](const Row& r, const std::string& c) {
    auto it = r.find(c);
    std::string v = it == r.end() ? "" : it->second;
    if (IsId(c) && v.size() > 12) v = v.substr(0, 12);
    if (c == "start_micros" || c == "end_micros") v = When(std::stoll(v.empty() ? "0" : v));
    return v.empty() ? std::string("-") : v;
  };
  for (size_t i = 0; i < columns.size(); ++i) width[i] = columns[i].size();
  for (auto& r : rows) {
    for (size_t i = 0; i < columns.size(); ++i)
      width[i] = std::max(width[i], std::min<size_t>(cell(r, columns[i]).size(), 60));
  }
  auto header = [](std::string c) {
    if (c == "start_micros") c = "started";
    if (c == "end_micros") c = "ended";
    for (auto& ch : c) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return c;
  };
  for (size_t i = 0; i < columns.size(); ++i)
    std::printf("%-*s  ", static_cast<int>(width[i]), header(columns[i]).c_str());
  std::printf("\n");
  for (auto& r : rows) {
    for (size_t i = 0; i < columns.size(); ++i) {
      std::string v = cell(r, columns[i]);
      if (v.size() > 60) v = v.substr(0, 57) + "...";
      std::printf("%-*s  ", static_cast<int>(width[i]), v.c_str());
    }
    std::printf("\n");
  }
  if (total > rows.size()) {
    std::printf("(%zu of %zu shown; next page: --after %s)\n", rows.size(), total,
                next_after.c_str());
  }
}

}  // namespace cumulus::cli
