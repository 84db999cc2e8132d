// `cumulus list actors`: every actor the nodes host or remember the end of, anonymous ones too. A
// state query of kind `actors` goes to every alive node, which filters what it holds before its
// cap (runtime/core/task_router_state.cc); the rows come back one per actor and node. Where two
// nodes report one actor (it restarted on another node) the live row is kept, else the latest end
// (ActorRowPreferred); under a filter on state, node, pid or restarts, a node's stale RESTARTING
// end is checked against the other nodes (DropStaleEnds). Names come from the head's named-actor
// records (one listing): a name filter becomes a filter on that actor's id, and a named actor that
// no node reports is shown as its head record says (PENDING before it has an address, ALIVE after)
// unless the query filters on what only the nodes know (state, node, pid, restarts).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "runtime/cli/commands.h"
#include "runtime/cli/head_connection.h"
#include "runtime/cli/local_state.h"
#include "runtime/cli/node_query.h"
#include "runtime/cli/state_table.h"
#include "runtime/core/messages.h"

namespace cumulus::cli {
namespace {

// Under a filter on what only the nodes know (state, node, pid, restarts), a node's row of an
// actor can be one that another node's newer life overrides: the node an actor left remembers
// that life's end as RESTARTING, while the actor is ALIVE on the node it restarted on, which the
// filter may leave out. Each such row (RESTARTING from an end record) is checked by asking every
// node for that actor alone; the row the nodes agree on replaces it, or it goes if that row does
// not pass the filters. One query per such row: at most a page's. A check no node answers keeps
// the row as its node gave it.
void DropStaleEnds(const std::vector<NodeRecord>& nodes, const std::string& token,
                   const StateQuerySpec& q, std::map<std::string, Row>* best, uint64_t* matched) {
  Filters filters;
  for (const StateFilter& f : q.filters) filters.emplace_back(f.key, f.value);
  for (auto it = best->begin(); it != best->end();) {
    Row& row = it->second;
    if (row["state"] != "RESTARTING" || row.count("ended_micros") == 0) {
      ++it;
      continue;
    }
    StateQuerySpec one;
    one.kind = "actors";
    one.filters = {{"actor", it->first}};
    one.limit = 1;
    auto answers = QueryNodes(nodes, token, one);
    if (!answers.ok()) {
      ++it;
      continue;
    }
    Row shown = row;
    for (auto& r : answers->rows) {
      if (r["actor"] == it->first && ActorRowPreferred(r, shown)) shown = std::move(r);
    }
    if (MatchesFilters(shown, filters)) {
      row = std::move(shown);
      ++it;
    } else {
      it = best->erase(it);
      if (*matched > 0) --*matched;
    }
  }
}

}  // namespace

int ListActors(const Flags& flags, ControlClient& head, size_t limit, const std::string& help) {
  std::vector<std::string> fields = *StateFields("actors");
  fields.push_back("name");
  auto filters = ParseFilters(flags, fields, KnownStates("actors"));
  if (!filters.ok()) return UsageError(filters.status().message(), help);
  auto token = ResolveToken(flags.Get("token-file"));
  if (!token.ok()) return Fail(token.status());
  auto named = NamedActorRecords(head);
  if (!named.ok()) return Fail(named.status());
  std::map<std::string, std::string> name_of;  // actor id -> name
  for (auto& [name, n] : *named) name_of[n.actor_id] = name;

  StateQuerySpec q;
  q.kind = "actors";
  q.after = flags.Get("after");
  if (Status c = CheckCursor("actor", &q.after); !c.ok()) return UsageError(c.message(), help);
  q.limit = std::min(limit, kMaxStateRows);
  bool nodes_only = false;  // a filter on what only the nodes know
  bool none = false;        // a name no actor has: no node need be asked
  for (auto& [k, v] : *filters) {
    if (k == "name") {
      auto it = named->find(v);
      if (it == named->end()) {
        none = true;
      } else {
        q.filters.push_back({"actor", it->second.actor_id});
      }
      continue;
    }
    q.filters.push_back({k, v});
    if (k == "state" || k == "node" || k == "pid" || k == "restarts") nodes_only = true;
  }

  std::map<std::string, Row> best;       // by actor id: the row shown, from the nodes
  std::map<std::string, Row> head_only;  // named actors no node reported
  uint64_t matched = 0;
  bool more = false;
  if (!none) {
    auto view = head.GetClusterStatus();
    if (!view.ok()) return Fail(view.status());
    auto answers = QueryNodes(view->nodes, *token, q);
    if (!answers.ok()) {
      if (answers.status().code() != StatusCode::kInvalidArgument) return Fail(answers.status());
      return UsageError(answers.status().message(), help);
    }
    if (!answers->unanswered.empty()) {
      std::fprintf(stderr, "cumulus: %s\n", answers->UnansweredLine().c_str());
    }
    matched = answers->matched;
    more = answers->more;
    for (auto& r : answers->rows) {
      std::string id = r["actor"];
      auto it = best.find(id);
      if (it == best.end()) {
        best.emplace(id, std::move(r));
        continue;
      }
      if (matched > 0) --matched;  // one actor, counted by two nodes
      if (ActorRowPreferred(r, it->second)) it->second = std::move(r);
    }
    if (nodes_only) DropStaleEnds(view->nodes, *token, q, &best, &matched);
    // A named actor that no node reports (not placed yet, or its node gone): its head record.
    // Merging it by id keeps the page right: a row a node left out for its cap sorts after that
    // node's `limit` rows, so after this page.
    if (!nodes_only) {
      for (auto& [name, n] : *named) {
        const std::string& id = n.actor_id;
        if (best.count(id) || (!q.after.empty() && id <= q.after)) continue;
        auto actor = ActorId::FromHex(id);
        Row row{{"actor", id},
                {"name", name},
                {"class", n.class_name},
                {"job", actor.ok() ? actor->Job().Hex() : ""},
                {"state", n.address.empty() ? "PENDING" : "ALIVE"},
                {"address", n.address},
                {"known_by", "head only (no node reports it)"}};
        if (MatchesFilters(row, *filters)) head_only.emplace(id, std::move(row));
      }
    }
  }
  std::vector<Row> rows;
  for (auto& [id, r] : head_only) best.emplace(id, std::move(r));
  for (auto& [id, r] : best) {
    if (rows.size() >= q.limit) break;
    auto it = name_of.find(id);
    r["name"] = it == name_of.end() ? "" : it->second;
    rows.push_back(std::move(r));
  }
  // A head-only row past this page may be one a node left out for its cap: counted only when no
  // node had more.
  size_t total = matched;
  for (auto& [id, r] : head_only) {
    if (!more || (!rows.empty() && id <= rows.back()["actor"])) ++total;
  }
  if (best.size() > rows.size()) more = true;
  if (more && total <= rows.size()) total = rows.size() + 1;  // (at least one more)
  PrintRows(rows, {"actor", "name", "class", "state", "job", "node", "pid", "restarts", "death"},
            flags.Has("json"), total, rows.empty() ? "" : rows.back()["actor"]);
  return 0;
}

}  // namespace cumulus::cli
