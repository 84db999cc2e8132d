// The monitor's loop (monitor_loop.cc) against a real head in this process and a provider that
// breaks its contract: its launch call ignores the deadline. The loop must give up on the call,
// count the launch as failed, and go on with its rounds meanwhile.
#include "runtime/autoscaler/monitor.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "runtime/base/subprocess.h"
#include "runtime/base/temp_dir.h"
#include "runtime/head/head_server.h"

namespace cumulus {
namespace {

using namespace std::chrono_literals;

// Launch blocks until Release(), whatever its deadline.
class StuckProvider : public NodeProvider {
 public:
  const std::string& name() const override { return name_; }
  Result<std::vector<std::string>> Launch(const NodeTypeConfig&, int, const LaunchSpec&,
                                          TimePoint) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++launches_;
    released_cv_.wait(lock, [&] { return released_; });
    return Status::Unavailable("released by the test");
  }
  Result<std::vector<Instance>> List(TimePoint) override { return std::vector<Instance>{}; }
  Status Terminate(const std::string&, TimePoint) override { return Status(); }

  int launches() {
    std::lock_guard<std::mutex> lock(mu_);
    return launches_;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    released_cv_.notify_all();
  }

 private:
  std::string name_ = "stuck";
  std::mutex mu_;
  std::condition_variable released_cv_;
  bool released_ = false;
  int launches_ = 0;
};

TEST(MonitorLoopTest, AProviderCallPastItsDeadlineIsAFailedLaunchAndRoundsGoOn) {
  TempDir dir;
  HeadOptions ho;
  ho.port = 0;
  ho.data_dir = dir.path() + "/head";
  ho.token = *CreateOrLoadToken(dir.path() + "/token");
  auto head = HeadServer::Start(ho);
  ASSERT_TRUE(head.ok()) << head.status();
  HostPort address{"127.0.0.1", (*head)->port()};
  auto client = ControlClient::Connect(address, ho.token);
  ASSERT_TRUE(client.ok()) << client.status();

  MonitorOptions o;
  NodeTypeConfig type;
  type.name = "cpu";
  type.provider = "stuck";
  type.resources = *ResourceSet::Parse("CPU=1");
  type.labels = {{"site", "cloud"}};
  type.boot_time_s = 0;
  type.min_count = 1;  // the policy launches one with no demand at all
  o.config.node_types = {type};
  o.round = 50ms;
  o.demand_settle = 0ms;
  o.min_launch_timeout = 200ms;  // the launch call's deadline
  o.provider_grace = 200ms;      // given up on 200 ms after it
  o.policy.backoff_base_micros = 100000;
  o.policy.backoff_max_micros = 100000;
  auto stuck = std::make_unique<StuckProvider>();
  StuckProvider* provider = stuck.get();
  std::map<std::string, std::unique_ptr<NodeProvider>> providers;
  providers["stuck"] = std::move(stuck);
  auto monitor = Monitor::Create(o, std::move(*client), std::move(providers));
  ASSERT_TRUE(monitor.ok()) << monitor.status();

  auto reader = ControlClient::Connect(address, ho.token);
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

}  // namespace
}  // namespace cumulus
