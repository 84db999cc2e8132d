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

int main(int argc, char** argv) {
  cumulus::Status st = cumulus::Init(argc, argv);
  if (!st.ok()) {
    std::fprintf(stderr, "burst_job: %s\n", st.ToString().c_str());
    return 1;
  }
  int tasks = 8, seconds = 5;
  double cpus = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--tasks")) tasks = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--cpus")) cpus = std::atof(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seconds")) seconds = std::atoi(argv[i + 1]);
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
