// The monitor's loop (monitor_loop.cc) against a real head in this process and a provider that
// breaks its contract: its launch call ignores the deadline. The loop must give up on the call,
// count the launch as failed, and go on with its rounds meanwhile.
#include "runtime/autoscaler/monitor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "runtime/base/subprocess.h"
#include "runtime/base/temp_dir.h"
#include "runtime/head/head_server.h"

namespace cumulus {
namespace {

using namespace std::chrono_literals;

// Launch blocks until Release(), whatever its deadline; then it fails, or (`launches_late`)
// answers with one instance per call ("late-N").
class StuckProvider : public NodeProvider {
 public:
  explicit StuckProvider(bool launches_late = false) : launches_late_(launches_late) {}
  const std::string& name() const override { return name_; }
  Result<std::vector<std::string>> Launch(const NodeTypeConfig&, int, const LaunchSpec&,
                                          TimePoint) override {
    std::unique_lock<std::mutex> lock(mu_);
    int n = ++launches_;
    released_cv_.wait(lock, [&] { return released_; });
    ++returned_;
    if (launches_late_) return std::vector<std::string>{"late-" + std::to_string(n)};
    return Status::Unavailable("released by the test");
  }
  Result<std::vector<Instance>> List(TimePoint) override { return std::vector<Instance>{}; }
  Status Terminate(const std::string& id, TimePoint) override {
    std::lock_guard<std::mutex> lock(mu_);
    terminated_.push_back(id);
    return Status();
  }
  std::vector<std::string> terminated() {
    std::lock_guard<std::mutex> lock(mu_);
    return terminated_;
  }

  int launches() {
    std::lock_guard<std::mutex> lock(mu_);
    return launches_;
  }
  int returned() {
    std::lock_guard<std::mutex> lock(mu_);
    return returned_;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    released_cv_.notify_all();
  }

 private:
  std::string name_ = "stuck";
  bool launches_late_ = false;
  std::vector<std::string> terminated_;
  std::mutex mu_;
  std::condition_variable released_cv_;
  bool released_ = false;
  int launches_ = 0;
  int returned_ = 0;
};

// Launch answers at once with one instance per call ("i-N"). The first List() blocks until
// Release() and then says that "i-1" was terminated, as a provider that keeps its own records
// does for an instance it did not know of when the listing began; later Lists list nothing.
class GatedListProvider : public NodeProvider {
 public:
  const std::string& name() const override { return name_; }
  Result<std::vector<std::string>> Launch(const NodeTypeConfig&, int, const LaunchSpec&,
                                          TimePoint) override {
    std::lock_guard<std::mutex> lock(mu_);
    return std::vector<std::string>{"i-" + std::to_string(++launches_)};
  }
  Result<std::vector<Instance>> List(TimePoint) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (++lists_ > 1) return std::vector<Instance>{};
    released_cv_.wait(lock, [&] { return released_; });
    Instance ended;
    ended.id = "i-1";
    ended.node_type = "cpu";
    ended.state = InstanceState::kTerminated;
    return std::vector<Instance>{ended};
  }
  Status Terminate(const std::string&, TimePoint) override { return Status(); }

  int launches() {
    std::lock_guard<std::mutex> lock(mu_);
    return launches_;
  }
  int lists() {
    std::lock_guard<std::mutex> lock(mu_);
    return lists_;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    released_cv_.notify_all();
  }

