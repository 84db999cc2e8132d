// cumulus list jobs|actors|tasks|objects|placement-groups (and `cumulus jobs`): rows read from the
// head's records, filtered (--filter, --limit) and shown as a table or --json.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/base/numeric.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/head_connection.h"
#include "runtime/core/messages.h"
#include "runtime/head/control_client.h"

namespace cumulus::cli {

namespace {

using Row = std::map<std::string, std::string>;

std::string When(int64_t micros) {
  if (micros <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(micros / 1000000);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return buf;
}

std::string Seconds(int64_t micros) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1fs", static_cast<double>(micros) / 1e6);
  return buf;
}

Result<std::vector<Row>> JobRows(ControlClient& head) {
  std::vector<Row> rows;
  std::set<std::string> seen;
  CUMULUS_ASSIGN_OR_RETURN(ClusterView view, head.GetClusterStatus());
  std::set<std::string> dead;
  for (auto& n : view.nodes) {
    if (n.state == NodeState::kDead) dead.insert(n.id.Hex());
  }
  Status bad;
  CUMULUS_RETURN_IF_ERROR(
      ForEachKv(head, kSubmissionsNamespace, "", [&](const std::string& k, const std::string& v) {
        auto r = DecodeRecord<SubmissionRecord>(v);
        if (!r.ok()) return;
        Row row;
        row["job"] = k;
        row["name"] = r->name;
        row["state"] = r->state;
        row["node"] = r->node;
        row["message"] = r->message;
        if (!IsTerminalJobState(r->state) && dead.count(r->node)) {
          row["state"] = "FAILED";
          row["message"] = "its node " + r->node.substr(0, 8) + " died";
        }
        std::string entry;
        for (auto& a : r->entrypoint) entry += (entry.empty() ? "" : " ") + a;
        row["entrypoint"] = entry;
        row["submitted"] = "true";
        row["start_micros"] = std::to_string(r->start_micros ? r->start_micros : r->submit_micros);
        row["end_micros"] = std::to_string(r->end_micros);
        rows.push_back(row);
        seen.insert(k);
      }));
  std::map<std::string, int64_t> ends;
  CUMULUS_RETURN_IF_ERROR(
      ForEachKv(head, kJobEndsNamespace, "", [&](const std::string& k, const std::string& v) {
        auto e = DecodeRecord<JobEnd>(v);
        if (e.ok()) ends[k] = e->end_micros;
      }));
  CUMULUS_RETURN_IF_ERROR(
      ForEachKv(head, kJobsNamespace, "", [&](const std::string& k, const std::string& v) {
        if (seen.count(k)) return;
        auto r = DecodeRecord<JobRecord>(v);
        if (!r.ok()) return;
        Row row;
        row["job"] = k;
        row["name"] = "";
        row["node"] = r->driver_node;
        bool ended = ends.count(k) > 0;
        row["state"] = ended ? "FINISHED" : dead.count(r->driver_node) ? "FAILED" : "RUNNING";
        row["message"] = !ended && dead.count(r->driver_node) ? "its driver's node died" : "";
        std::string entry;
        for (auto& a : r->argv) entry += (entry.empty() ? "" : " ") + a;
        row["entrypoint"] = entry;
        row["submitted"] = "false";
        row["start_micros"] = std::to_string(r->start_micros);
        row["end_micros"] = std::to_string(ended ? ends[k] : 0);
        rows.push_back(row);
      }));
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::stoll(a.at("start_micros")) > std::stoll(b.at("start_micros"));
  });
  return rows;
}

