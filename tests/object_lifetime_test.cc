// Object lifetime with real processes (`cumulus start` head and nodes on loopback, and
// object_lifetime_driver.cc): an object nothing references any more is deleted from the store it
// lives in while its job runs on, and an object whose node is SIGKILLed and that may not be
// rebuilt fails Get with ObjectLost saying why (docs/api.md, docs/fault_tolerance.md).
#include <gtest/gtest.h>
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "cluster_fixture.h"

namespace cumulus {
namespace {

class ObjectLifetimeTest : public ClusterTest {
 protected:
  // The driver program (tens of MiB with debug information) travels through the nodes' stores.
  void SetUp() override {
    ClusterTest::SetUp();
    head_store_memory_ = "256M";
    node_store_memory_ = "256M";
  }
  std::unique_ptr<Subprocess> Driver(const std::string& scenario, const std::string& socket,
                                     std::vector<std::string> args = {}) {
    args.insert(args.begin(), "--scenario=" + scenario);
    return StartDriver("object_lifetime_driver", std::move(args), socket);
  }
  // The store of the node inside the head process `head`.
  std::string HeadStore(const Subprocess& head) {
    return dir_.path() + "/head/node-" + std::to_string(head.pid()) + "/store.sock";
  }
  // Kills the node daemon `node` and waits until the head has declared it DEAD.
  void KillNode(Subprocess& node, const std::string& id) {
    node.Kill(SIGKILL);
    (void)node.Wait(10s);
    EXPECT_TRUE(WaitForState(id, NodeState::kDead, 15s)) << "node " << id << " is not DEAD";
  }
};

TEST_F(ObjectLifetimeTest, UnreferencedObjectsAreFreedWhereTheyLiveWhileTheJobRuns) {
  auto head = StartHead({"--resources", "CPU=1"});
  std::string d = HeadNodeId(), b, ready_b;
  auto node_b = StartNode("b", {"--resources", "CPU=1"}, &b, &ready_b);
  ASSERT_FALSE(d.empty() || b.empty());
  std::string store_d = HeadStore(*head), store_b = Field(ready_b, "store_socket");
  auto driver = Driver("free", CoreSocket(d), {"--b=" + b});
  auto held = driver->WaitForLine("HELD", 120s);
  ASSERT_TRUE(held) << driver->ReadAll(1s);
  std::string made = Field(*held, "made"), put = Field(*held, "put");
  // A task's result lives where the task ran; the driver's Get pulled a copy to its node; a Put
  // object lives in the driver's node.
  EXPECT_EQ(Holds(store_b, made), true) << *held;
  EXPECT_EQ(Holds(store_d, made), true) << *held;
  EXPECT_EQ(Holds(store_d, put), true) << *held;
  Touch("seen");
  ASSERT_TRUE(driver->WaitForLine("DROPPED", 60s)) << driver->ReadAll(1s);
  // The driver dropped its references and goes on (it waits for "freed"): each copy goes.
  EXPECT_TRUE(WaitUntil([&] { return Holds(store_b, made) == false; }, 10s))
      << "task result " << made << " is still in node b's store";
  EXPECT_TRUE(WaitUntil([&] { return Holds(store_d, made) == false; }, 10s))
      << "the copy of " << made << " pulled by Get is still in the driver's node's store";
  EXPECT_TRUE(WaitUntil([&] { return Holds(store_d, put) == false; }, 10s))
      << "Put object " << put << " is still in the driver's node's store";
  Touch("freed");
  ExpectChecks(driver->ReadAll(60s), {"objects_made", "job_runs_on"});
}

TEST_F(ObjectLifetimeTest, APutObjectWhoseNodeDiedIsObjectLost) {
  auto head = StartHead({"--resources", "CPU=1", "--disconnect-grace-ms", "300"});
  std::string p;
  auto node_p = StartNode("p", {"--resources", "CPU=1"}, &p);
  ASSERT_FALSE(p.empty());
  auto driver = Driver("put_lost", CoreSocket(p));
  ASSERT_TRUE(driver->WaitForLine("READY", 120s)) << driver->ReadAll(1s);
  KillNode(*node_p, p);
  Touch("killed");
  std::string out = driver->ReadAll(60s);
  ExpectChecks(out, {"put_readable", "put_is_object_lost"});
}

TEST_F(ObjectLifetimeTest, AnObjectLostAFourthTimeIsNotRebuilt) {
  // A short grace: a killed node is DEAD 300 ms after its connection to the head closes.
  auto head = StartHead({"--resources", "CPU=1", "--disconnect-grace-ms", "300"});
  std::string d = HeadNodeId();
  // Only one node at a time has "slot": the object, and each rebuild of it, is made there.
  std::vector<std::unique_ptr<Subprocess>> nodes(5);
  std::vector<std::string> ids(5);
  auto start = [&](int i) {
    nodes[i] = StartNode("v" + std::to_string(i), {"--resources", "CPU=2,slot=2"}, &ids[i]);
    ASSERT_FALSE(ids[i].empty());
  };
  start(1);
  auto driver = Driver("rebuild", CoreSocket(d));
  auto made = driver->WaitForLine("MADE", 120s);
  ASSERT_TRUE(made) << driver->ReadAll(1s);
  EXPECT_EQ(Field(*made, "on"), ids[1]) << *made;
  for (int round = 1; round <= 3; ++round) {
    start(round + 1);
    KillNode(*nodes[round], ids[round]);
    Touch("killed-" + std::to_string(round));
    auto rebuilt = driver->WaitForLine("REBUILT " + std::to_string(round), 60s);
    ASSERT_TRUE(rebuilt) << driver->ReadAll(1s);
    EXPECT_EQ(Field(*rebuilt, "on"), ids[round + 1]) << *rebuilt;
  }
  KillNode(*nodes[4], ids[4]);
  Touch("killed-4");
  std::string out = driver->ReadAll(60s);
  ExpectChecks(out, {"made", "rebuilt_1", "rebuilt_2", "rebuilt_3", "lost_after_3_rebuilds",
                     "reader_fails_too"});
}

}  // namespace
}  // namespace cumulus
