// HeadSession: how long a call that needs the head waits for one that is down or hangs
// (docs/fault_tolerance.md: 60 s by default, then it fails naming the head).
#include "workers/head_session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>

#include "runtime/base/subprocess.h"
#include "runtime/net/tcp.h"
#include "workers/core_worker.h"

namespace cumulus {
namespace {

using namespace std::chrono_literals;

// A clock that moves only when told to, and counts how often it is read.
class CountingClock final : public Clock {
 public:
  TimePoint Now() const override {
    reads_++;
    return fake_.Now();
  }
  int64_t WallMicros() const override { return fake_.WallMicros(); }
  void AdvanceTime(Duration d) { fake_.AdvanceTime(d); }
  int reads() const { return reads_; }

 private:
  FakeClock fake_;
  mutable std::atomic<int> reads_{0};
};

// A loopback port that nothing listens on: connections are refused, as by a head that is down.
HostPort PortOfADeadHead() {
  uint16_t port = 0;
  auto fd = ListenTcp("127.0.0.1", 0, &port);
  EXPECT_TRUE(fd.ok()) << fd.status();
  if (fd.ok()) close(*fd);
  return HostPort{"127.0.0.1", port};
}

Result<std::string> KvGet(ControlClient& head) { return head.KvGet("ns", "key"); }

TEST(HeadSessionTest, ByDefaultACallWaitsSixtySecondsForTheHeadThenFailsNamingIt) {
  EXPECT_EQ(HeadSession::kDefaultWait, 60s);
  EXPECT_EQ(CoreWorkerOptions().head_wait, HeadSession::kDefaultWait);
  CountingClock clock;
  HostPort head = PortOfADeadHead();
  HeadSession session(head, "token", "driver", clock);
  EXPECT_EQ(session.wait(), 60s);
  auto call = std::async(std::launch::async, [&] { return session.Call(KvGet); });
  struct Unblock {  // whatever fails below, the call ends before the test does
    HeadSession& session;
    ~Unblock() { session.StopWaiting(); }
  } unblock{session};
  // The call reads the clock for its deadline, then at every try (twice: for the time left to
  // connect, and to decide whether to try again after the head refused it).
  ASSERT_TRUE(WaitUntil([&] { return clock.reads() >= 3; }, 10'000ms)) << "the call did not try";
  // Four more reads after the clock moved: a try began after the call saw 58 s pass and went on.
  clock.AdvanceTime(58s);
  int reads = clock.reads();
  ASSERT_TRUE(WaitUntil([&] { return clock.reads() >= reads + 4; }, 10'000ms))
      << "the call stopped trying before 60 s";
  EXPECT_EQ(call.wait_for(0s), std::future_status::timeout) << "it gave up before 60 s";
  clock.AdvanceTime(3s);
  ASSERT_EQ(call.wait_for(10s), std::future_status::ready) << "it still waits after 61 s";
  auto r = call.get();
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
  EXPECT_NE(r.status().message().find("the head at " + head.ToString() +
                                      " could not be reached for 60 s"),
            std::string::npos)
      << r.status();
}

TEST(HeadSessionTest, NoTryOfACallOutlastsItsWaitWhenTheHeadDoesNotAnswer) {
  // A head that hangs (SIGSTOP, a frozen VM): the kernel accepts the connection, nothing answers.
  uint16_t port = 0;
  auto listener = ListenTcp("127.0.0.1", 0, &port);
  ASSERT_TRUE(listener.ok()) << listener.status();
  HeadSession session(HostPort{"127.0.0.1", port}, "token", "driver", SystemClock::Get(), 300ms);
  auto start = std::chrono::steady_clock::now();
  auto r = session.Call(KvGet);
  auto took = std::chrono::steady_clock::now() - start;
  close(*listener);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
  EXPECT_NE(r.status().message().find("could not be reached for 300 ms"), std::string::npos)
      << r.status();
  // Not the 5 s a connection's hello may take, nor the 35 s of a request.
  EXPECT_LT(took, 3s) << "a try waited longer than the call may";
}

}  // namespace
}  // namespace cumulus
