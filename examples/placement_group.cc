// A placement group of 4 actors: a gang that must start together (say, the 4 ranks of a
// data-parallel job). The 4 bundles are reserved all at once or not at all, so no rank sits on
// resources waiting for the others; each actor then runs inside its own bundle.
//
// Without CUMULUS_ADDRESS the embedded node declares CPU=4. Against a real cluster, try
// PlacementGroupStrategy::kStrictSpread to put every rank on a different node.
#include <unistd.h>

#include <cumulus/cumulus.h>

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

 private:
  int rank_;
};

Rank* CreateRank(int rank) { return new Rank(rank); }

CUMULUS_REMOTE(CreateRank, &Rank::Hello);

int main(int argc, char** argv) {
  cumulus::InitOptions options;
  if (!std::getenv("CUMULUS_ADDRESS")) options.resources = "CPU=4";
  if (cumulus::Status st = cumulus::Init(argc, argv, options); !st.ok()) {
    std::fprintf(stderr, "cannot start cumulus: %s\n", st.ToString().c_str());
    return 1;
  }
  const int ranks = 4;
  std::vector<std::map<std::string, double>> bundles(ranks, {{"CPU", 1}});
  auto group = cumulus::CreatePlacementGroup(bundles, cumulus::PlacementGroupStrategy::kPack,
                                             std::chrono::seconds(30));
  if (!group.ok()) {
    std::fprintf(stderr, "cannot reserve the gang: %s\n", group.status().ToString().c_str());
    return 1;
  }
  std::vector<cumulus::ActorHandle<Rank>> actors;
  for (int i = 0; i < ranks; ++i) {
    // The actor takes its bundle's CPU: nothing outside the group can.
    actors.push_back(
        cumulus::Actor(CreateRank).SetResource("CPU", 1).SetPlacementGroup(*group, i).Remote(i));
  }
  for (int i = 0; i < ranks; ++i) {
    std::printf("%s (bundle %d reserved on node %s)\n",
                cumulus::Get(actors[i].Task(&Rank::Hello).Remote()).c_str(), i,
                group->bundle_node(i).Hex().substr(0, 8).c_str());
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
  } else {
    std::printf("STRICT_SPREAD: %s\n", spread.status().ToString().c_str());
  }

  // Removing the group stops its actors and gives the CPUs back.
  if (cumulus::Status st = cumulus::RemovePlacementGroup(*group); !st.ok()) {
    std::fprintf(stderr, "remove: %s\n", st.ToString().c_str());
  }
  cumulus::Shutdown();
  return 0;
}
