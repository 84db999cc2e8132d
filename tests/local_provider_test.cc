// The local provider with real processes: a real head (ClusterTest), node daemons launched
// through the provider, seen (and seen leaving) through the head's view.
#include "runtime/autoscaler/local_provider.h"

#include <gtest/gtest.h>

#include "cluster_fixture.h"

namespace cumulus {
namespace {

TimePoint In(Duration d) { return SystemClock::Get().Now() + d; }

class LocalProviderTest : public ClusterTest {
 protected:
  // A provider owned by the fixture (TearDown terminates what it launched).
  LocalProvider* Make(LocalProviderSettings settings) {
    LocalProviderOptions o;
    o.name = "local";
    o.settings = settings;
    o.settings.object_store_memory = "32M";
    o.cumulus_binary = kCumulus;
    o.state_dir = dir_.path() + "/provider";
    o.cluster_name = "test";
    auto p = LocalProvider::Create(o);
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return nullptr;
    providers_.push_back(std::move(*p));
    return providers_.back().get();
  }

  NodeTypeConfig Type() {
    NodeTypeConfig t;
    t.name = "cpu-small";
    t.provider = "local";
    t.resources = *ResourceSet::Parse("CPU=3,custom_x=2");
    t.labels = {{"site", "cloud"}, {"region", "here-1"}};
    return t;
  }
  LaunchSpec Spec() { return {address_, token_file_}; }

  // The provider's view of instance `id` (state kFailed with detail "not listed" if absent).
  Instance Get(LocalProvider& p, const std::string& id) {
    auto listed = p.List(In(10s));
    EXPECT_TRUE(listed.ok()) << listed.status();
    if (listed.ok()) {
      for (auto& in : *listed) {
        if (in.id == id) return in;
      }
    }
    Instance none;
    none.state = InstanceState::kFailed;
    none.detail = "not listed";
    return none;
  }

  // Waits until instance `id` is in `state`; returns it as last listed.
  Instance WaitFor(LocalProvider& p, const std::string& id, InstanceState state,
                   std::chrono::milliseconds timeout = 30s) {
    Instance last;
    WaitUntil(
        [&] {
          last = Get(p, id);
          return last.state == state;
        },
        timeout);
    return last;
  }

  void TearDown() override {
    // Nothing launched outlives the test.
    for (auto& p : providers_) {
      auto listed = p->List(In(10s));
      if (!listed.ok()) continue;
      for (auto& in : *listed) (void)p->Terminate(in.id, In(10s));
    }
  }
  std::vector<std::unique_ptr<LocalProvider>> providers_;
};

TEST_F(LocalProviderTest, LaunchedNodeJoinsWithItsLabelsAndLeavesOnTerminate) {
  auto head = StartHead({});
  auto p = Make({});
  ASSERT_TRUE(p);
  auto ids = p->Launch(Type(), 1, Spec(), In(10s));
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_EQ(ids->size(), 1u);
  std::string id = (*ids)[0];
  EXPECT_EQ(id.rfind("cpu-small-", 0), 0u) << id;

  Instance in = WaitFor(*p, id, InstanceState::kRunning);
  ASSERT_EQ(in.state, InstanceState::kRunning) << in.detail;
  EXPECT_EQ(in.node_type, "cpu-small");
  ASSERT_FALSE(in.node_id.empty());

  // The head knows the node, with the type's resources and labels and the two of the provider.
  ASSERT_TRUE(WaitForState(in.node_id, NodeState::kAlive, 10s));
  ClusterView v = View();
  const NodeRecord* node = Find(v, in.node_id);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->total.Get("CPU"), 3);
  EXPECT_EQ(node->total.Get("custom_x"), 2);
  EXPECT_EQ(node->total.Get("GPU"), 0);
  EXPECT_EQ(node->labels.at("site"), "cloud");
  EXPECT_EQ(node->labels.at("region"), "here-1");
  EXPECT_EQ(node->labels.at(kNodeTypeLabel), "cpu-small");
  EXPECT_EQ(node->labels.at(kInstanceIdLabel), id);

