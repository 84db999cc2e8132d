// Bursting: more work than the on-prem node holds. Each task asks for --cpus CPUs and works
// --seconds; with `cumulus up examples/burst.yaml` the autoscaler launches cloud nodes for what
// waits, and the program prints how many tasks ran on each node.
//
//   cumulus up examples/burst.yaml
//   CUMULUS_ADDRESS=$(cat ${CUMULUS_STATE_DIR:-/tmp/cumulus-$(id -u)}/address) build/bin/burst_job
//   cumulus status          # the cloud nodes, their cost, and why (no) node is launched
//   cumulus down
// Arguments: [--tasks N (8)] [--cpus C (2)] [--seconds S (5)].
#include <cumulus/cumulus.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

std::string WorkThenWhere(int seconds) {
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  return cumulus::CurrentNodeId().Hex();
}
CUMULUS_REMOTE(WorkThenWhere);

constexpr const char* kUsage =
    "usage: burst_job [--tasks N (8)] [--cpus C (2)] [--seconds S (5)]\n"
    "Runs N tasks of C CPUs, each working S seconds, on the cluster at CUMULUS_ADDRESS (else an\n"
    "embedded one), and prints how many ran on each node. With 'cumulus up examples/burst.yaml'\n"
    "the autoscaler launches cloud nodes for the tasks the on-prem node cannot hold.\n";

int main(int argc, char** argv) {
  // Checked before Init: a worker process, started with these arguments, never gets this far
  // with bad ones, and --help starts no cluster.
  int tasks = 8, seconds = 5;
  double cpus = 2;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    char* end = nullptr;
    double v = i + 1 < argc ? std::strtod(argv[i + 1], &end) : 0;
    bool number = i + 1 < argc && end != argv[i + 1] && *end == '\0' && v > 0 && v <= 1e6;
    if ((a == "--tasks" || a == "--seconds") && number && v == static_cast<int>(v)) {
      (a == "--tasks" ? tasks : seconds) = static_cast<int>(v);
    } else if (a == "--cpus" && number) {
      cpus = v;
    } else {
      std::fprintf(stderr, "burst_job: %s '%s'; --help says what it takes\n",
                   a == "--tasks" || a == "--seconds" || a == "--cpus"
                       ? "needs a positive number after"
                       : "unknown argument",
                   a.c_str());
      return 2;
    }
    ++i;
  }
  cumulus::Status st = cumulus::Init(argc, argv);
  if (!st.ok()) {
    std::fprintf(stderr, "burst_job: %s\n", st.ToString().c_str());
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<cumulus::ObjectRef<std::string>> refs;
  for (int i = 0; i < tasks; ++i)
    refs.push_back(cumulus::Task(WorkThenWhere).SetResource("CPU", cpus).Remote(seconds));
  std::map<std::string, int> per_node;
  for (auto& r : refs) {
    auto where = cumulus::TryGet(r, std::chrono::minutes(10));
    if (!where.ok()) {
      std::fprintf(stderr, "burst_job: a task failed: %s\n", where.status().ToString().c_str());
      return 1;
    }
    ++per_node[*where];
  }
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%d tasks of %.0f CPU x %d s ran in %.1f s on %zu node(s):\n", tasks, cpus, seconds,
              took, per_node.size());
  for (auto& [node, n] : per_node) std::printf("  node %s: %d task(s)\n", node.c_str(), n);
  return 0;
}
