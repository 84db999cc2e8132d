#include "scheduler/autoscale/bins.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace cumulus::autoscale {

ResourceSet SumOf(const std::vector<ResourceSet>& bundles) {
  ResourceSet sum;
  for (const ResourceSet& b : bundles) sum.Add(b);
  return sum;
}

SizeKey::SizeKey(const ResourceSet& r)
    : gpu(r.GetUnits("GPU")), cpu(r.GetUnits("CPU")), memory(r.GetUnits("memory")) {
  for (auto& [name, units] : r.units()) {
    if (name != "GPU" && name != "CPU" && name != "memory") other += units;
  }
}

double WasteOf(const ResourceSet& total, const ResourceSet& free) {
  if (total.units().empty()) return 0;
  double waste = 0;
  for (auto& [name, units] : total.units()) {
    waste += static_cast<double>(free.GetUnits(name)) / static_cast<double>(units);
  }
  return waste / static_cast<double>(total.units().size());
}

bool FitBundles(std::vector<Bin>& bins, const std::vector<ResourceSet>& bundles,
                GroupStrategy strategy, const LabelSelector& selector) {
  auto eligible = [&](const Bin& b) { return selector.Matches(b.labels); };
  auto take = [](Bin& b, const ResourceSet& r) {
    b.free.Subtract(r);
    b.used = true;
  };
  if (bundles.size() == 1 || strategy == GroupStrategy::kStrictPack ||
      strategy == GroupStrategy::kPack) {
    ResourceSet sum = SumOf(bundles);
    for (Bin& b : bins) {
      if (eligible(b) && b.free.Contains(sum)) {
        take(b, sum);
        return true;
      }
    }
    if (bundles.size() == 1 || strategy == GroupStrategy::kStrictPack) return false;
  }
  // Bundle by bundle, largest first; undone if one finds no bin.
  std::vector<size_t> order(bundles.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return SizeKey(bundles[a]) > SizeKey(bundles[b]); });
  std::vector<std::pair<size_t, size_t>> taken;  // (bin, bundle)
  std::vector<bool> holds(bins.size(), false);
  bool distinct_first =
      strategy == GroupStrategy::kSpread || strategy == GroupStrategy::kStrictSpread;
  for (size_t i : order) {
    size_t chosen = bins.size();
    for (int pass = 0; pass < 2 && chosen == bins.size(); ++pass) {
      if (pass == 1 && strategy == GroupStrategy::kStrictSpread) break;
      for (size_t j = 0; j < bins.size(); ++j) {
        if (pass == 0 && distinct_first && holds[j]) continue;
        if (eligible(bins[j]) && bins[j].free.Contains(bundles[i])) {
          chosen = j;
          break;
        }
      }
    }
    if (chosen == bins.size()) {
      for (auto& [j, k] : taken) bins[j].free.Add(bundles[k]);
      return false;
    }
    bins[chosen].free.Subtract(bundles[i]);
    holds[chosen] = true;
    taken.emplace_back(chosen, i);
  }
  for (auto& [j, k] : taken) bins[j].used = true;
  return true;
}

}  // namespace cumulus::autoscale
