// What the state commands (`cumulus list`, `jobs`, `describe`, `top`) share: a row as named text
// fields, --filter and --limit read and checked before anything is asked, paging (--after), and
// printing rows as a table or --json.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cumulus/status.h"
#include "runtime/cli/flags.h"

namespace cumulus {
class ControlClient;
}

namespace cumulus::cli {

using Row = std::map<std::string, std::string>;
using Filters = std::vector<std::pair<std::string, std::string>>;

// The states a listing's rows can be in (a --filter on another state is an error, not an empty
// listing); empty for a listing whose rows have no state.
const std::vector<std::string>& KnownStates(const std::string& what);
// --limit (default 100, at most 1e9).
Result<size_t> Limit(const Flags& flags);
// Every --filter KEY=VALUE, checked against `fields` (and `state` against `states`, upper-cased):
// InvalidArgument, one line, naming the bad key or value and what would do.
Result<Filters> ParseFilters(const Flags& flags, const std::vector<std::string>& fields,
                             const std::vector<std::string>& states);
// An id given on the command line, or the start of one (ids are shown shortened), lower-cased;
// InvalidArgument, one line, when it is empty (it would name every `what`) or not hex digits.
Result<std::string> IdPrefix(const std::string& what, const std::string& text);
// Ids (job, node, id, task, object, worker, actor) match by prefix, as they are shown shortened.
bool MatchesFilters(const Row& row, const Filters& filters);
// A --after cursor: "" (from the first row) or an id of the listed kind `what` (hex digits, as
// the "next page: --after ID" line gives; upper case is taken as lower case and `*after` is
// lowered); InvalidArgument, one line, otherwise.
Status CheckCursor(const std::string& what, std::string* after);
// Keeps the rows that match every filter and come after the row whose `key` is `after` ("":
// from the first), at most `limit` of them, in their order; `*total`: how many matched after it.
// A cursor that names no row (its row has gone since that page): when the rows are in order of
// `key` (`in_key_order`), the rows after it in that order; else InvalidArgument, one line.
Result<std::vector<Row>> Select(const std::vector<Row>& rows, const Filters& filters,
                                const std::string& key, const std::string& after, size_t limit,
                                bool in_key_order, size_t* total);
// The rows as a table of `columns` (ids shortened), or all their fields as --json. Below the
// table, when rows are left out: "(N of M shown; next page: --after ID)".
void PrintRows(const std::vector<Row>& rows, const std::vector<std::string>& columns, bool json,
               size_t total, const std::string& next_after = "");
// Every job the head knows (submitted ones and drivers that connected), newest first.
Result<std::vector<Row>> JobRows(ControlClient& head);
// "2026-11-24 17:28:36" from microseconds since the epoch ("-" for 0).
std::string When(int64_t micros);
// "1.5 GiB", "12 MiB", "300 B".
std::string Bytes(uint64_t n);

}  // namespace cumulus::cli
