// cumulus status | list nodes: the cluster's nodes, their state and resources, the demand that
// waits and the recent failures, as text or --json. Also JsonString, which every --json uses.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "cumulus/internal/json.h"
#include "runtime/base/numeric.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/head_connection.h"
#include "runtime/cli/local_state.h"
#include "runtime/core/messages.h"
#include "runtime/head/control_client.h"

namespace cumulus::cli {

namespace {

constexpr const char* kStatusHelp = R"(Usage:
  cumulus status [--address HOST:PORT] [--token-file FILE] [--json]
  cumulus list nodes [--address HOST:PORT] [--token-file FILE] [--json]
  cumulus list jobs|actors|tasks|objects|workers|placement-groups [--address HOST:PORT]
                [--token-file FILE] [--filter KEY=VALUE]... [--limit N] [--after ID] [--json]

status shows the nodes, their state (ALIVE; RECOVERING: after a head restart, not heard from yet;
DEAD, with why; STOPPED: stopped on purpose by 'cumulus stop' or a signal, not a failure), their
resources, the demand that waits (resource shapes, how many, their label selector, who it is
for when the work says -- "for trial asha/7" --, the node it is pinned to by hard node affinity,
and why it waits; --json: "pending_demand" with
"resources", "count", "purpose", "pinned_to" (the node id of hard node affinity, "" for
none) and "reason"), what the
autoscaler started by 'cumulus up' does (per node type: running, launching, idle, draining,
failed launches, cost so far and per hour; for each pending demand why a node is or is not
launched for it), the recent failures, and each
node's disk: its program cache (used/bound), submitted jobs' files, spilled objects, logs,
and free space (--json: "disk" in each node).
list jobs: as 'cumulus jobs'. list actors: every actor, anonymous ones too, with its state
(PENDING, ALIVE, EXITING, RESTARTING, DEAD with why it died), class, job, node, pid, restarts so
far and its name if it has one (filters: actor, job, class, state, node, pid, restarts, name); each
node reports the actors it hosts and the last 2000 actor ends it saw (under a filter on state,
node, pid or restarts, an actor that restarted on another node is shown by its new life). list
tasks: the tasks each node holds (QUEUED, RUNNING with the worker's pid, FORWARDED, RETRY_WAIT) and
the last ended ones it ran (FINISHED, FAILED; 10000 per node by default). list objects: the objects
in each node's store (MEMORY, DISK, BOTH). list workers: each node's worker processes (IDLE, BUSY,
BLOCKED, ACTOR with its actor id, EXITING). Actors, tasks, objects and workers are asked of every
alive node at once: each node applies the filters to everything it holds before it caps what it
sends, so --filter state=RUNNING finds running tasks among any number; a node that does not answer
within 5 s is named on stderr (one line) and the others' rows are shown. list placement-groups:
groups and the nodes of their bundles.
--filter keeps rows whose field equals VALUE (ids match by prefix; several --filter must all
match); --limit shows at most N (default 100); actors, tasks, objects and workers are sorted by id,
and when more rows match the last line says how many and the --after ID that shows the next page
(jobs: newest first, --after JOB continues after that job). An --after ID whose row has gone since
continues after it in id order; for jobs it is an error (list again). The filters always apply to
every row before the limit.

The address defaults to $CUMULUS_ADDRESS, then to the cluster last started or joined on this
machine; the token to $CUMULUS_TOKEN, then to the token file that cluster was started or joined
with.
)";

}  // namespace

namespace {

std::string JsonNumber(double v) {
  char buf[64];
  if (v == static_cast<double>(static_cast<int64_t>(v)))
    std::snprintf(buf, sizeof(buf), "%" PRId64, static_cast<int64_t>(v));
  else
    std::snprintf(buf, sizeof(buf), "%.4f", v);
  return buf;
}

std::string JsonResources(const ResourceSet& r) {
  std::string out = "{";
  for (auto& [name, units] : r.units()) {
    if (out.size() > 1) out += ",";
    out += JsonString(name) + ":" + JsonNumber(static_cast<double>(units) / ResourceSet::kUnit);
  }
  return out + "}";
}

std::string JsonDisk(const NodeDisk& d) {
  return "{\"program_cache_bytes\":" + std::to_string(d.program_cache) +
         ",\"program_cache_max_bytes\":" + std::to_string(d.program_cache_max) +
         ",\"submitted_bytes\":" + std::to_string(d.submitted) +
         ",\"spill_bytes\":" + std::to_string(d.spill) +
         ",\"logs_bytes\":" + std::to_string(d.logs) + ",\"free_bytes\":" + std::to_string(d.free) +
         "}";
}

std::string JsonNode(const NodeRecord& n, const std::map<std::string, NodeDisk>& disks) {
  auto disk = disks.find(n.id.Hex());
  std::string labels = "{";
  for (auto& [k, v] : n.labels) {
    if (labels.size() > 1) labels += ",";
    labels += JsonString(k) + ":" + JsonString(v);
  }
  labels += "}";
  return "{\"node_id\":" + JsonString(n.id.Hex()) + ",\"address\":" + JsonString(n.address) +
         ",\"hostname\":" + JsonString(n.hostname) + ",\"state\":" + JsonString(NodeStateName(n)) +
         ",\"labels\":" + labels + ",\"resources_total\":" + JsonResources(n.total) +
         ",\"resources_available\":" + JsonResources(n.available) +
         ",\"object_store\":" + JsonString(n.object_store_address) +
         ",\"pid\":" + std::to_string(n.pid) +
         (n.metrics_address.empty() ? "" : ",\"metrics\":" + JsonString(n.metrics_address)) +
         (n.state == NodeState::kDead ? ",\"death_reason\":" + JsonString(n.death_reason) : "") +
         (n.draining && n.state != NodeState::kDead
              ? ",\"draining\":true,\"drain_note\":" + JsonString(n.drain_note)
              : "") +
         (disk != disks.end() ? ",\"disk\":" + JsonDisk(disk->second) : "") + "}";
}

std::string Bytes(uint64_t n) {
  const char* units[] = {"B", "K", "M", "G", "T"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f%s" : "%.1f%s", v, units[u]);
  return buf;
}

std::string Amount(const std::string& name, int64_t units) {
  double v = static_cast<double>(units) / ResourceSet::kUnit;
  char buf[64];
  if (name == "memory")
    std::snprintf(buf, sizeof(buf), "%.1fG", v / (1ull << 30));
  else if (v == static_cast<double>(static_cast<int64_t>(v)))
    std::snprintf(buf, sizeof(buf), "%" PRId64, static_cast<int64_t>(v));
  else
    std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

std::string UsedOfTotal(const ResourceSet& available, const ResourceSet& total) {
  std::string out;
  for (auto& [name, units] : total.units()) {
    if (!out.empty()) out += ", ";
    out += name + " " + Amount(name, units - available.GetUnits(name)) + "/" + Amount(name, units);
  }
  return out.empty() ? "-" : out;
}

Result<ClusterView> FetchStatus(const Flags& flags, HostPort* address) {
  CUMULUS_ASSIGN_OR_RETURN(*address, ResolveAddress(flags.Get("address")));
  CUMULUS_ASSIGN_OR_RETURN(std::string token, ResolveToken(flags.Get("token-file")));
  ControlClientOptions o;
  o.request_timeout = std::chrono::seconds(10);
  CUMULUS_ASSIGN_OR_RETURN(auto client, ControlClient::Connect(*address, token, o));
  return client->GetClusterStatus();
}

// What each node reported of its disk (node hex -> NodeDisk), from its latest state report.
std::map<std::string, NodeDisk> NodeDisks(const Flags& flags) {
  std::map<std::string, NodeDisk> out;
  auto address = ResolveAddress(flags.Get("address"));
  auto token = ResolveToken(flags.Get("token-file"));
  if (!address.ok() || !token.ok()) return out;
  ControlClientOptions o;
  o.request_timeout = std::chrono::seconds(10);
  auto client = ControlClient::Connect(*address, *token, o);
  if (!client.ok()) return out;
  auto page = (*client)->KvList(kNodeStateNamespace, "", "", 10000);
  if (!page.ok()) return out;
  for (auto& [node, value] : page->entries) {
    auto r = DecodeRecord<NodeStateReport>(value);
    if (r.ok()) out[node] = r->disk;
  }
  return out;
}

// What the autoscaler's monitor last published (`key`: its text or JSON), or "" if none runs.
std::string AutoscalerStatus(const Flags& flags, const char* key) {
  auto address = ResolveAddress(flags.Get("address"));
  auto token = ResolveToken(flags.Get("token-file"));
  if (!address.ok() || !token.ok()) return "";
  ControlClientOptions o;
  o.request_timeout = std::chrono::seconds(10);
  auto client = ControlClient::Connect(*address, *token, o);
  if (!client.ok()) return "";
  auto value = (*client)->KvGet("autoscaler", key);
  return value.ok() ? *value : "";
}

struct Failure {
  int64_t micros = 0;
  std::string node, what;
};

// The latest failures: nodes declared dead (not those stopped on purpose), and what each node
// recorded (workers that died under work, tasks the memory monitor killed). Newest first, at most
// `n`.
std::vector<Failure> RecentFailures(const Flags& flags, const ClusterView& view, size_t n) {
  std::vector<Failure> out;
  for (auto& node : view.nodes) {
    if (node.state == NodeState::kDead && !node.left) {
      out.push_back(
          {node.death_micros, node.id.Hex().substr(0, 8), "node DEAD: " + node.death_reason});
    }
  }
  auto address = ResolveAddress(flags.Get("address"));
  auto token = ResolveToken(flags.Get("token-file"));
  if (address.ok() && token.ok()) {
    ControlClientOptions o;
    o.request_timeout = std::chrono::seconds(10);
    auto client = ControlClient::Connect(*address, *token, o);
    if (client.ok()) {
      auto page = (*client)->KvList(kFailuresNamespace, "", "", 10000);
      if (page.ok()) {
        for (auto& [key, value] : page->entries) {
          size_t dash = key.find('-');
          if (dash == std::string::npos) continue;
          auto micros = ParseInteger("a failure's time", key.substr(0, dash), {0, INT64_MAX});
          if (!micros.ok()) continue;
          out.push_back({*micros, key.substr(dash + 1), value});
        }
      }
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Failure& a, const Failure& b) { return a.micros > b.micros; });
  if (out.size() > n) out.resize(n);
  return out;
}

std::string LocalTime(int64_t micros) {
  std::time_t t = static_cast<std::time_t>(micros / 1000000);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return buf;
}

int StatusOrList(const std::vector<std::string>& args, bool list) {
  for (auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kStatusHelp, stdout);
      return 0;
    }
  }
  Flags flags({"address", "token-file"}, {"json"});
  Status st = flags.Parse(args);
  if (!st.ok())
    return UsageError(st.message(), list ? "cumulus list --help" : "cumulus status --help");
  HostPort address;
  auto view = FetchStatus(flags, &address);
  if (!view.ok()) {
    std::fprintf(stderr, "cumulus: %s\n", view.status().ToString().c_str());
    return 1;
  }
  ResourceSet total, available;
  size_t alive = 0;
  // (resource shape and selector, purpose) -> tasks, actors and bundles waiting for it, and why
  // (the first node's words).
  struct Waiting {
    uint64_t count = 0;
    std::string reason;
  };
  // By (shape and selector, purpose, the node it is pinned to).
  std::map<std::tuple<std::string, std::string, std::string>, Waiting> pending;
  for (auto& n : view->nodes) {
    if (n.state != NodeState::kAlive) continue;
    ++alive;
    total.Add(n.total);
    available.Add(n.available);
    for (auto& d : n.pending_demand) {
      Waiting& w = pending[{d.shape.ToString() + (d.selector.empty() ? "" : " on " + d.selector),
                            d.purpose, d.pinned_to}];
      w.count += d.count;
      if (w.reason.empty()) w.reason = d.reason;
    }
  }
  std::map<std::string, NodeDisk> disks = NodeDisks(flags);
  if (flags.Has("json")) {
    std::string out = "{";
    if (!list)
      out += "\"cluster_id\":" + JsonString(view->cluster_id) +
             ",\"head\":" + JsonString(address.ToString()) + ",";
    out += "\"nodes\":[";
    for (size_t i = 0; i < view->nodes.size(); ++i)
      out += (i ? "," : "") + JsonNode(view->nodes[i], disks);
    out += "]";
    if (!list) {
      out += ",\"alive_nodes\":" + std::to_string(alive) +
             ",\"resources_total\":" + JsonResources(total) +
             ",\"resources_available\":" + JsonResources(available) + ",\"pending_demand\":[";
      bool first = true;
      for (auto& [key, w] : pending) {
        out += std::string(first ? "" : ",") + "{\"resources\":" + JsonString(std::get<0>(key)) +
               ",\"count\":" + std::to_string(w.count) +
               ",\"purpose\":" + JsonString(std::get<1>(key)) +
               ",\"pinned_to\":" + JsonString(std::get<2>(key)) +
               ",\"reason\":" + JsonString(w.reason) + "}";
        first = false;
      }
      out += "],\"recent_failures\":[";
      first = true;
      for (auto& f : RecentFailures(flags, *view, 20)) {
        out += std::string(first ? "" : ",") + "{\"micros\":" + std::to_string(f.micros) +
               ",\"node\":" + JsonString(f.node) + ",\"what\":" + JsonString(f.what) + "}";
        first = false;
      }
      out += "]";
      std::string autoscaler = AutoscalerStatus(flags, "status.json");
      out += ",\"autoscaler\":" + (autoscaler.empty() ? std::string("null") : autoscaler);
    }
    std::printf("%s}\n", out.c_str());
    return 0;
  }
  if (!list)
    std::printf("Cluster %s (head %s): %zu alive node(s), %zu in all\n", view->cluster_id.c_str(),
                address.ToString().c_str(), alive, view->nodes.size());
  std::printf("%-32s  %-15s  %-8s  %-24s  %s\n", "NODE", "ADDRESS", "STATE", "LABELS",
              "RESOURCES (used/total)");
  for (auto& n : view->nodes) {
    std::string labels = LabelsToString(n.labels);
    std::printf("%-32s  %-15s  %-8s  %-24s  %s\n", n.id.Hex().c_str(), n.address.c_str(),
                NodeStateName(n), labels.empty() ? "-" : labels.c_str(),
                n.state == NodeState::kAlive ? UsedOfTotal(n.available, n.total).c_str()
                                             : n.death_reason.c_str());
  }
  if (!list) {
    std::printf("Total (alive nodes): %s\n", UsedOfTotal(available, total).c_str());
    for (auto& n : view->nodes) {
      if (n.state == NodeState::kDead || !n.draining) continue;
      std::printf("Draining %s: %s\n", n.id.Hex().substr(0, 8).c_str(),
                  n.drain_note.empty() ? "asked to drain" : n.drain_note.c_str());
    }
    std::printf("Disk (reported every 2 s; the data dir's parts, and free on its filesystem):\n");
    for (auto& n : view->nodes) {
      auto d = disks.find(n.id.Hex());
      if (n.state != NodeState::kAlive || d == disks.end()) continue;
      std::printf("  %s  program cache %s/%s  submitted %s  spill %s  logs %s  free %s\n",
                  n.id.Hex().substr(0, 8).c_str(), Bytes(d->second.program_cache).c_str(),
                  Bytes(d->second.program_cache_max).c_str(), Bytes(d->second.submitted).c_str(),
                  Bytes(d->second.spill).c_str(), Bytes(d->second.logs).c_str(),
                  Bytes(d->second.free).c_str());
    }
    if (pending.empty()) {
      std::printf("Pending demand: none\n");
    } else {
      std::printf("Pending demand (waiting for resources):\n");
      for (auto& [key, w] : pending) {
        const auto& [shape, purpose, pin] = key;
        std::printf("  %6llu x {%s}%s%s%s\n", static_cast<unsigned long long>(w.count),
                    shape.empty() ? "no resources" : shape.c_str(),
                    purpose.empty() ? "" : (" for " + purpose).c_str(),
                    pin.empty() ? "" : (" pinned to node " + pin.substr(0, 8)).c_str(),
                    w.reason.empty() ? "" : (" (" + w.reason + ")").c_str());
      }
    }
    std::string autoscaler = AutoscalerStatus(flags, "status.txt");
    if (!autoscaler.empty()) {
      std::printf("%s", autoscaler.c_str());
      // A monitor that stopped leaves its last report: say how old it is.
      std::string json = AutoscalerStatus(flags, "status.json");
      size_t at = json.find("\"updated_micros\":");
      if (at != std::string::npos) {
        int64_t age_s = (NowMicros() - std::strtoll(json.c_str() + at + 17, nullptr, 10)) / 1000000;
        if (age_s > 30)
          std::printf(
              "  (this report is %lld s old: is the autoscaler running? 'cumulus up' "
              "starts it)\n",
              static_cast<long long>(age_s));
      }
    }
    auto failures = RecentFailures(flags, *view, 10);
    if (failures.empty()) {
      std::printf("Recent failures: none\n");
    } else {
      std::printf("Recent failures (newest first):\n");
      for (auto& f : failures) {
        std::printf("  %s  node %s  %s\n", LocalTime(f.micros).c_str(), f.node.c_str(),
                    f.what.c_str());
      }
    }
  }
  return 0;
}

}  // namespace

int StatusCommand(const std::vector<std::string>& args) {
  for (auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kStatusHelp, stdout);
      return 0;
    }
  }
  return StatusOrList(args, false);
}

int ListCommand(const std::vector<std::string>& args) {
  if (args.empty()) return UsageError("list needs what to list: nodes", "cumulus list --help");
  if (args[0] == "-h" || args[0] == "--help") {
    std::fputs(kStatusHelp, stdout);
    return 0;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "nodes") return StatusOrList(rest, true);
  if (args[0] == "jobs" || args[0] == "actors" || args[0] == "placement-groups" ||
      args[0] == "tasks" || args[0] == "objects" || args[0] == "workers") {
    return ListStateCommand(args[0], rest);
  }
  return UsageError("cannot list '" + args[0] +
                        "' (this version lists: nodes, jobs, actors, tasks, objects, workers, "
                        "placement-groups)",
                    "cumulus list --help");
}

}  // namespace cumulus::cli