// The states a listing's rows can be in (a --filter on another state is an error, not an empty
// listing).
const std::map<std::string, std::vector<std::string>>& KnownStates() {
  static const auto* states = new std::map<std::string, std::vector<std::string>>{
      {"jobs", {"PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "FINISHED"}},
      {"actors", {"PENDING", "ALIVE"}},
      {"tasks", {"QUEUED", "RETRY_WAIT", "FORWARDED", "RUNNING"}},
  };
  return *states;
}

// The most rows --limit may ask for (more is the same as all of them).
constexpr int64_t kMaxLimit = 1'000'000'000;

// --limit (default 100), checked before anything is asked of the head.
Result<size_t> Limit(const Flags& flags) {
  if (!flags.Has("limit")) return size_t{100};
  CUMULUS_ASSIGN_OR_RETURN(int64_t n, ParseInteger("--limit", flags.Get("limit"), {1, kMaxLimit}));
  return static_cast<size_t>(n);
}

// Keeps the rows that match every --filter, at most `limit` of them.
Result<std::vector<Row>> Select(std::vector<Row> rows, const Flags& flags, size_t limit,
                                const std::vector<std::string>& fields, size_t* total,
                                const std::vector<std::string>& states = {}) {
  std::vector<std::pair<std::string, std::string>> filters;
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
  std::vector<Row> out;
  *total = 0;
  for (auto& r : rows) {
    bool keep = true;
    for (auto& [k, v] : filters) {
      auto it = r.find(k);
      if (it == r.end()) {
        keep = false;
        break;
      }
      // Ids match by prefix, as they are shown shortened.
      bool id = k == "job" || k == "node" || k == "id" || k == "task" || k == "object";
      keep = keep && (id ? it->second.rfind(v, 0) == 0 : it->second == v);
    }
    if (!keep) continue;
    ++*total;
    if (out.size() < limit) out.push_back(r);
  }
  return out;
}

void PrintRows(const std::vector<Row>& rows, const std::vector<std::string>& columns, bool json,
               size_t total) {
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
    if ((c == "job" || c == "node" || c == "id" || c == "task" || c == "object") && v.size() > 12) {
      v = v.substr(0, 12);
    }
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
    std::printf("(%zu of %zu shown: use --limit or --filter)\n", rows.size(), total);
  }
}

}  // namespace

