// State queries (`cumulus list|describe|top` -> a node, runtime/proto/core.capnp StateQuery): what
// may be asked, how a row is matched, and RowSelector, which keeps the rows to answer with while
// the node walks its live tables. Filters apply to every row the node holds, before the cap, so
// `--filter state=RUNNING` finds a running task among any number of queued ones.
//
// Pure and single-threaded: the node's event loop (or a test) drives it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cumulus/status.h"
#include "runtime/proto/core.capnp.h"

namespace cumulus {

using StateRowFields = std::map<std::string, std::string>;

struct StateFilter {
  std::string key, value;
};

struct StateQuerySpec {
  std::string kind;  // "tasks", "objects", "workers", "node", "actor_ends", "actors"
  std::vector<StateFilter> filters;
  std::string after;   // only rows whose id sorts after this
  size_t limit = 100;  // capped at kMaxStateRows
  bool detail = false;
};

// A state caller's frames (queries) may be this large.
constexpr uint32_t kMaxStateQueryFrameBytes = 1u << 20;
// The most rows a node answers one query with (a frame stays far below kMaxCoreFrameBytes).
constexpr size_t kMaxStateRows = 10000;

// The fields a row of `kind` has (and can be filtered on), the id first; nullptr for an unknown
// kind.
const std::vector<std::string>* StateFields(const std::string& kind);
// Ids (task, object, job, node, worker, actor, end, id) match a filter by prefix; other fields
// exactly.
bool IsIdField(const std::string& key);
// InvalidArgument, one line, for an unknown kind or a filter on a field `kind` does not have
// ("cannot filter tasks on 'colour' (fields: task, job, ...)").
Status CheckStateQuery(const StateQuerySpec& q);

// Keeps the `limit` matching rows with the smallest ids after the cursor: O(limit) rows. Every
// offer counts: callers offer each id once.
class RowSelector {
 public:
  explicit RowSelector(const StateQuerySpec& q);
  // Offers the row whose id is `id`: `field(key)` gives one field (for the filters, read lazily),
  // `build()` the whole row, called only for a row that is kept for now. Each id is offered once:
  // the caller drops older records of an id (O(limit) memory here, whatever the table's size).
  void Offer(const std::string& id, const std::function<std::string(const std::string&)>& field,
             const std::function<StateRowFields()>& build);
  // The rows kept, by id; `more`: rows beyond the limit matched too.
  std::vector<StateRowFields> Take(bool* more, uint64_t* matched);

 private:
  StateQuerySpec q_;
  std::string id_key_;
  std::map<std::string, StateRowFields> kept_;  // by id; at most q_.limit
  uint64_t matched_ = 0;
};

// Between two rows of one task (from the nodes that answer for it): true when `row` ended
// (FINISHED or FAILED) and `than` did not, or both ended and `row` later (by ended_micros, a
// detail field; a row without a readable one counts as ending at 0).
bool EndedLater(const StateRowFields& row, const StateRowFields& than);

// Between two rows of one actor (kind "actors", from the nodes that answer for it — it restarted
// on another node): true when `row` should be shown rather than `than`: a live one (PENDING,
// ALIVE, EXITING) over an ended one, then the later life (restarts), then ALIVE over the other
// live states, then the later end (ended_micros).
bool ActorRowPreferred(const StateRowFields& row, const StateRowFields& than);

// The query and the reply as core messages.
void EncodeStateQuery(const StateQuerySpec& q, proto::StateQuery::Builder out);
StateQuerySpec DecodeStateQuery(proto::StateQuery::Reader in);
void EncodeStateRows(const std::vector<StateRowFields>& rows, proto::StateReply::Builder out);
std::vector<StateRowFields> DecodeStateRows(proto::StateReply::Reader in);

}  // namespace cumulus
