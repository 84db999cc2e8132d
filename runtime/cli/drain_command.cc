// cumulus drain NODE: asks the head to mark a node DRAINING (no new work; it leaves once it runs
// and holds nothing); a launched node is also drained in the autoscaler's books, which terminate
// its instance once it left.
#include <chrono>
#include <cstdio>

#include "runtime/autoscaler/monitor_books.h"
#include "runtime/base/numeric.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/head_connection.h"
#include "runtime/cli/interrupt.h"
#include "runtime/cli/local_state.h"
#include "runtime/cli/state_table.h"

namespace cumulus::cli {

namespace {

constexpr const char* kDrainHelp = R"(Usage:
  cumulus drain NODE [--wait [--timeout S]] [--address HOST:PORT] [--token-file FILE]

Drains NODE (a node id or a prefix of it; any alive node, on-prem or launched by the autoscaler).
The head marks it DRAINING, which every node learns with its next heartbeat:
  - no new task, actor or placement-group bundle is placed on it; work that only it could run
    waits as pending demand (an autoscaler may launch a node for it) instead of failing;
  - work submitted to it is forwarded to other nodes (what waits for room there keeps it up
    meanwhile); what runs or is queued on its workers, and work in placement-group bundles it
    holds, finishes there;
  - once it runs nothing (no tasks, actors, busy workers, bundles or connected drivers), it
    hands the objects its store holds (spilled ones too) to another alive node that is not
    draining: that node pulls each, their owners read and free them there from then on, and
    nothing is lost. Then it leaves by itself: 'cumulus status' shows it STOPPED. If no node
    can take them (none is alive and not draining, or its store is full), it keeps them and
    stays DRAINING, and 'cumulus status' says why ("waiting for 2 objects: no other alive node
    that is not draining can take them"); it tries again once one can.
A node that also runs the head stops taking work but does not leave (nor hand its objects on).
The autoscaler terminates a launched node's instance once the node no longer waits for anything
(or is gone). The mark is kept by the head (it survives a restart).
  --wait       wait until the node left; exit 0 when it did, 1 if it died or time ran out
  --timeout S  how long --wait waits (default 600, 1 to 86400)
An empty or non-hex NODE, or an unknown or ambiguous one, is one line on stderr and exit status 2.
)";

}  // namespace

int DrainCommand(const std::vector<std::string>& args) {
  for (auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kDrainHelp, stdout);
      return 0;
    }
  }
  Flags flags({"address", "token-file", "timeout"}, {"wait"});
  std::vector<std::string> nodes;
  Status st = flags.Parse(args, &nodes);
  if (!st.ok()) return UsageError(st.message(), "cumulus drain --help");
  if (nodes.size() != 1) {
    return UsageError(nodes.empty()
                          ? "drain needs a node id: cumulus drain NODE"
                          : "drain takes one node id, got " + std::to_string(nodes.size()),
                      "cumulus drain --help");
  }
  const std::string& node = nodes[0];
  auto timeout_s = ParseInteger("--timeout", flags.Get("timeout", "600"), {1, 86400, "seconds"});
  if (!timeout_s.ok()) return UsageError(timeout_s.status().message(), "cumulus drain --help");
  // An empty id would start every node's id: `cumulus drain "$NODE"` with NODE unset.
  auto prefix = IdPrefix("node", node);
  if (!prefix.ok()) return UsageError(prefix.status().message(), "cumulus drain --help");
  auto head = ConnectHead(flags);
  if (!head.ok()) return Fail(head.status());
  auto view = (*head)->GetClusterStatus();
  if (!view.ok()) return Fail(view.status());
  const NodeRecord* found = nullptr;
  for (auto& n : view->nodes) {
    if (n.state != NodeState::kAlive || n.id.Hex().rfind(*prefix, 0) != 0) continue;
    if (found) {
      std::fprintf(stderr,
                   "cumulus: '%s' names more than one alive node; give more of its id "
                   "('cumulus status' lists them)\n",
                   node.c_str());
      return 2;
    }
    found = &n;
  }
  if (!found) {
    std::fprintf(stderr,
                 "cumulus: no alive node's id starts with '%s' ('cumulus status' lists them)\n",
                 node.c_str());
    return 2;
  }
  NodeId id = found->id;
  Status marked = (*head)->DrainNode(id, "cumulus drain");
  if (!marked.ok()) return Fail(marked);
  // A node the autoscaler launched is drained in its books too (it terminates it once it left).
  auto type = found->labels.find(kNodeTypeLabel);
  if (type != found->labels.end())
    (void)(*head)->KvPut(kAutoscalerNamespace, kDrainPrefix + id.Hex(), "1");
  std::printf(
      "Draining node %s: it takes no new work, finishes what it runs, hands its objects to "
      "another node, then leaves.\n",
      id.Hex().c_str());
  if (!flags.Has("wait")) return 0;

  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(*timeout_s);
  auto started = std::chrono::steady_clock::now();
  std::string last_note;
  while (true) {
    auto now_view = (*head)->GetClusterStatus();
    if (!now_view.ok()) return Fail(now_view.status());
    const NodeRecord* n = nullptr;
    for (auto& r : now_view->nodes) {
      if (r.id == id) n = &r;
    }
    if (!n) return Fail(Status::NotFound("the head no longer lists node " + id.Hex()));
    if (n->state == NodeState::kDead) {
      double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (n->left) {
        std::printf("Node %s left the cluster (%s) after %.1f s: STOPPED.\n", id.Hex().c_str(),
                    n->death_reason.c_str(), secs);
        return 0;
      }
      return Fail(Status::Unavailable("node " + id.Hex() + " died while draining (" +
                                      n->death_reason + ")"));
    }
    if (n->drain_note != last_note && !n->drain_note.empty()) {
      last_note = n->drain_note;
      std::printf("  %s\n", last_note.c_str());
      std::fflush(stdout);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Fail(Status::TimedOut("node " + id.Hex() + " did not leave within " +
                                   std::to_string(*timeout_s) + " s (" +
                                   (last_note.empty() ? "draining" : last_note) +
                                   "); it stays DRAINING: wait again, or 'cumulus stop' it"));
    }
    // Polling the head's view; Ctrl-C in the shell returns to the prompt (the node drains on).
    if (!SleepUnlessInterrupted(std::chrono::milliseconds(200))) {
      std::printf("Stopped waiting; node %s goes on draining ('cumulus status' shows it).\n",
                  id.Hex().c_str());
      return kInterruptedExit;
    }
  }
}

}  // namespace cumulus::cli
