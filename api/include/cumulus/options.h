// The choices a task, an actor or a placement group is given (see the setters in cumulus/api.h).
#pragma once

namespace cumulus {

// Where a task or actor goes.
enum class Strategy {
  kDefault = 0,       // the node holding most of its arguments' bytes; else here; else least loaded
  kSpread = 1,        // the least loaded node; equally loaded ones in turn (round robin)
  kNodeAffinity = 2,  // the node named by SetNodeAffinity
};

// How the bundles of a placement group are spread over nodes.
enum class PlacementGroupStrategy {
  kPack = 0,          // as few nodes as possible
  kSpread = 1,        // as many nodes as possible
  kStrictPack = 2,    // all on one node, or wait
  kStrictSpread = 3,  // each on a different node, or wait
};

}  // namespace cumulus
