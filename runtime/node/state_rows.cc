#include "runtime/node/state_rows.h"

#include <algorithm>
#include <limits>

#include "runtime/base/numeric.h"

namespace cumulus {

const std::vector<std::string>* StateFields(const std::string& kind) {
  static const auto* fields = new std::map<std::string, std::vector<std::string>>{
      {"tasks", {"task", "job", "function", "state", "node", "pid", "attempt", "worker"}},
      {"objects", {"object", "job", "size", "where", "node", "pins"}},
      {"workers", {"worker", "job", "pid", "actor", "state", "node", "tasks", "function"}},
      {"node", {"node"}},
      // Each actor process that ended on the node (runtime/node/actor_ends.h): "end" is
      // ACTOR/LIFE (the life zero-padded, so that an actor's ends sort in order).
      {"actor_ends", {"end", "actor", "job", "node", "pid", "life", "cause", "class"}},
      // Each actor the node hosts now or remembers the end of (one row per actor: its latest life
      // here): state PENDING (its constructor has not answered yet, or it waits here to be
      // placed), ALIVE, EXITING (its process is going), RESTARTING or DEAD (ActorEndState).
      {"actors", {"actor", "job", "class", "state", "node", "pid", "restarts"}},
  };
  auto it = fields->find(kind);
  return it == fields->end() ? nullptr : &it->second;
}

bool IsIdField(const std::string& key) {
  return key == "task" || key == "object" || key == "job" || key == "node" || key == "worker" ||
         key == "id" || key == "actor" || key == "end";
}

Status CheckStateQuery(const StateQuerySpec& q) {
  const std::vector<std::string>* fields = StateFields(q.kind);
  if (!fields) return Status::InvalidArgument("cannot query a node for '" + q.kind + "'");
  for (const StateFilter& f : q.filters) {
    if (std::find(fields->begin(), fields->end(), f.key) != fields->end()) continue;
    std::string names;
    for (auto& n : *fields) names += (names.empty() ? "" : ", ") + n;
    return Status::InvalidArgument("cannot filter " + q.kind + " on '" + f.key +
                                   "' (fields: " + names + ")");
  }
  return Status();
}

RowSelector::RowSelector(const StateQuerySpec& q) : q_(q) {
  q_.limit = std::min(std::max<size_t>(q_.limit, 1), kMaxStateRows);
  const std::vector<std::string>* fields = StateFields(q.kind);
  id_key_ = fields ? fields->front() : "id";
}

void RowSelector::Offer(const std::string& id,
                        const std::function<std::string(const std::string&)>& field,
                        const std::function<StateRowFields()>& build) {
  if (!q_.after.empty() && id <= q_.after) return;
  for (const StateFilter& f : q_.filters) {
    std::string v = f.key == id_key_ ? id : field(f.key);
    bool ok = IsIdField(f.key) ? v.compare(0, f.value.size(), f.value) == 0 : v == f.value;
    if (!ok) return;
  }
  ++matched_;
  if (kept_.size() >= q_.limit) {
    if (id >= kept_.rbegin()->first) return;
    kept_.erase(std::prev(kept_.end()));
  }
  kept_.emplace(id, build());
}

std::vector<StateRowFields> RowSelector::Take(bool* more, uint64_t* matched) {
  *more = matched_ > kept_.size();
  *matched = matched_;
  std::vector<StateRowFields> out;
  out.reserve(kept_.size());
  for (auto& [id, row] : kept_) out.push_back(std::move(row));
  kept_.clear();
  return out;
}

bool EndedLater(const StateRowFields& row, const StateRowFields& than) {
  auto ended = [](const StateRowFields& r) {
    auto it = r.find("state");
    return it != r.end() && (it->second == "FINISHED" || it->second == "FAILED");
  };
  auto micros = [](const StateRowFields& r) -> int64_t {
    auto it = r.find("ended_micros");
    if (it == r.end()) return 0;
    auto n = ParseInteger("ended_micros", it->second, {0, std::numeric_limits<int64_t>::max()});
    return n.ok() ? *n : 0;
  };
  if (!ended(row)) return false;
  return !ended(than) || micros(row) > micros(than);
}

bool ActorRowPreferred(const StateRowFields& row, const StateRowFields& than) {
  auto get = [](const StateRowFields& r, const char* key) {
    auto it = r.find(key);
    return it == r.end() ? std::string() : it->second;
  };
  auto number = [&](const StateRowFields& r, const char* key) -> int64_t {
    auto n = ParseInteger(key, get(r, key), {-1, std::numeric_limits<int64_t>::max()});
    return n.ok() ? *n : 0;
  };
  auto live = [&](const StateRowFields& r) {
    std::string s = get(r, "state");
    return s == "ALIVE" || s == "PENDING" || s == "EXITING";
  };
  if (live(row) != live(than)) return live(row);
  if (number(row, "restarts") != number(than, "restarts")) {
    return number(row, "restarts") > number(than, "restarts");
  }
  if (live(row)) return get(row, "state") == "ALIVE" && get(than, "state") != "ALIVE";
  return number(row, "ended_micros") > number(than, "ended_micros");
}

void EncodeStateQuery(const StateQuerySpec& q, proto::StateQuery::Builder out) {
  out.setKind(q.kind);
  auto filters = out.initFilters(static_cast<unsigned>(q.filters.size()));
  for (unsigned i = 0; i < q.filters.size(); ++i) {
    filters[i].setKey(q.filters[i].key);
    filters[i].setValue(q.filters[i].value);
  }
  out.setAfter(q.after);
  out.setLimit(static_cast<uint32_t>(std::min(q.limit, kMaxStateRows)));
  out.setDetail(q.detail);
}

StateQuerySpec DecodeStateQuery(proto::StateQuery::Reader in) {
  StateQuerySpec q;
  q.kind = in.getKind();
  for (auto f : in.getFilters()) q.filters.push_back({f.getKey(), f.getValue()});
  q.after = in.getAfter();
  q.limit = in.getLimit();
  q.detail = in.getDetail();
  return q;
}

void EncodeStateRows(const std::vector<StateRowFields>& rows, proto::StateReply::Builder out) {
  auto list = out.initRows(static_cast<unsigned>(rows.size()));
  for (unsigned i = 0; i < rows.size(); ++i) {
    auto fields = list[i].initFields(static_cast<unsigned>(rows[i].size()));
    unsigned j = 0;
    for (auto& [k, v] : rows[i]) {
      fields[j].setKey(k);
      fields[j].setValue(v);
      ++j;
    }
  }
}

std::vector<StateRowFields> DecodeStateRows(proto::StateReply::Reader in) {
  std::vector<StateRowFields> rows;
  for (auto r : in.getRows()) {
    StateRowFields row;
    for (auto f : r.getFields()) row[f.getKey()] = f.getValue();
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace cumulus
