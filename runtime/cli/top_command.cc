// `cumulus top`: one snapshot, a row per alive node — CPU use of the machine and CPUs allocated,
// memory, GPUs and their use, object store use and spill, running tasks and actors, site and node
// type — asked of each node directly (a `node` state query). The shell's live view redraws it.
#include <algorithm>
#include <cstdio>

#include "runtime/autoscaler/cluster_config.h"
#include "runtime/base/numeric.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/head_connection.h"
#include "runtime/cli/local_state.h"
#include "runtime/cli/node_query.h"
#include "runtime/cli/state_table.h"

namespace cumulus::cli {

namespace {

constexpr const char* kTopHelp = R"(Usage:
  cumulus top [--sort cpu|mem|gpu|store|tasks|node] [--filter KEY=VALUE]...
              [--address HOST:PORT] [--token-file FILE] [--json]

One snapshot of every alive node, a row each, asked of the nodes themselves:
  CPU%     use of the whole machine (from /proc/stat, over the last second)
  CPUS     CPUs allocated to tasks and actors / the node's CPUs
  MEM      memory in use / the machine's memory (from /proc/meminfo)
  GPUS     GPUs allocated / the node's GPUs;  GPU%: their mean use (NVML; '-' without it)
  STORE    object store bytes in shared memory;  SPILL: bytes spilled to disk only
  TASKS    tasks running on its workers;  ACTORS: actors alive there
  SITE/TYPE  the node's label site, and the node type the autoscaler launched it as
--sort orders the rows (default: node id; the others largest first). --filter keeps the nodes
whose field equals VALUE (fields: node, by prefix; site; node_type), several must all match:
--filter site=cloud, --filter node_type=gpu-a100. --json prints every field of each node. A node
that does not answer within 5 s is named on stderr; the others are shown.
)";

double Number(const Row& r, const std::string& key) {
  auto it = r.find(key);
  if (it == r.end()) return -1;
  try {
    return std::stod(it->second);
  } catch (...) {
    return -1;
  }
}

std::string Field(const Row& r, const std::string& key) {
  auto it = r.find(key);
  return it == r.end() || it->second.empty() ? "-" : it->second;
}

std::string Used(const Row& r, const std::string& used, const std::string& total) {
  return Field(r, used) + "/" + Field(r, total);
}

// "3.2/15.5G" from bytes.
std::string UsedBytes(const Row& r, const std::string& used, const std::string& total) {
  double u = Number(r, used), t = Number(r, total);
  if (u < 0 || t <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f/%.1fG", u / (1 << 30), t / (1 << 30));
  return buf;
}

std::string Label(const std::string& labels, const std::string& key) {
  for (std::string_view item : SplitList(labels, ',')) {
    size_t eq = item.find('=');
    if (eq != std::string_view::npos && item.substr(0, eq) == key) {
      return std::string(item.substr(eq + 1));
    }
  }
  return "";
}

// A launched node carries its type as cumulus.node_type (runtime/autoscaler/cluster_config.h); a
// node started by hand may say it as node_type.
std::string NodeTypeOf(const std::string& labels) {
  std::string type = Label(labels, kNodeTypeLabel);
  return type.empty() ? Label(labels, "node_type") : type;
}

}  // namespace

int TopCommand(const std::vector<std::string>& args) {
  for (auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kTopHelp, stdout);
      return 0;
    }
  }
  Flags flags({"address", "token-file", "sort", "filter"}, {"json"});
  Status st = flags.Parse(args);
  if (!st.ok()) return UsageError(st.message(), "cumulus top --help");
  auto filters = ParseFilters(flags, {"node", "site", "node_type"}, {});
  if (!filters.ok()) return UsageError(filters.status().message(), "cumulus top --help");
  std::string sort = flags.Get("sort", "node");
  const std::vector<std::string> keys = {"cpu", "mem", "gpu", "store", "tasks", "node"};
  if (std::find(keys.begin(), keys.end(), sort) == keys.end()) {
    return UsageError("cannot sort by '" + sort + "' (by: cpu, mem, gpu, store, tasks, node)",
                      "cumulus top --help");
  }
  auto head = ConnectHead(flags);
  if (!head.ok()) return Fail(head.status());
  auto token = ResolveToken(flags.Get("token-file"));
  if (!token.ok()) return Fail(token.status());
  auto view = (*head)->GetClusterStatus();
  if (!view.ok()) return Fail(view.status());
  StateQuerySpec q;
  q.kind = "node";
  auto answers = QueryNodes(view->nodes, *token, q);
  if (!answers.ok()) return Fail(answers.status());
  std::vector<Row> rows;
  for (Row& r : answers->rows) {
    r["site"] = Label(r["labels"], "site");
    r["node_type"] = NodeTypeOf(r["labels"]);
    if (MatchesFilters(r, *filters)) rows.push_back(std::move(r));
  }
  auto by = [&](const std::string& key) {
    std::stable_sort(rows.begin(), rows.end(),
                     [&](const Row& a, const Row& b) { return Number(a, key) > Number(b, key); });
  };
  if (sort == "cpu") by("cpu_percent");
  if (sort == "mem") by("mem_used");
  if (sort == "gpu")
    by(rows.empty() || Field(rows[0], "gpu_util") == "-" ? "gpus_used" : "gpu_util");
  if (sort == "store") by("store_used");
  if (sort == "tasks") by("running_tasks");
  if (!answers->unanswered.empty()) {
    std::fprintf(stderr, "cumulus: %s\n", answers->UnansweredLine().c_str());
  }
  if (flags.Has("json")) {
    PrintRows(rows, {}, /*json=*/true, rows.size());
    return 0;
  }
  // At most 100 columns: ids shortened, bytes in GiB, site/type cut to 17.
  std::printf("%-8s %-17s %5s %7s %11s %5s %4s %8s %8s %5s %6s\n", "NODE", "SITE/TYPE", "CPU%",
              "CPUS", "MEM", "GPUS", "GPU%", "STORE", "SPILL", "TASKS", "ACTORS");
  for (const Row& r : rows) {
    std::string where = Field(r, "site") + "/" + Field(r, "node_type");
    if (where.size() > 17) where = where.substr(0, 17);
    std::printf("%-8s %-17s %5s %7s %11s %5s %4s %8s %8s %5s %6s\n",
                Field(r, "node").substr(0, 8).c_str(), where.c_str(),
                Field(r, "cpu_percent").c_str(), Used(r, "cpus_used", "cpus_total").c_str(),
                UsedBytes(r, "mem_used", "mem_total").c_str(),
                Used(r, "gpus_used", "gpus_total").c_str(), Field(r, "gpu_util").c_str(),
                Bytes(static_cast<uint64_t>(std::max(0.0, Number(r, "store_used")))).c_str(),
                Bytes(static_cast<uint64_t>(std::max(0.0, Number(r, "spilled")))).c_str(),
                Field(r, "running_tasks").c_str(), Field(r, "actors").c_str());
  }
  return 0;
}

}  // namespace cumulus::cli
