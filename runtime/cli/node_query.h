// Asking the nodes directly (`cumulus list tasks|objects`, `describe`, `top`): a state query to
// every alive node at once over TCP (a `caller` with the cluster token), each node filtering its
// live tables before it caps what it sends; the answers merged by id, with the nodes that did not
// answer in time named.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/cli/flags.h"
#include "runtime/head/control_client.h"
#include "runtime/node/state_rows.h"

namespace cumulus::cli {

struct NodeQueryOptions {
  Duration deadline = std::chrono::seconds(5);  // for every node's answer, from the start
};

struct NodeAnswers {
  std::vector<StateRowFields> rows;  // every node's rows, sorted by the kind's id
  bool more = false;                 // a node had more rows than the limit
  uint64_t matched = 0;              // rows that matched, over the nodes that answered
  size_t asked = 0;                  // alive nodes asked
  // The nodes that did not answer: short id -> why (refused, timed out, ...).
  std::map<std::string, std::string> unanswered;
  // "2 of 5 node(s) did not answer (3f2a1b4c: timed out; ...): their rows are missing", or "".
  std::string UnansweredLine() const;
};

// Sends `q` to every alive node of `view` in parallel with `token`; a node's refusal (a bad
// filter: InvalidArgument; the token: Unauthenticated) comes back as that error when no node
// answered.
Result<NodeAnswers> QueryNodes(const std::vector<NodeRecord>& view, const std::string& token,
                               const StateQuerySpec& q, const NodeQueryOptions& options = {});

// `cumulus list tasks|objects|workers`: --filter, --after and --limit sent to every alive node,
// the merged rows printed (`flags` parsed; `help` for usage errors). Returns the exit code.
int ListFromNodes(const std::string& what, const Flags& flags, ControlClient& head, size_t limit,
                  const std::string& help);
// `cumulus list actors` (list_actors.cc): as ListFromNodes, one row per actor across the nodes,
// with the head's named actors joined (filter `name`) and those no node reports added.
int ListActors(const Flags& flags, ControlClient& head, size_t limit, const std::string& help);

}  // namespace cumulus::cli
