// `cumulus list tasks|objects|workers`: the filters, cursor and limit go to every alive node,
// which applies them to its live tables before any cap; the answers are merged by id and the
// global limit applied here. Nodes that do not answer in time are named on stderr (one line);
// the rows of the others are shown.
#include <cstdio>

#include "runtime/cli/commands.h"
#include "runtime/cli/head_connection.h"
#include "runtime/cli/local_state.h"
#include "runtime/cli/node_query.h"
#include "runtime/cli/state_table.h"

namespace cumulus::cli {

int ListFromNodes(const std::string& what, const Flags& flags, ControlClient& head, size_t limit,
                  const std::string& help) {
  const std::vector<std::string>* fields = StateFields(what);
  if (!fields) return UsageError("cannot list '" + what + "'", help);
  auto filters = ParseFilters(flags, *fields, KnownStates(what));
  if (!filters.ok()) return UsageError(filters.status().message(), help);
  StateQuerySpec q;
  q.kind = what;
  for (auto& [k, v] : *filters) q.filters.push_back({k, v});
  // Rows come in id order: a cursor whose row has gone continues after it in that order.
  q.after = flags.Get("after");
  if (Status c = CheckCursor(fields->front(), &q.after); !c.ok()) {
    return UsageError(c.message(), help);
  }
  q.limit = std::min(limit, kMaxStateRows);
  auto token = ResolveToken(flags.Get("token-file"));
  if (!token.ok()) return Fail(token.status());
  auto view = head.GetClusterStatus();
  if (!view.ok()) return Fail(view.status());
  auto answers = QueryNodes(view->nodes, *token, q);
  if (!answers.ok()) {
    if (answers.status().code() != StatusCode::kInvalidArgument) return Fail(answers.status());
    return UsageError(answers.status().message(), help);
  }
  std::vector<Row>& rows = answers->rows;
  size_t total = answers->matched;
  if (rows.size() > q.limit) rows.resize(q.limit);
  if (answers->more && total <= rows.size()) total = rows.size() + 1;  // (at least one more)
  if (!answers->unanswered.empty()) {
    std::fprintf(stderr, "cumulus: %s\n", answers->UnansweredLine().c_str());
  }
  std::vector<std::string> columns;
  if (what == "tasks") {
    columns = {"task", "job", "function", "state", "node", "pid", "attempt"};
  } else if (what == "objects") {
    columns = {"object", "job", "size", "where", "node", "pins"};
  } else {
    columns = {"worker", "job", "pid", "state", "node", "tasks", "function", "actor"};
  }
  PrintRows(rows, columns, flags.Has("json"), total,
            rows.empty() ? "" : rows.back()[fields->front()]);
  return 0;
}

}  // namespace cumulus::cli
