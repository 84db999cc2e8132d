// For cluster tests that run the autoscaler with the local provider: what it has launched.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/autoscaler/local_provider.h"
#include "runtime/base/clock.h"

namespace cumulus {

// The local provider's instances of `cluster_name` (state under `state_dir`) that are pending or
// running. `*provider` is made on first use and kept, so a test's teardown can terminate them.
inline std::vector<Instance> LiveLocalInstances(std::unique_ptr<LocalProvider>* provider,
                                                const std::string& binary,
                                                const std::string& state_dir,
                                                const std::string& cluster_name) {
  if (!*provider) {
    LocalProviderOptions o;
    o.cumulus_binary = binary;
    o.state_dir = state_dir;
    o.cluster_name = cluster_name;
    auto p = LocalProvider::Create(o);
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return {};
    *provider = std::move(*p);
  }
  std::vector<Instance> out;
  auto listed = (*provider)->List(SystemClock::Get().Now() + std::chrono::seconds(10));
  if (!listed.ok()) return out;
  for (auto& in : *listed) {
    if (in.state == InstanceState::kPending || in.state == InstanceState::kRunning) {
      out.push_back(in);
    }
  }
  return out;
}

}  // namespace cumulus
