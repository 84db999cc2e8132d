// cumulus list jobs|placement-groups (and `cumulus jobs`): rows read from the head's records
// (every record, then filtered, then capped: --filter, --after, --limit) and shown as a table or
// --json. `list tasks|objects|workers` ask the nodes themselves (list_node_state.cc), and so does
// `list actors`, joining the head's names (list_actors.cc).
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
#include "runtime/cli/node_query.h"
#include "runtime/cli/state_table.h"
#include "runtime/core/messages.h"
#include "runtime/head/control_client.h"

namespace cumulus::cli {

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

int ListStateCommand(const std::string& what, const std::vector<std::string>& args) {
  Flags flags({"address", "token-file", "filter", "limit", "after"}, {"json"});
  Status st = flags.Parse(args);
  std::string help = what == "jobs" ? "cumulus jobs --help" : "cumulus list --help";
  if (!st.ok()) return UsageError(st.message(), help);
  auto limit = Limit(flags);
  if (!limit.ok()) return UsageError(limit.status().message(), help);
  auto head = ConnectHead(flags);
  if (!head.ok()) return Fail(head.status());
  std::vector<Row> rows;
  std::vector<std::string> columns;
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
    return ListActors(flags, **head, *limit, help);
  } else if (what == "tasks" || what == "objects" || what == "workers") {
    return ListFromNodes(what, flags, **head, *limit, help);
  } else {
    return UsageError("cannot list '" + what + "'", help);
  }
  std::vector<std::string> fields = columns;
  if (what == "jobs") fields.insert(fields.end(), {"submitted", "end_micros"});
  auto filters = ParseFilters(flags, fields, KnownStates(what));
  if (!filters.ok()) return UsageError(filters.status().message(), help);
  // Every record was read: the filters and the cursor apply to all of them, then the cap.
  const std::string key = columns.front() == "name" ? "name" : columns.front();
  size_t total = 0;
  // Placement groups come in id order (the head's keys), jobs newest first.
  std::string after = flags.Get("after");
  if (Status c = CheckCursor(key, &after); !c.ok()) {
    return UsageError(c.message(), help);
  }
  auto selected = Select(rows, *filters, key, after, *limit,
                         /*in_key_order=*/what == "placement-groups", &total);
  if (!selected.ok()) return UsageError(selected.status().message(), help);
  PrintRows(*selected, columns, flags.Has("json"), total,
            selected->empty() ? "" : selected->back()[key]);
  return 0;
}

}  // namespace cumulus::cli