 private:
  std::string name_ = "gated";
  std::mutex mu_;
  std::condition_variable released_cv_;
  bool released_ = false;
  int launches_ = 0;
  int lists_ = 0;
};

// A real head in this process, a control client for the monitor, and options with one cloud
// type ("cpu", the "stuck" provider) that the policy launches with no demand at all (min 1).
class MonitorLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HeadOptions ho;
    ho.port = 0;
    ho.data_dir = dir_.path() + "/head";
    ho.token = *CreateOrLoadToken(dir_.path() + "/token");
    token_ = ho.token;
    auto head = HeadServer::Start(ho);
    ASSERT_TRUE(head.ok()) << head.status();
    head_ = std::move(*head);
    address_ = HostPort{"127.0.0.1", head_->port()};
  }
  Result<std::unique_ptr<ControlClient>> Connect() {
    return ControlClient::Connect(address_, token_);
  }
  // A monitor over `o` with `provider` as its one provider (under its name), on the test's head.
  Result<std::unique_ptr<Monitor>> MonitorWith(const MonitorOptions& o,
                                               std::unique_ptr<NodeProvider> provider) {
    auto client = Connect();
    if (!client.ok()) return client.status();
    std::map<std::string, std::unique_ptr<NodeProvider>> providers;
    std::string name = provider->name();
    providers[name] = std::move(provider);
    return Monitor::Create(o, std::move(*client), std::move(providers));
  }
  static MonitorOptions StuckTypeOptions() {
    MonitorOptions o;
    NodeTypeConfig type;
    type.name = "cpu";
    type.provider = "stuck";
    type.resources = *ResourceSet::Parse("CPU=1");
    type.labels = {{"site", "cloud"}};
    type.boot_time_s = 0;
    type.min_count = 1;
    o.config.node_types = {type};
    o.round = 50ms;
    o.demand_settle = 0ms;
    return o;
  }

  TempDir dir_;
  std::string token_;
  std::unique_ptr<HeadServer> head_;
  HostPort address_;
};

TEST_F(MonitorLoopTest, AProviderCallPastItsDeadlineIsAFailedLaunchAndRoundsGoOn) {
  MonitorOptions o = StuckTypeOptions();
  o.min_launch_timeout = 200ms;  // the launch call's deadline
  o.provider_grace = 200ms;      // given up on 200 ms after it
  o.policy.backoff_base_micros = 100000;
  o.policy.backoff_max_micros = 100000;
  auto stuck = std::make_unique<StuckProvider>();
  StuckProvider* provider = stuck.get();
  auto monitor = MonitorWith(o, std::move(stuck));
  ASSERT_TRUE(monitor.ok()) << monitor.status();

  auto reader = Connect();
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::atomic<bool> stop{false};
  Status ran;
  std::thread loop([&] { ran = (*monitor)->Run(stop); });
  auto failed_by_deadline = [&] {
    auto text = (*reader)->KvGet(kAutoscalerNamespace, kBooksKey);
    if (!text.ok()) return false;
    auto books = DecodeBooks(*text);
    if (!books.ok() || !books->types.count("cpu")) return false;
    const TypeBooks& t = books->types.at("cpu");
    return t.failed_launches >= 1 &&
           t.history.last_error.find("did not return by its deadline") != std::string::npos;
  };
  // The first call is still blocked: the loop gave up on it and, once the backoff passed,
  // launched again.
  EXPECT_TRUE(WaitUntil(failed_by_deadline, 20000ms));
  EXPECT_TRUE(WaitUntil([&] { return provider->launches() >= 2; }, 20000ms))
      << "launch calls: " << provider->launches();
  provider->Release();
  stop = true;
  loop.join();
  EXPECT_EQ(ran.code(), StatusCode::kCancelled) << ran;
}

