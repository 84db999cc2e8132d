// `cumulus describe node|actor|task|job|object ID [--json]`: one thing in detail, found by id
// prefix (an ambiguous prefix lists the candidates). What the nodes hold is asked of them (state
// queries with detail); jobs and nodes come from the head's records; a pending task's autoscaler
// verdict from the monitor's status (KV autoscaler/status.json).
#include <algorithm>
#include <cstdio>
#include <set>

#include "runtime/autoscaler/monitor_books.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/head_connection.h"
#include "runtime/cli/local_state.h"
#include "runtime/cli/node_query.h"
#include "runtime/cli/state_table.h"

namespace cumulus::cli {

namespace {

constexpr const char* kDescribeHelp = R"(Usage:
  cumulus describe node|actor|task|job|object ID [--address HOST:PORT] [--token-file FILE]
                   [--json]

One thing in detail; ID may be a prefix (an ambiguous one lists the candidates); an actor may
also be given by its name.
  task    its state and node; for a pending task why it waits: 'infeasible' naming the resource
          or label no node offers, or 'waiting' for resources in use, and what the autoscaler
          does for it; each earlier attempt with its node, worker pid and cause; for an ended
          one FINISHED or FAILED (with its error) and when
  object  where its copies are (memory/disk, per node), its owner (job, task) and its pins
  node    state, address, labels, resources total/available, store use, running tasks, actors
  actor   its node, worker pid, class, job, state (ALIVE, RESTARTING, DEAD); each restart with
          why its process before ended (its worker crashed: killed by signal 9 / exited with
          status N, killed by the node's memory monitor, killed by user with cumulus kill, its
          node died); for a dead actor how it died (killed by user, out of restarts, owner died,
          killed by its owner)
  job     state, driver node, entrypoint, and a summary of its tasks on the nodes
Tasks are known while a node holds them (queued, forwarded, running, waiting for a retry), and
after they end for a while: each node keeps its last 10000 ended tasks (CUMULUS_FINISHED_TASKS
in the node's environment sets how many).
)";

int Usage(const std::string& message) { return UsageError(message, "cumulus describe --help"); }

std::string Get(const Row& r, const std::string& key) {
  auto it = r.find(key);
  return it == r.end() || it->second.empty() ? "-" : it->second;
}

void PrintJson(const std::vector<Row>& rows) { PrintRows(rows, {}, /*json=*/true, rows.size()); }

// The distinct values of `key` among `rows`; an error line unless exactly one.
Status One(const std::vector<Row>& rows, const std::string& key, const std::string& what,
           const std::string& prefix, std::string* found) {
  std::set<std::string> ids;
  for (auto& r : rows) ids.insert(Get(r, key));
  if (ids.empty()) {
    return Status::NotFound("no " + what + " whose id starts with '" + prefix + "'");
  }
  if (ids.size() > 1) {
    std::string list;
    size_t shown = 0;
    for (auto& id : ids) {
      if (shown++ == 5) break;
      list += (list.empty() ? "" : ", ") + id;
    }
    return Status::InvalidArgument("'" + prefix + "' is ambiguous: " + std::to_string(ids.size()) +
                                   " " + what + "s start with it (" + list +
                                   (ids.size() > 5 ? ", ..." : "") + "); give more of the id");
  }
  *found = *ids.begin();
  return Status();
}

// What the autoscaler says of the demand `node`'s pending task of shape `demand` is part of,
// from its status (one line), or "" when no autoscaler runs. The demand item is named for the
// task's purpose when it has one (runtime/autoscaler/snapshot_builder.h), else for its node.
std::string AutoscalerVerdict(ControlClient& head, const std::string& node,
                              const std::string& demand, const std::string& purpose) {
  auto json = head.KvGet(kAutoscalerNamespace, kStatusJsonKey);
  if (!json.ok()) return "";
  std::string who = purpose.empty() ? "node " + node.substr(0, 8) : purpose;
  std::string want = "\"id\":" + JsonString(who + " {" + demand + "}");
  want.pop_back();  // (the id may go on with " on SELECTOR")
  size_t at = json->find(want);
  if (at == std::string::npos) return "no verdict yet (its demand is not in the last pass)";
  auto value = [&](const std::string& key) {
    size_t k = json->find("\"" + key + "\":\"", at);
    if (k == std::string::npos) return std::string();
    k += key.size() + 4;
    return json->substr(k, json->find('"', k) - k);
  };
  std::string detail = value("detail");
  return value("reason") + (detail.empty() ? "" : " (" + detail + ")");
}

int DescribeTask(ControlClient& head, const std::vector<NodeRecord>& nodes,
                 const std::string& token, const std::string& prefix, bool json) {
  StateQuerySpec q{"tasks", {{"task", prefix}}, "", 50, true};
  auto answers = QueryNodes(nodes, token, q);
  if (!answers.ok()) return Fail(answers.status());
  if (!answers->unanswered.empty()) {
    std::fprintf(stderr, "cumulus: %s\n", answers->UnansweredLine().c_str());
  }
  std::string id;
  Status st = One(answers->rows, "task", "task", prefix, &id);
  if (!st.ok()) return Fail(st);
  // The node that runs (or holds) it, not the one that only forwarded it: a live row (queued,
  // running, waiting to retry) wins over ended records, e.g. a task re-run to rebuild a lost
  // object, or retried elsewhere; of records only, the latest end.
  Row main, via;
  auto live = [](Row& r) { return r["state"] != "FINISHED" && r["state"] != "FAILED"; };
  for (auto& r : answers->rows) {
    if (r["task"] != id) continue;
    if (r["state"] == "FORWARDED") {
      via = r;
    } else if (main.empty() || (live(r) && !live(main)) ||
               (!live(r) && !live(main) && EndedLater(r, main))) {
      main = r;
    }
  }
  if (main.empty()) main = via;
  std::string pending = Get(main, "pending");
  std::string verdict;
  if (main["state"] == "QUEUED" && pending.rfind("placing", 0) != 0) {
    verdict = AutoscalerVerdict(head, main["node"], main["demand"], main["purpose"]);
    main["autoscaler"] = verdict;
  }
  if (json) {
    PrintJson({main});
    return 0;
  }
  std::printf("task %s  %s of job %s\n", id.c_str(), Get(main, "function").c_str(),
              Get(main, "job").c_str());
  std::printf("  state:      %s on node %s", Get(main, "state").c_str(),
              Get(main, "node").substr(0, 8).c_str());
  if (main["pid"] != "") std::printf(" (worker pid %s)", main["pid"].c_str());
  if (!via.empty() && via["node"] != main["node"]) {
    std::printf(", forwarded by node %s", Get(via, "node").substr(0, 8).c_str());
  }
  std::printf("\n  needs:      %s%s\n", Get(main, "demand").c_str(),
              main["labels"].empty() ? "" : (" on nodes with " + main["labels"]).c_str());
  if (!main["purpose"].empty()) std::printf("  for:        %s\n", main["purpose"].c_str());
  bool ended = main["state"] == "FINISHED" || main["state"] == "FAILED";
  if (ended) {
    std::printf("  ended:      %s\n", When(std::atoll(Get(main, "ended_micros").c_str())).c_str());
  }
  if (!main["error"].empty()) std::printf("  error:      %s\n", main["error"].c_str());
  if (main["state"] == "QUEUED" || main["state"] == "RETRY_WAIT") {
    std::printf("  pending:    %s\n", pending.c_str());
    if (!verdict.empty()) {
      std::printf("  autoscaler: %s\n", verdict.c_str());
    } else if (main["state"] == "QUEUED") {
      std::printf("  autoscaler: none running (no 'cumulus up' for this cluster)\n");
    }
  }
  int earlier = std::atoi(Get(main, "attempts").c_str());
  std::printf("  attempt:    %s (retries allowed: %s)\n", Get(main, "attempt").c_str(),
              Get(main, "max_retries").c_str());
  for (int i = 1; i <= earlier; ++i) {
    std::string n = "attempt." + std::to_string(i) + ".";
    std::printf("    %d. node %s, worker pid %s: %s (ended %s)\n", i,
                Get(main, n + "node").substr(0, 8).c_str(), Get(main, n + "pid").c_str(),
                Get(main, n + "cause").c_str(),
                When(std::atoll(Get(main, n + "ended_micros").c_str())).c_str());
  }
  if (earlier > 0) {
    std::printf("    %d. node %s, worker pid %s: %s%s\n", earlier + 1,
                Get(main, "node").substr(0, 8).c_str(), Get(main, "pid").c_str(),
                Get(main, "state").c_str(), ended ? "" : " now");
  }
  return 0;
}

int DescribeObject(const std::vector<NodeRecord>& nodes, const std::string& token,
                   const std::string& prefix, bool json) {
  StateQuerySpec q{"objects", {{"object", prefix}}, "", 50, true};
  auto answers = QueryNodes(nodes, token, q);
  if (!answers.ok()) return Fail(answers.status());
  if (!answers->unanswered.empty()) {
    std::fprintf(stderr, "cumulus: %s\n", answers->UnansweredLine().c_str());
  }
  std::string id;
  Status st = One(answers->rows, "object", "object", prefix, &id);
  if (!st.ok()) return Fail(st);
  std::vector<Row> copies;
  for (auto& r : answers->rows) {
    if (r["object"] == id) copies.push_back(r);
  }
  if (json) {
    PrintJson(copies);
    return 0;
  }
  std::printf("object %s  %s bytes\n", id.c_str(), Get(copies[0], "size").c_str());
  std::printf("  owner:   job %s (made by task %s)\n", Get(copies[0], "job").c_str(),
              Get(copies[0], "task").c_str());
  std::printf("  copies:  %zu\n", copies.size());
  for (auto& c : copies) {
    std::printf("    node %s: %s, pinned by %s reader(s) now\n",
                Get(c, "node").substr(0, 8).c_str(), Get(c, "where").c_str(),
                Get(c, "pins").c_str());
  }
  return 0;
}

int DescribeNode(const std::vector<NodeRecord>& nodes, const std::string& token,
                 const std::string& prefix, bool json) {
  std::vector<Row> candidates;
  for (auto& n : nodes) {
    if (n.id.Hex().rfind(prefix, 0) == 0) candidates.push_back({{"node", n.id.Hex()}});
  }
  std::string id;
  Status st = One(candidates, "node", "node", prefix, &id);
  if (!st.ok()) return Fail(st);
  const NodeRecord* n = nullptr;
  for (auto& r : nodes) {
    if (r.id.Hex() == id) n = &r;
  }
  Row row{{"node", id},
          {"state", NodeStateName(*n)},
          {"address", n->address},
          {"hostname", n->hostname},
          {"labels", LabelsToString(n->labels)},
          {"total", n->total.ToString()},
          {"available", n->available.ToString()},
          {"death_reason", n->death_reason}};
  std::vector<Row> running, actors;
  if (n->state == NodeState::kAlive) {
    std::vector<NodeRecord> one = {*n};
    auto self = QueryNodes(one, token, StateQuerySpec{"node", {}, "", 1, false});
    if (self.ok() && !self->rows.empty()) {
      for (auto& [k, v] : self->rows[0]) row[k] = v;
    } else {
      row["answer"] = self.ok() ? self->UnansweredLine() : self.status().message();
    }
    auto t = QueryNodes(one, token, StateQuerySpec{"tasks", {{"state", "RUNNING"}}, "", 20, false});
    if (t.ok()) running = t->rows;
    auto a = QueryNodes(one, token, StateQuerySpec{"workers", {{"state", "ACTOR"}}, "", 20, false});
    if (a.ok()) actors = a->rows;
  }
  if (json) {
    PrintJson({row});
    return 0;
  }
  std::printf("node %s  %s\n", id.c_str(), row["state"].c_str());
  std::printf("  address:   %s (%s)\n", Get(row, "address").c_str(), Get(row, "hostname").c_str());
  if (n->state != NodeState::kAlive)
    std::printf("  why:       %s\n", Get(row, "death_reason").c_str());
  std::printf("  labels:    %s\n", Get(row, "labels").c_str());
  std::printf("  total:     %s\n  available: %s\n", Get(row, "total").c_str(),
              Get(row, "available").c_str());
  if (row.count("store_used")) {
    std::printf("  store:     %s of %s in memory, %s spilled (%s objects)\n",
                Bytes(std::stoull(row["store_used"])).c_str(),
                Bytes(std::stoull(row["store_capacity"])).c_str(),
                Bytes(std::stoull(row["spilled"])).c_str(), Get(row, "store_objects").c_str());
    std::printf("  tasks:     %s running, %s queued, %s held\n", Get(row, "running_tasks").c_str(),
                Get(row, "queued_tasks").c_str(), Get(row, "tasks").c_str());
  } else if (row.count("answer")) {
    std::printf("  (the node did not answer: %s)\n", row["answer"].c_str());
  }
  for (auto& t : running) {
    std::printf("    task %s %s (pid %s)\n", Get(t, "task").substr(0, 16).c_str(),
                Get(t, "function").c_str(), Get(t, "pid").c_str());
  }
  std::printf("  actors:    %zu\n", actors.size());
  for (auto& a : actors) {
    std::printf("    actor %s %s (pid %s)\n", Get(a, "actor").substr(0, 16).c_str(),
                Get(a, "function").c_str(), Get(a, "pid").c_str());
  }
  return 0;
}

// The actor's life `life`'s end among `ends` (rows of kind actor_ends), or nullptr.
const Row* EndOf(const std::vector<Row>& ends, int life) {
  for (auto& e : ends) {
    if (std::atoi(Get(e, "life").c_str()) == life) return &e;
  }
  return nullptr;
}

// "worker pid P", or "worker pid unknown": no process yet, or an end its owner recorded because
// the node it ran on died.
std::string WorkerPid(const Row& r) {
  std::string pid = Get(r, "pid");
  return "worker pid " + (pid == "-" ? std::string("unknown") : pid);
}

std::string EndLine(const Row& e) {
  return "node " + Get(e, "node").substr(0, 8) + ", " + WorkerPid(e) + ": " + Get(e, "cause") +
         " (ended " + When(std::atoll(Get(e, "ended_micros").c_str())) + ")";
}

// An actor: its process now (asked of the nodes' workers), each restart with why the process
// before it ended, and for an actor not alive how it died — from the ends of its processes the
// nodes keep (runtime/node/actor_ends.h) and, where the node it ran on is gone, the reason its
// owner gave when it restarted it.
int DescribeActor(const std::vector<NodeRecord>& nodes, const std::string& token,
                  const std::string& prefix, bool json) {
  auto answers =
      QueryNodes(nodes, token, StateQuerySpec{"workers", {{"actor", prefix}}, "", 50, true});
  if (!answers.ok()) return Fail(answers.status());
  auto ended =
      QueryNodes(nodes, token, StateQuerySpec{"actor_ends", {{"actor", prefix}}, "", 1000, true});
  if (!ended.ok()) return Fail(ended.status());
  std::vector<Row> rows;
  for (auto& r : answers->rows) {
    if (!r["actor"].empty()) rows.push_back(r);
  }
  std::vector<Row> candidates = rows;
  candidates.insert(candidates.end(), ended->rows.begin(), ended->rows.end());
  std::string id;
  Status st = One(candidates, "actor", "actor", prefix, &id);
  if (!st.ok()) {
    if (!answers->unanswered.empty()) {
      std::fprintf(stderr, "cumulus: %s\n", answers->UnansweredLine().c_str());
    }
    return Fail(st.code() == StatusCode::kNotFound
                    ? Status::NotFound(st.message() +
                                       " alive on any node, and no node recalls its end (it is "
                                       "not created yet, or the node it ran on is gone)")
                    : st);
  }
  Row alive;  // its newest process still there (an exiting one only if no other)
  for (auto& r : rows) {
    if (r["actor"] != id) continue;
    bool better = alive.empty() || (alive["state"] == "EXITING" && r["state"] != "EXITING") ||
                  std::atoi(Get(r, "life").c_str()) > std::atoi(Get(alive, "life").c_str());
    if (better) alive = r;
  }
  std::vector<Row> ends;
  for (auto& r : ended->rows) {
    if (r["actor"] == id) ends.push_back(r);
  }
  std::sort(ends.begin(), ends.end(), [](const Row& a, const Row& b) {
    return std::atoi(Get(a, "life").c_str()) < std::atoi(Get(b, "life").c_str());
  });
  // Its lives so far: the one running now, or the last that ended.
  int life = !alive.empty() ? std::atoi(Get(alive, "life").c_str())
                            : std::atoi(Get(ends.back(), "life").c_str());
  const Row& last = alive.empty() ? ends.back() : alive;
  int max_restarts = std::atoi(Get(last, "max_restarts").c_str());
  Row out{{"actor", id},
          {"class", alive.empty() ? Get(last, "class") : Get(alive, "function")},
          {"job", Get(last, "job")},
          {"restarts", std::to_string(life)},
          {"max_restarts", std::to_string(max_restarts)}};
  // Each restart: why the process before it ended (its node's record, else its owner's word).
  for (int k = 1; k <= life; ++k) {
    std::string n = "restart." + std::to_string(k) + ".";
    if (const Row* e = EndOf(ends, k - 1)) {
      out[n + "cause"] = Get(*e, "cause");
      out[n + "node"] = Get(*e, "node");
      out[n + "pid"] = Get(*e, "pid");
      out[n + "ended_micros"] = Get(*e, "ended_micros");
      continue;
    }
    const Row* next = k == life && !alive.empty() ? &alive : EndOf(ends, k);
    std::string owner = next ? Get(*next, "restart_cause") : "-";
    out[n + "cause"] = owner != "-" ? "as its owner saw it: " + owner
                                    : "not recorded (the node it ran on is gone)";
  }
  if (!alive.empty()) {
    out["state"] = Get(alive, "state") == "EXITING" ? "EXITING" : "ALIVE";
    for (const char* k : {"node", "pid", "lease", "gpus", "tasks", "address"}) out[k] = alive[k];
  } else {
    const Row& e = ends.back();
    bool restarts_left = max_restarts < 0 || life < max_restarts;
    std::string cause = Get(e, "cause");
    out["node"] = Get(e, "node");
    out["pid"] = Get(e, "pid");
    out["state"] = "DEAD";
    if (e.count("with_job") || (restarts_left && e.count("job_ended"))) {
      out["death"] = "owner died (its job ended)";
    } else if (cause.rfind("killed by its owner", 0) == 0) {
      out["death"] = cause;
    } else if (!restarts_left) {
      out["death"] = e.count("by_user") ? cause
                                        : "out of restarts (max_restarts " +
                                              std::to_string(max_restarts) + "): " + cause;
    } else {
      out["state"] = "RESTARTING";
      out["death"] = "";
      out["pending"] = "its process ended (" + cause +
                       "); it has restarts left: its owner starts "
                       "it again, unless the owner is gone too";
    }
    out["ended_micros"] = Get(e, "ended_micros");
  }
  if (json) {
    PrintJson({out});
    return 0;
  }
  std::printf("actor %s  %s of job %s\n", id.c_str(), Get(out, "class").c_str(),
              Get(out, "job").c_str());
  std::printf("  state:    %s on node %s, %s\n", out["state"].c_str(),
              Get(out, "node").substr(0, 8).c_str(), WorkerPid(out).c_str());
  if (!alive.empty()) {
    std::printf("  holds:    %s%s\n", Get(alive, "lease").c_str(),
                alive["gpus"].empty() ? "" : (" (GPUs " + alive["gpus"] + ")").c_str());
    std::printf("  calls:    %s queued on its worker\n", Get(alive, "tasks").c_str());
  }
  std::printf("  restarts: %d (max_restarts %s)\n", life,
              max_restarts < 0 ? "-1: forever" : std::to_string(max_restarts).c_str());
  for (int k = 1; k <= life; ++k) {
    std::string n = "restart." + std::to_string(k) + ".";
    if (const Row* e = EndOf(ends, k - 1)) {
      std::printf("    %d. %s\n", k, EndLine(*e).c_str());
    } else {
      std::printf("    %d. %s\n", k, out[n + "cause"].c_str());
    }
  }
  if (out["state"] == "DEAD") {
    const Row& e = ends.back();
    std::printf("  death:    %s (node %s, %s, %s)\n", out["death"].c_str(),
                Get(e, "node").substr(0, 8).c_str(), WorkerPid(e).c_str(),
                When(std::atoll(Get(e, "ended_micros").c_str())).c_str());
  } else if (out["state"] == "RESTARTING") {
    std::printf("  pending:  %s\n", out["pending"].c_str());
  }
  return 0;
}

int DescribeJob(ControlClient& head, const std::vector<NodeRecord>& nodes, const std::string& token,
                const std::string& prefix, bool json) {
  auto jobs = JobRows(head);
  if (!jobs.ok()) return Fail(jobs.status());
  std::vector<Row> matching;
  for (auto& j : *jobs) {
    if (j["job"].rfind(prefix, 0) == 0) matching.push_back(j);
  }
  std::string id;
  Status st = One(matching, "job", "job", prefix, &id);
  if (!st.ok()) return Fail(st);
  Row row;
  for (auto& j : matching) {
    if (j["job"] == id) row = j;
  }
  // Counted on the nodes, one query per state (every task matched, none sent but one).
  std::map<std::string, uint64_t> states;
  NodeAnswers last;
  bool asked = true;
  uint64_t held = 0;
  for (const std::string& state : KnownStates("tasks")) {
    auto n = QueryNodes(nodes, token,
                        StateQuerySpec{"tasks", {{"job", id}, {"state", state}}, "", 1, false});
    if (!n.ok()) {
      asked = false;
      break;
    }
    if (n->matched) states[state] = n->matched;
    held += n->matched;
    last = std::move(*n);
  }
  if (asked) {
    row["tasks_held"] = std::to_string(held);
    for (auto& [s, n] : states) row["tasks_" + s] = std::to_string(n);
  }
  if (json) {
    PrintJson({row});
    return 0;
  }
  std::printf("job %s  %s\n", id.c_str(), Get(row, "state").c_str());
  std::printf("  driver:  node %s\n", Get(row, "node").substr(0, 8).c_str());
  std::printf("  started: %s\n", When(std::atoll(Get(row, "start_micros").c_str())).c_str());
  std::printf("  entry:   %s\n", Get(row, "entrypoint").c_str());
  if (!row["message"].empty()) std::printf("  message: %s\n", row["message"].c_str());
  if (asked) {
    std::string summary;
    for (auto& [s, n] : states)
      summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " " + s;
    std::printf("  tasks:   %s held on the nodes%s\n", row["tasks_held"].c_str(),
                summary.empty() ? "" : (" (" + summary + ")").c_str());
    if (!last.unanswered.empty()) std::printf("  (%s)\n", last.UnansweredLine().c_str());
  }
  return 0;
}

}  // namespace

int DescribeCommand(const std::vector<std::string>& args) {
  for (auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kDescribeHelp, stdout);
      return 0;
    }
  }
  if (args.size() < 2 || args[0].rfind("--", 0) == 0 || args[1].rfind("--", 0) == 0) {
    return Usage("describe needs what and an id: node|actor|task|job|object ID");
  }
  const std::string& what = args[0];
  if (what != "node" && what != "actor" && what != "task" && what != "job" && what != "object") {
    return Usage("cannot describe '" + what + "' (node, actor, task, job, object)");
  }
  // An empty prefix would start every id: `describe node "$NODE"` with NODE unset.
  auto checked = IdPrefix(what, args[1]);
  // An actor may be named by its name (as call and kill take it): asked of the head below.
  if (!checked.ok() && (what != "actor" || args[1].empty())) {
    return Usage(checked.status().message());
  }
  Flags flags({"address", "token-file"}, {"json"});
  Status st = flags.Parse(std::vector<std::string>(args.begin() + 2, args.end()));
  if (!st.ok()) return Usage(st.message());
  auto head = ConnectHead(flags);
  if (!head.ok()) return Fail(head.status());
  std::string prefix = checked.ok() ? *checked : "";
  if (what == "actor") {
    // A name first (a name may look like hex), else an id prefix.
    auto named = NamedActorRecords(**head);
    if (!named.ok()) return Fail(named.status());
    auto it = named->find(args[1]);
    if (it != named->end()) {
      prefix = it->second.actor_id;
    } else if (!checked.ok()) {
      return Fail(Status::NotFound("no actor is named '" + args[1] +
                                   "' ('cumulus list actors' lists names and ids)"));
    }
  }
  auto token = ResolveToken(flags.Get("token-file"));
  if (!token.ok()) return Fail(token.status());
  auto view = (*head)->GetClusterStatus();
  if (!view.ok()) return Fail(view.status());
  bool json = flags.Has("json");
  if (what == "task") return DescribeTask(**head, view->nodes, *token, prefix, json);
  if (what == "object") return DescribeObject(view->nodes, *token, prefix, json);
  if (what == "node") return DescribeNode(view->nodes, *token, prefix, json);
  if (what == "actor") return DescribeActor(view->nodes, *token, prefix, json);
  return DescribeJob(**head, view->nodes, *token, prefix, json);
}

}  // namespace cumulus::cli
