// A placement group of 4 actors: a gang that must start together (say, the 4 ranks of a
// data-parallel job). The 4 bundles are reserved all at once or not at all, so no rank sits on
// resources waiting for the others; each actor then runs inside its own bundle. The example
// checks what it shows and exits 1, saying what was wrong, if it does not hold.
//
// Without CUMULUS_ADDRESS the embedded node declares CPU=4. Against a real cluster, try
// PlacementGroupStrategy::kStrictSpread to put every rank on a different node.
#include <unistd.h>

#include <cumulus/cumulus.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

class Rank {
 public:
  explicit Rank(int rank) : rank_(rank) {}
  std::string Hello() const {
    return "rank " + std::to_string(rank_) + " on node " +
           cumulus::CurrentNodeId().Hex().substr(0, 8) + ", pid " + std::to_string(getpid());
  }
  std::string Node() const { return cumulus::CurrentNodeId().Hex(); }

 private:
  int rank_;
};

Rank* CreateRank(int rank) { return new Rank(rank); }

int Sum(int a, int b) { return a + b; }

CUMULUS_REMOTE(CreateRank, &Rank::Hello, &Rank::Node, Sum);

namespace {

// What went wrong, printed as one line; the example then exits 1.
int Fail(const std::string& what) {
  std::fprintf(stderr, "placement_group: %s\n", what.c_str());
  cumulus::Shutdown();
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bool embedded = !std::getenv("CUMULUS_ADDRESS");
  cumulus::InitOptions options;
  if (embedded) options.resources = "CPU=4";
  if (cumulus::Status st = cumulus::Init(argc, argv, options); !st.ok()) {
    std::fprintf(stderr, "cannot start cumulus: %s\n", st.ToString().c_str());
    return 1;
  }
  const int ranks = 4;
  const auto wait = std::chrono::seconds(60);
  std::vector<std::map<std::string, double>> bundles(ranks, {{"CPU", 1}});
  auto group = cumulus::CreatePlacementGroup(bundles, cumulus::PlacementGroupStrategy::kPack,
                                             std::chrono::seconds(30));
  if (!group.ok()) return Fail("cannot reserve the gang: " + group.status().ToString());
  std::vector<cumulus::ActorHandle<Rank>> actors;
  for (int i = 0; i < ranks; ++i) {
    // The actor takes its bundle's CPU: nothing outside the group can.
    actors.push_back(
        cumulus::Actor(CreateRank).SetResource("CPU", 1).SetPlacementGroup(*group, i).Remote(i));
  }
  for (int i = 0; i < ranks; ++i) {
    auto hello = cumulus::TryGet(actors[i].Task(&Rank::Hello).Remote(), wait);
    auto node = cumulus::TryGet(actors[i].Task(&Rank::Node).Remote(), wait);
    if (!hello.ok()) return Fail("rank " + std::to_string(i) + ": " + hello.status().ToString());
    if (!node.ok()) return Fail("rank " + std::to_string(i) + ": " + node.status().ToString());
    std::printf("%s (bundle %d reserved on node %s)\n", hello->c_str(), i,
                group->bundle_node(i).Hex().substr(0, 8).c_str());
    // Each rank runs where its bundle is held.
    if (*node != group->bundle_node(i).Hex()) {
      return Fail("rank " + std::to_string(i) + " runs on node " + node->substr(0, 8) +
                  ", not on its bundle's node " + group->bundle_node(i).Hex().substr(0, 8));
    }
  }

  // On one node, a gang that needs two nodes can never fit: it fails at once with the reason
  // instead of waiting forever.
  auto spread = cumulus::CreatePlacementGroup({{{"CPU", 1}}, {{"CPU", 1}}},
                                              cumulus::PlacementGroupStrategy::kStrictSpread,
                                              std::chrono::seconds(5));
  if (spread.ok()) {
    std::printf("STRICT_SPREAD: bundles on nodes %s and %s\n",
                spread->bundle_node(0).Hex().substr(0, 8).c_str(),
                spread->bundle_node(1).Hex().substr(0, 8).c_str());
    if (embedded) return Fail("STRICT_SPREAD of 2 bundles was placed on a one-node cluster");
    if (spread->bundle_node(0) == spread->bundle_node(1)) {
      return Fail("STRICT_SPREAD put both bundles on one node");
    }
    (void)cumulus::RemovePlacementGroup(*spread);
  } else {
    std::printf("STRICT_SPREAD: %s\n", spread.status().ToString().c_str());
    if (spread.status().code() != cumulus::StatusCode::kInfeasible) {
      return Fail("STRICT_SPREAD on too few nodes must fail as infeasible, not with " +
                  spread.status().ToString());
    }
  }

  // Removing the group stops its actors and gives the CPUs back.
  if (cumulus::Status st = cumulus::RemovePlacementGroup(*group); !st.ok()) {
    return Fail("remove: " + st.ToString());
  }
  // The kill travels to the actor after RemovePlacementGroup returns: a call sent at once may
  // still be answered. Within `wait`, calls must end in ActorDied.
  auto stop_by = std::chrono::steady_clock::now() + wait;
  auto stopped = cumulus::TryGet(actors[0].Task(&Rank::Hello).Remote(), wait);
  while (stopped.ok() && std::chrono::steady_clock::now() < stop_by) {
    stopped = cumulus::TryGet(actors[0].Task(&Rank::Hello).Remote(), wait);
  }
  if (stopped.ok() || stopped.status().code() != cumulus::StatusCode::kActorDied) {
    return Fail("a removed group's actor must be stopped, but a call to it gave " +
                (stopped.ok() ? *stopped : stopped.status().ToString()));
  }
  std::printf("after removal: %s\n", stopped.status().ToString().c_str());
  if (embedded) {  // all 4 CPUs are free again: a task that needs them all runs
    auto all = cumulus::TryGet(cumulus::Task(Sum).SetResource("CPU", ranks).Remote(2, 2), wait);
    if (!all.ok() || *all != 4) {
      return Fail("the group's CPUs were not given back: a CPU=4 task gave " +
                  (all.ok() ? std::to_string(*all) : all.status().ToString()));
    }
    std::printf("after removal: a task that needs all %d CPUs ran\n", ranks);
  }
  cumulus::Shutdown();
  return 0;
}