int ListStateCommand(const std::string& what, const std::vector<std::string>& args) {
  Flags flags({"address", "token-file", "filter", "limit"}, {"json"});
  Status st = flags.Parse(args);
  std::string help = what == "jobs" ? "cumulus jobs --help" : "cumulus list --help";
  if (!st.ok()) return UsageError(st.message(), help);
  auto limit = Limit(flags);
  if (!limit.ok()) return UsageError(limit.status().message(), help);
  auto head = ConnectHead(flags);
  if (!head.ok()) return Fail(head.status());
  std::vector<Row> rows;
  std::vector<std::string> columns;
  std::string note;  // what the rows of tasks and objects are, for a person
  if (what == "jobs") {
    auto r = JobRows(**head);
    if (!r.ok()) return Fail(r.status());
    rows = std::move(*r);
    columns = {"job", "name", "state", "node", "start_micros", "entrypoint", "message"};
  } else if (what == "placement-groups") {
    st = ForEachKv(**head, kGroupsNamespace, "", [&](const std::string& k, const std::string& v) {
      auto g = DecodeRecord<GroupRecord>(v);
      if (!g.ok()) return;
      std::string nodes;
      for (auto& n : g->nodes) nodes += (nodes.empty() ? "" : ",") + n.substr(0, 8);
      rows.push_back(Row{{"id", k},
                         {"job", g->job},
                         {"bundles", std::to_string(g->nodes.size())},
                         {"nodes", nodes}});
    });
    if (!st.ok()) return Fail(st);
    columns = {"id", "job", "bundles", "nodes"};
  } else if (what == "actors") {
    std::map<std::string, std::string> addresses;
    std::vector<std::pair<std::string, std::string>> records;
    st = ForEachKv(**head, kActorsNamespace, "", [&](const std::string& k, const std::string& v) {
      size_t slash = k.rfind("/address");
      if (slash != std::string::npos && slash + 8 == k.size()) {
        addresses[k.substr(0, slash)] = v;
      } else {
        records.emplace_back(k, v);
      }
    });
    if (!st.ok()) return Fail(st);
    for (auto& [name, v] : records) {
      auto a = DecodeRecord<ActorNameRecord>(v);
      Row row{{"name", name}, {"address", addresses.count(name) ? addresses[name] : ""}};
      if (a.ok()) {
        row["id"] = a->actor_id;
        row["class"] = a->class_name;
        auto id = ActorId::FromHex(a->actor_id);
        row["job"] = id.ok() ? id->Job().Hex() : "";
      }
      row["state"] = row["address"].empty() ? "PENDING" : "ALIVE";
      rows.push_back(row);
    }
    columns = {"name", "id", "class", "job", "state", "address"};
  } else if (what == "tasks" || what == "objects") {
    // Each alive node reports what it holds every 2 s (at most kMaxReportedRows of each).
    auto view = (*head)->GetClusterStatus();
    if (!view.ok()) return Fail(view.status());
    std::set<std::string> alive;
    for (auto& n : view->nodes) {
      if (n.state == NodeState::kAlive) alive.insert(n.id.Hex());
    }
    uint64_t reported = 0, held = 0;
    int64_t oldest = 0;
    st = ForEachKv(**head, kNodeStateNamespace, "",
                   [&](const std::string& node, const std::string& v) {
                     if (!alive.count(node)) return;
                     auto r = DecodeRecord<NodeStateReport>(v);
                     if (!r.ok()) return;
                     oldest = oldest == 0 ? r->micros : std::min(oldest, r->micros);
                     if (what == "tasks") {
                       held += r->tasks_total;
                       for (auto& t : r->tasks) {
                         rows.push_back(Row{{"task", t.task},
                                            {"job", t.job},
                                            {"function", t.function},
                                            {"state", t.state},
                                            {"node", node},
                                            {"pid", t.pid > 0 ? std::to_string(t.pid) : ""},
                                            {"attempt", std::to_string(t.attempt + 1)}});
                         ++reported;
                       }
                     } else {
                       held += r->objects_total;
                       for (auto& o : r->objects) {
                         rows.push_back(Row{{"object", o.object},
                                            {"job", o.job},
                                            {"size", std::to_string(o.size)},
                                            {"where", o.where},
                                            {"node", node},
                                            {"pins", std::to_string(o.pins)}});
                         ++reported;
                       }
                     }
                   });
    if (!st.ok()) return Fail(st);
    columns =
        what == "tasks"
            ? std::vector<std::string>{"task", "job", "function", "state", "node", "pid", "attempt"}
            : std::vector<std::string>{"object", "job", "size", "where", "node", "pins"};
    if (!flags.Has("json")) {  // printed above the rows, once the filters are known good
      char line[256];
      std::snprintf(line, sizeof(line),
                    "(%s as %zu alive node(s) reported them, the oldest report %.1f s ago",
                    what.c_str(), alive.size(),
                    oldest ? static_cast<double>(NowMicros() - oldest) / 1e6 : 0.0);
      note = line;
      if (held > reported) {
        std::snprintf(line, sizeof(line), "; %llu held, %llu reported: a node reports at most %zu",
                      static_cast<unsigned long long>(held),
                      static_cast<unsigned long long>(reported), kMaxReportedRows);
        note += line;
      }
      note += ")\n";
    }
  } else {
    return UsageError("cannot list '" + what + "'", help);
  }
  size_t total = 0;
  std::vector<std::string> fields = columns;
  if (what == "jobs") fields.insert(fields.end(), {"submitted", "end_micros"});
  auto known = KnownStates().find(what);
  auto selected = Select(std::move(rows), flags, *limit, fields, &total,
                         known == KnownStates().end() ? std::vector<std::string>{} : known->second);
  if (!selected.ok()) return UsageError(selected.status().message(), help);
  std::fputs(note.c_str(), stdout);
  PrintRows(*selected, columns, flags.Has("json"), total);
  return 0;
}

}  // namespace cumulus::cli
