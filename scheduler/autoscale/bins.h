// Fitting pending work onto capacity: the bins the policy packs into (free resources of nodes
// that exist, nodes that boot, nodes opened this round). Internal to the autoscaler's policy.
#pragma once

#include <string>
#include <tuple>
#include <vector>

#include "scheduler/autoscale/snapshot.h"

namespace cumulus::autoscale {

struct Bin {
  std::string node;  // the node's id; "" for a node opened this round
  int type = -1;     // index into Snapshot::types; -1 for an on-prem node
  Labels labels;
  ResourceSet total;
  ResourceSet free;
  bool used = false;  // some pending work was fitted onto it
};

// Fits all of `bundles` onto `bins` (in the order given, first fit), as `strategy` says:
// one bundle: the first bin with room; STRICT_PACK: all on one bin; PACK: all on one bin if one
// has room, else bundle by bundle; SPREAD: bundle by bundle, bins not yet holding one of them
// first; STRICT_SPREAD: each on a different bin. Only bins whose labels `selector` matches.
// On success subtracts the bundles and returns true; otherwise leaves `bins` as they were.
bool FitBundles(std::vector<Bin>& bins, const std::vector<ResourceSet>& bundles,
                GroupStrategy strategy, const LabelSelector& selector);

// The sum of `bundles`.
ResourceSet SumOf(const std::vector<ResourceSet>& bundles);

// An order of sizes for "largest first": GPUs, then CPUs, then memory, then the rest.
struct SizeKey {
  explicit SizeKey(const ResourceSet& r);
  int64_t gpu = 0, cpu = 0, memory = 0, other = 0;
  bool operator>(const SizeKey& o) const {
    return std::tie(gpu, cpu, memory, other) > std::tie(o.gpu, o.cpu, o.memory, o.other);
  }
};

// 0..1: how much of `total` would stay unused with `free` left, averaged over the resources
// `total` has (for "least waste").
double WasteOf(const ResourceSet& total, const ResourceSet& free);

}  // namespace cumulus::autoscale
