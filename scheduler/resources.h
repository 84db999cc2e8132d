// Resources and labels: what a node offers and what work asks for. Pure values, no I/O.
//
// Amounts are kept in fixed point (1/10000 of a unit), so 0.5 GPU + 0.25 GPU + 0.25 GPU is exactly
// one GPU: no floating-point drift across many allocations. "memory" is in bytes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cumulus/status.h"

namespace cumulus {

class ResourceSet {
 public:
  static constexpr int64_t kUnit = 10000;

  ResourceSet() = default;

  // Parses "CPU=8,GPU=2,memory=32G,custom=4". Amounts are numbers as ParseReal reads them
  // (runtime/base/numeric.h: "2", "0.5", "1e3"), then checked by CheckAmount; "memory" also
  // takes a size suffix (K, M, G, T). Names are letters, digits, '_', '-', '.', '/' and ':'.
  static Result<ResourceSet> Parse(std::string_view spec);

  // The most of one resource a node may offer or work may ask for (amount * kUnit stays well
  // inside int64, with room for cluster sums).
  static constexpr double kMaxAmount = 9.0e14;

  // Whether `amount` of resource `name`, as a user or a peer gave it, can be represented: finite,
  // not negative, at most kMaxAmount (CheckReal, with its message), and zero or at least 1/kUnit.
  // InvalidArgument names the resource and says why; every entry point (API, CLI, wire) checks
  // amounts with it.
  static Status CheckAmount(const std::string& name, double amount);

  // REQUIRES: CheckAmount(name, amount).ok(). Setting 0 removes the resource.
  void Set(const std::string& name, double amount);
  void SetUnits(const std::string& name, int64_t units);
  double Get(const std::string& name) const;
  int64_t GetUnits(const std::string& name) const;
  bool Has(const std::string& name) const { return units_.count(name) > 0; }
  bool empty() const { return units_.empty(); }

  // True if every amount in `demand` is available here.
  bool Contains(const ResourceSet& demand) const;
  // REQUIRES: Contains(demand).
  void Subtract(const ResourceSet& demand);
  // Saturates instead of overflowing (cluster totals of thousands of large nodes).
  void Add(const ResourceSet& other);
  // Every resource `other` names overrides the one here; one it names with amount 0 (as parsed
  // from "CPU=0") removes it.
  void Override(const ResourceSet& other);

  const std::map<std::string, int64_t>& units() const { return units_; }
  // "CPU=8,GPU=2,memory=34359738368"
  std::string ToString() const;

  bool operator==(const ResourceSet& o) const { return units_ == o.units_; }

 private:
  std::map<std::string, int64_t> units_;  // name -> amount * kUnit, only amounts > 0
  std::map<std::string, bool> zeros_;     // names given explicitly as 0 (for Override)
};

using Labels = std::map<std::string, std::string>;

// Labels the autoscaler sets on every node it launches (a cluster file may not set them). A node
// with kNodeTypeLabel is rented: it costs money while it lives and the autoscaler removes it once
// idle, so placement fills the other nodes first and packs work onto few rented ones.
inline constexpr const char* kNodeTypeLabel = "cumulus.node_type";      // the type's name
inline constexpr const char* kInstanceIdLabel = "cumulus.instance_id";  // the provider's id

// Work that waits on a node for resources: `count` tasks or actors (or placement-group bundles) of
// one `shape`, with the label selector they were given ("" for none; LabelSelector::ToString's
// text), who they are for (`purpose`: "trial asha/7", set by the caller with SetPurpose; "" for
// none), why they wait (`reason`: the placement's words) and, for work with hard affinity to one
// node, that node's id in hex (`pinned_to`: no other node, and so no node an autoscaler launches,
// can run it; "" for none). Reported in heartbeats, read by the autoscaler's monitor and
// `cumulus status`.
struct PendingDemand {
  PendingDemand() = default;
  PendingDemand(ResourceSet s, uint32_t c, std::string sel = "", std::string p = "",
                std::string r = "", std::string pin = "")
      : shape(std::move(s)),
        count(c),
        selector(std::move(sel)),
        purpose(std::move(p)),
        reason(std::move(r)),
        pinned_to(std::move(pin)) {}
  ResourceSet shape;
  uint32_t count = 0;
  std::string selector;
  std::string purpose;
  std::string reason;
  std::string pinned_to;
  bool operator==(const PendingDemand& o) const {
    return shape == o.shape && count == o.count && selector == o.selector && purpose == o.purpose &&
           reason == o.reason && pinned_to == o.pinned_to;
  }
  bool operator!=(const PendingDemand& o) const { return !(*this == o); }
};
using DemandList = std::vector<PendingDemand>;

// Splits "a,b,,c" at `sep` into {"a", "b", "", "c"} (empty items are kept, for the parsers to
// reject).
std::vector<std::string_view> SplitList(std::string_view s, char sep);

// Parses "site=onprem,gpu_type=A100". Keys and values: letters, digits, '_', '-', '.', '/'.
Result<Labels> ParseLabels(std::string_view spec);
std::string LabelsToString(const Labels& labels);

}  // namespace cumulus
