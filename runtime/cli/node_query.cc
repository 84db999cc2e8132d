#include "runtime/cli/node_query.h"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "runtime/core/caller_connection.h"
#include "runtime/core/messages.h"
#include "runtime/net/frame.h"
#include "runtime/net/tcp.h"

namespace cumulus::cli {

namespace {

struct OneAnswer {
  Status status;
  std::vector<StateRowFields> rows;
  bool more = false;
  uint64_t matched = 0;
};

// One node: connect, hello as a caller, the query, its reply; all before `deadline`.
OneAnswer AskNode(const NodeRecord& node, const std::string& token, const StateQuerySpec& q,
                  TimePoint deadline) {
  OneAnswer out;
  auto address = ParseHostPort(node.core_address);
  if (!address.ok()) {
    out.status = address.status();
    return out;
  }
  auto ask = [&]() -> Status {
    CUMULUS_ASSIGN_OR_RETURN(auto node_conn, CallerConnection::Open(*address, token, deadline));
    capnp::MallocMessageBuilder query;
    EncodeStateQuery(q, query.initRoot<proto::CoreMessage>().initStateQuery());
    CUMULUS_RETURN_IF_ERROR(node_conn.Send(query, deadline));
    CUMULUS_ASSIGN_OR_RETURN(auto words, node_conn.Next(deadline));
    capnp::FlatArrayMessageReader reader(words, CoreReaderOptions(words.size() * 8));
    auto msg = reader.getRoot<proto::CoreMessage>();
    if (!msg.isStateReply()) return Status::Internal("the node answered something else");
    auto reply = msg.getStateReply();
    if (reply.getCode() != 0) {
      return Status(static_cast<StatusCode>(reply.getCode()), reply.getMessage());
    }
    out.rows = DecodeStateRows(reply);
    out.more = reply.getMore();
    out.matched = reply.getMatched();
    return Status();
  };
  // A malformed reply makes Cap'n Proto throw; on this thread an escaped exception would end the
  // process (the shell with it): it is this node's error instead.
  Status result;
  try {
    result = ask();
  } catch (const kj::Exception& e) {
    out.rows.clear();
    result = Status::Internal(std::string("its answer is malformed: ") + e.getDescription().cStr());
  }
  out.status = result;
  return out;
}

}  // namespace

std::string NodeAnswers::UnansweredLine() const {
  if (unanswered.empty()) return "";
  std::string line = std::to_string(unanswered.size()) + " of " + std::to_string(asked) +
                     " node(s) did not answer (";
  bool first = true;
  for (auto& [node, why] : unanswered) {
    line += (first ? "" : "; ") + node + ": " + why;
    first = false;
  }
  return line + "): their rows are missing";
}

Result<NodeAnswers> QueryNodes(const std::vector<NodeRecord>& view, const std::string& token,
                               const StateQuerySpec& q, const NodeQueryOptions& options) {
  CUMULUS_RETURN_IF_ERROR(CheckStateQuery(q));
  std::vector<const NodeRecord*> alive;
  for (auto& n : view) {
    if (n.state == NodeState::kAlive && !n.core_address.empty()) alive.push_back(&n);
  }
  TimePoint deadline = SystemClock::Get().Now() + options.deadline;
  std::vector<OneAnswer> answers(alive.size());
  std::vector<std::thread> threads;
  threads.reserve(alive.size());
  for (size_t i = 0; i < alive.size(); ++i) {
    threads.emplace_back([&, i] { answers[i] = AskNode(*alive[i], token, q, deadline); });
  }
  for (auto& t : threads) t.join();
  NodeAnswers out;
  out.asked = alive.size();
  // A node's own refusal of the query or of the token (every node would say the same): one line
  // when no node answered.
  Status refused;
  for (size_t i = 0; i < alive.size(); ++i) {
    OneAnswer& a = answers[i];
    if (!a.status.ok()) {
      if (a.status.code() == StatusCode::kInvalidArgument ||
          a.status.code() == StatusCode::kUnauthenticated) {
        refused = a.status;
      }
      out.unanswered[alive[i]->id.Hex().substr(0, 8)] = a.status.message();
      continue;
    }
    out.more = out.more || a.more;
    out.matched += a.matched;
    for (auto& r : a.rows) out.rows.push_back(std::move(r));
  }
  if (!refused.ok() && out.unanswered.size() == alive.size()) return refused;
  const std::vector<std::string>* fields = StateFields(q.kind);
  const std::string key = fields->front();
  std::stable_sort(out.rows.begin(), out.rows.end(),
                   [&](const StateRowFields& a, const StateRowFields& b) {
                     auto x = a.find(key), y = b.find(key);
                     return (x == a.end() ? "" : x->second) < (y == b.end() ? "" : y->second);
                   });
  return out;
}

}  // namespace cumulus::cli