// `cumulus down` while a launch is in flight (the provider takes as long as it likes): the
// monitor stops within its stop_wait, not when the launch answers; when the launch does answer,
// the instance it made is terminated, not left running.
TEST_F(MonitorLoopTest, DownDoesNotWaitForALaunchAndTerminatesWhatItMadeLate) {
  MonitorOptions o = StuckTypeOptions();
  o.min_launch_timeout = 600s;  // the launch is within its deadline the whole test
  o.stop_wait = 200ms;
  auto stuck = std::make_unique<StuckProvider>(/*launches_late=*/true);
  StuckProvider* provider = stuck.get();
  auto monitor = MonitorWith(o, std::move(stuck));
  ASSERT_TRUE(monitor.ok()) << monitor.status();

  auto commander = Connect();
  ASSERT_TRUE(commander.ok()) << commander.status();
  std::atomic<bool> stop{false};
  std::atomic<bool> returned{false};
  Status ran;
  std::thread loop([&] {
    ran = (*monitor)->Run(stop);
    returned = true;
  });
  ASSERT_TRUE(WaitUntil([&] { return provider->launches() >= 1; }, 20000ms));
  ASSERT_TRUE((*commander)->KvPut(kAutoscalerNamespace, kCommandKey, "down").ok());
  // Run returns while the launch still blocks.
  bool stopped = WaitUntil([&] { return returned.load(); }, 10000ms);
  EXPECT_TRUE(stopped) << "Run waited for the launch in flight";
  if (!stopped) provider->Release();
  loop.join();
  EXPECT_EQ(ran.code(), StatusCode::kCancelled) << ran;
  EXPECT_NE(ran.message().find("cumulus down"), std::string::npos) << ran;
  EXPECT_EQ((*monitor)->late_calls(), 1);
  EXPECT_TRUE(provider->terminated().empty());
  // The launch answers now: what it made is terminated, and not in the books.
  provider->Release();
  (*monitor)->FinishLateCalls();
  EXPECT_EQ((*monitor)->late_calls(), 0);
  EXPECT_EQ(provider->terminated(), std::vector<std::string>{"late-1"});
  EXPECT_EQ((*monitor)->books().instances.count("late-1"), 0u);
}

// A provider call that never returns (within any deadline) does not hang the monitor's
// destructor: it waits destroy_wait, then gives the call up. The provider stays alive for the
// call, which may still return into it.
TEST_F(MonitorLoopTest, DestructorDoesNotWaitForAProviderCallThatNeverReturns) {
  MonitorOptions o = StuckTypeOptions();
  o.min_launch_timeout = 600s;  // the call's own deadline is far off
  o.stop_wait = 100ms;
  o.destroy_wait = 300ms;
  auto stuck = std::make_unique<StuckProvider>();
  StuckProvider* provider = stuck.get();
  auto monitor = MonitorWith(o, std::move(stuck));
  ASSERT_TRUE(monitor.ok()) << monitor.status();
  std::atomic<bool> stop{false};
  std::thread loop([&] { (void)(*monitor)->Run(stop); });
  ASSERT_TRUE(WaitUntil([&] { return provider->launches() >= 1; }, 20000ms));
  stop = true;
  loop.join();
  ASSERT_EQ((*monitor)->late_calls(), 1);

  std::atomic<bool> destroyed{false};
  auto began = std::chrono::steady_clock::now();
  std::thread destroy([&] {
    monitor->reset();
    destroyed = true;
  });
  bool in_time = WaitUntil([&] { return destroyed.load(); }, 10000ms);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  if (!in_time) provider->Release();  // (the old behaviour: it waits for the call)
  destroy.join();
  EXPECT_TRUE(in_time) << "the destructor waited for a provider call that never returns";
  EXPECT_LT(took, 5.0);
  // The call returns after all, into a provider that still exists.
  provider->Release();
  EXPECT_TRUE(WaitUntil([&] { return provider->returned() == 1; }, 10000ms));
}

// A List() that began before a Launch() did may say the launched instance ended (it could not
// know of it yet): the monitor keeps the instance on its books and launches nothing in its
// place. Only a List that began after the launch may take it off. (The slurm provider had this
// race; any provider, a `command` list script, may too.)
TEST_F(MonitorLoopTest, AListingThatBeganBeforeALaunchDoesNotEndItsInstance) {
  MonitorOptions o = StuckTypeOptions();  // min 1 of type "cpu": one launch at once
  o.config.node_types[0].provider = "gated";
  o.stop_wait = 2s;
  auto gated = std::make_unique<GatedListProvider>();
  GatedListProvider* provider = gated.get();
  auto monitor = MonitorWith(o, std::move(gated));
  ASSERT_TRUE(monitor.ok()) << monitor.status();
  auto reader = Connect();
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto booked = [&](const std::string& id) {
    auto text = (*reader)->KvGet(kAutoscalerNamespace, kBooksKey);
    if (!text.ok()) return false;
    auto books = DecodeBooks(*text);
    return books.ok() && books->instances.count(id) == 1;
  };
  std::atomic<bool> stop{false};
  std::thread loop([&] { (void)(*monitor)->Run(stop); });
  // The first round starts the List (it blocks) and then the launch, which answers: i-1 is on
  // the books while the List that began before it is still running.
  bool launched = WaitUntil([&] { return booked("i-1"); }, 20000ms);
  EXPECT_TRUE(launched) << "the monitor never booked its launch";
  EXPECT_EQ(provider->lists(), 1);
  // That List now says i-1 ended. Rounds go on; by the third List, the round after the
  // answer came has acted on it.
  provider->Release();
  EXPECT_TRUE(WaitUntil([&] { return provider->lists() >= 3; }, 20000ms))
      << "lists: " << provider->lists();
  EXPECT_TRUE(booked("i-1")) << "the monitor forgot i-1 on a listing older than its launch";
  stop = true;
  loop.join();
  EXPECT_EQ(provider->launches(), 1) << "a second node launched for the same need";
  EXPECT_EQ((*monitor)->books().instances.size(), 1u);
  EXPECT_EQ((*monitor)->books().instances.count("i-1"), 1u);
}