  // Terminate: the node leaves on purpose (STOPPED, not a failure), the instance is terminated.
  ASSERT_TRUE(p->Terminate(id, In(20s)).ok());
  ASSERT_TRUE(WaitForState(in.node_id, NodeState::kDead, 10s));
  v = View();
  node = Find(v, in.node_id);
  ASSERT_NE(node, nullptr);
  EXPECT_TRUE(node->left) << node->death_reason;
  EXPECT_EQ(Get(*p, id).state, InstanceState::kTerminated);
  // Terminating again is fine; an unknown id is NotFound.
  EXPECT_TRUE(p->Terminate(id, In(5s)).ok());
  EXPECT_EQ(p->Terminate("cpu-small-nope", In(5s)).code(), StatusCode::kNotFound);
}

TEST_F(LocalProviderTest, BootDelayIsHonoured) {
  auto head = StartHead({});
  LocalProviderSettings s;
  s.boot_delay_s = 2;
  auto p = Make(s);
  ASSERT_TRUE(p);
  auto start = std::chrono::steady_clock::now();
  auto ids = p->Launch(Type(), 2, Spec(), In(10s));
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_EQ(ids->size(), 2u);
  EXPECT_NE((*ids)[0], (*ids)[1]);
  // Launch returns at once; the instances are pending while they "boot".
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(Get(*p, (*ids)[0]).state, InstanceState::kPending);
  for (auto& id : *ids) {
    Instance in = WaitFor(*p, id, InstanceState::kRunning);
    ASSERT_EQ(in.state, InstanceState::kRunning) << in.detail;
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, 2s);
  int cloud = 0;
  for (auto& n : View().nodes) cloud += n.labels.count(kNodeTypeLabel) ? 1 : 0;
  EXPECT_EQ(cloud, 2);
}

TEST_F(LocalProviderTest, InjectedFailureIsReported) {
  auto head = StartHead({});
  LocalProviderSettings s;
  s.failure_rate = 1;
  s.seed = 42;
  auto p = Make(s);
  ASSERT_TRUE(p);
  auto ids = p->Launch(Type(), 1, Spec(), In(10s));
  ASSERT_TRUE(ids.ok()) << ids.status();
  Instance in = WaitFor(*p, (*ids)[0], InstanceState::kFailed);
  ASSERT_EQ(in.state, InstanceState::kFailed);
  EXPECT_NE(in.detail.find("injected launch failure (failure_rate 1, seed 42)"), std::string::npos)
      << in.detail;
  EXPECT_TRUE(in.node_id.empty());
  for (auto& n : View().nodes) EXPECT_EQ(n.labels.count(kNodeTypeLabel), 0u);
}

TEST_F(LocalProviderTest, ANodeThatCannotJoinIsFailedWithItsError) {
  auto head = StartHead({});
  auto p = Make({});
  ASSERT_TRUE(p);
  LaunchSpec wrong = Spec();
  wrong.token_file = dir_.path() + "/no-such-token";
  auto ids = p->Launch(Type(), 1, wrong, In(10s));
  ASSERT_TRUE(ids.ok()) << ids.status();
  Instance in = WaitFor(*p, (*ids)[0], InstanceState::kFailed);
  ASSERT_EQ(in.state, InstanceState::kFailed);
  EXPECT_NE(in.detail.find("no-such-token"), std::string::npos) << in.detail;
}

TEST_F(LocalProviderTest, ARestartedProviderFindsItsInstances) {
  auto head = StartHead({});
  std::string id, node_id;
  {
    auto first = Make({});  // the first provider, forgotten below as if its head restarted
    ASSERT_TRUE(first);
    auto ids = first->Launch(Type(), 1, Spec(), In(10s));
    ASSERT_TRUE(ids.ok()) << ids.status();
    id = (*ids)[0];
    Instance in = WaitFor(*first, id, InstanceState::kRunning);
    ASSERT_EQ(in.state, InstanceState::kRunning) << in.detail;
    node_id = in.node_id;
  }
  providers_.clear();  // the provider goes away; its node keeps running
  auto second = Make({});
  ASSERT_TRUE(second);
  Instance in = Get(*second, id);
  EXPECT_EQ(in.state, InstanceState::kRunning) << in.detail;
  EXPECT_EQ(in.node_id, node_id);
  EXPECT_EQ(in.node_type, "cpu-small");
  ASSERT_TRUE(second->Terminate(id, In(20s)).ok());
  ASSERT_TRUE(WaitForState(node_id, NodeState::kDead, 10s));
  EXPECT_EQ(Get(*second, id).state, InstanceState::kTerminated);
}

}  // namespace
}  // namespace cumulus