// A launch that answers after its node registered (a slow provider call; the node adopted by a
// round meanwhile) keeps the books' entry of the adopted instance: still registered, though its
// node has since stopped. (The answer used to replace the entry, so the instance read as a
// launch that never came up: "launching" until its timeout, then a failed launch.)
TEST_F(MonitorLoopTest, ALaunchThatAnswersAfterItsNodeRegisteredKeepsItRegistered) {
  MonitorOptions o = StuckTypeOptions();
  o.min_launch_timeout = 600s;  // the launch is within its deadline the whole test
  o.stop_wait = 2s;
  auto stuck = std::make_unique<StuckProvider>(/*launches_late=*/true);
  StuckProvider* provider = stuck.get();
  auto monitor = MonitorWith(o, std::move(stuck));
  ASSERT_TRUE(monitor.ok()) << monitor.status();
  auto reader = Connect();
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto node_client = Connect();
  ASSERT_TRUE(node_client.ok()) << node_client.status();
  auto entry = [&]() -> std::optional<LaunchedInstance> {
    auto text = (*reader)->KvGet(kAutoscalerNamespace, kBooksKey);
    if (!text.ok()) return std::nullopt;
    auto books = DecodeBooks(*text);
    if (!books.ok() || !books->instances.count("late-1")) return std::nullopt;
    return books->instances.at("late-1");
  };
  std::atomic<bool> stop{false};
  std::thread loop([&] { (void)(*monitor)->Run(stop); });
  ASSERT_TRUE(WaitUntil([&] { return provider->launches() >= 1; }, 20000ms));
  // Its node registers while the launch call still blocks: a round adopts it.
  NodeRecord n;
  n.id = NodeId::FromRandom();
  n.total = *ResourceSet::Parse("CPU=1");
  n.available = n.total;
  n.labels = {{kNodeTypeLabel, "cpu"}, {kInstanceIdLabel, "late-1"}, {"site", "cloud"}};
  ASSERT_TRUE((*node_client)->RegisterNode(n).ok());
  bool adopted = WaitUntil(
      [&] {
        auto e = entry();
        return e && e->registered;
      },
      20000ms);
  std::optional<LaunchedInstance> first = adopted ? entry() : std::nullopt;
  adopted = adopted && first;
  int64_t adopted_at = adopted ? first->launched_micros : 0;
  // The node stops without a drain (so no round marks it registered again), then the launch
  // answers: its answer dates the instance from when it was asked for, and keeps the rest.
  ASSERT_TRUE((*node_client)->Leave(n.id, "stopped by the test").ok());
  provider->Release();
  bool answered = adopted && WaitUntil(
                                 [&] {
                                   auto e = entry();
                                   return e && e->launched_micros < adopted_at;
                                 },
                                 20000ms);
  auto e = entry();
  stop = true;
  loop.join();
  ASSERT_TRUE(adopted) << "no round adopted the registered node";
  ASSERT_TRUE(answered) << "the late answer was never booked";
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->registered) << "the late answer reset the adopted instance's flags";
}

}  // namespace
}  // namespace cumulus
