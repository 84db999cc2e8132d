#include "runtime/autoscaler/monitor_books.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/autoscaler/monitor_status.h"

namespace cumulus {
namespace {

TEST(MonitorBooksTest, EncodeDecodeRoundTrip) {
  MonitorBooks b;
  b.spend_until_micros = 1234;
  b.instances["cpu-small-1"] = {"cpu-small-1", "cpu-small", "local", 1000, true};
  b.types["cpu-small"].spend = 0.125;
  b.types["cpu-small"].failed_launches = 3;
  b.types["cpu-small"].history = {2, 999, "injected launch failure\\nsecond line"};
  auto back = DecodeBooks(EncodeBooks(b));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(EncodeBooks(*back), EncodeBooks(b));
  EXPECT_TRUE(back->instances.at("cpu-small-1").draining);
  EXPECT_EQ(back->types.at("cpu-small").history.failures_in_a_row, 2);
  EXPECT_FALSE(DecodeBooks("instance only-an-id\n").ok());
}

// Whether an instance's node registered is kept (a restarted monitor must not take its end
// for a failed launch); books written before it was kept read back as not registered.
TEST(MonitorBooksTest, RegisteredIsKeptAndOldBooksStillRead) {
  MonitorBooks b;
  b.instances["a"] = {"a", "t", "local", 10, false, /*registered=*/true};
  b.instances["b"] = {"b", "t", "local", 20, true, /*registered=*/false};
  auto back = DecodeBooks(EncodeBooks(b));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->instances.at("a").registered);
  EXPECT_FALSE(back->instances.at("b").registered);
  EXPECT_TRUE(back->instances.at("b").draining);
  auto old = DecodeBooks("until 5\ninstance c t local 30 1\n");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_FALSE(old->instances.at("c").registered);
  EXPECT_TRUE(old->instances.at("c").draining);
}

// A launch of 3 nodes whose nodes fail one by one (each timing out, or listed as failed) is one
// failure in a row: the backoff doubles per failed launch, not per node. Another launch's failure
// counts again. Kept across a monitor restart (the books in the head), and old books read.
TEST(MonitorBooksTest, OneLaunchIsOneFailureInARowHoweverManyOfItsNodesFail) {
  MonitorBooks b;
  TypeBooks& t = b.types["gpu"];
  t.CountFailure(1, /*launch_micros=*/1000, /*now_micros=*/5000, "launch timed out");
  t.CountFailure(1, 1000, 5001, "launch timed out");
  t.CountFailure(1, 1000, 5002, "instance failed: no capacity");
  EXPECT_EQ(t.failed_launches, 3);
  EXPECT_EQ(t.history.failures_in_a_row, 1);
  EXPECT_EQ(t.history.last_failure, 5000) << "a later node of the same launch moved the backoff";
  EXPECT_EQ(t.history.last_error, "instance failed: no capacity");
  auto back = DecodeBooks(EncodeBooks(b));
  ASSERT_TRUE(back.ok()) << back.status();
  TypeBooks& restored = back->types.at("gpu");
  restored.CountFailure(1, 1000, 6000, "launch timed out");  // the same launch, after a restart
  EXPECT_EQ(restored.history.failures_in_a_row, 1);
  restored.CountFailure(2, 7000, 8000, "quota exceeded");  // the next launch, both its nodes
  EXPECT_EQ(restored.history.failures_in_a_row, 2);
  EXPECT_EQ(restored.history.last_failure, 8000);
  EXPECT_EQ(restored.failed_launches, 6);
  restored.CountFailure(1, 0, 9000, "x");  // not tied to a launch: each counts
  restored.CountFailure(1, 0, 9001, "x");
  EXPECT_EQ(restored.history.failures_in_a_row, 4);
  auto old = DecodeBooks("type gpu 0 2 2 100 some error\n");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->types.at("gpu").last_failed_launch, 0);
}

// `cumulus status`: while a type is backed off its BACKOFF column says until when and the error;
// once the backoff is over and no node of the type has come up since, the error stays there.
TEST(MonitorBooksTest, StatusKeepsTheLastErrorInSightAfterTheBackoff) {
  ClusterConfig config;
  config.cluster_name = "c";
  MonitorBooks books;
  books.types["gpu"].CountFailure(1, 1000, 10'000'000, "quota exceeded in us-east-1");
  autoscale::Decision d;
  autoscale::TypeReport t;
  t.type = "gpu";
  t.backoff_until = 130'000'000;
  d.types.push_back(t);
  autoscale::Snapshot snap;
  MonitorStatusInput in{&config, &books, &d, &snap, 70'000'000};
  std::string during = StatusText(in);
  EXPECT_NE(during.find("until +60s (quota exceeded in us-east-1)"), std::string::npos) << during;
  in.now_micros = 200'000'000;  // the backoff is over
  std::string after = StatusText(in);
  EXPECT_NE(after.find("- (over; last failed 3m ago: quota exceeded in us-east-1)"),
            std::string::npos)
      << after;
  books.types["gpu"].history = {};  // a node of the type came up
  std::string up = StatusText(in);
  EXPECT_EQ(up.find("quota exceeded"), std::string::npos) << up;
}

// The owner claim: a live process on this host is alive; the same pid with another start time
// (a dead monitor's pid reused) is not, nor is a pid that runs nothing.
TEST(MonitorBooksTest, AnOwnerWhosePidWasReusedIsNotAlive) {
  std::string me = OwnerRecord(getpid(), 1000, 0);
  EXPECT_NE(me.find(" start="), std::string::npos) << me;
  EXPECT_TRUE(OwnerAlive(me, 0));
  std::string reused = me.substr(0, me.find(" start=")) + " start=1";
  EXPECT_FALSE(OwnerAlive(reused, 0)) << reused;
  std::string old = me.substr(0, me.find(" start="));  // a record from before start= was kept
  EXPECT_TRUE(OwnerAlive(old, 0));
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_FALSE(OwnerAlive(OwnerRecord(child, 1000, 0), 0)) << "a reaped pid";
}

TEST(MonitorBooksTest, SpendAccruesPriceTimesTimeOnce) {
  MonitorBooks b;
  b.instances["a"] = {"a", "t", "local", 0, false};
  b.Accrue(1800'000'000, {{"t", 2.0}});  // half an hour at 2/h
  EXPECT_DOUBLE_EQ(b.TotalSpend(), 1.0);
  b.Accrue(1800'000'000, {{"t", 2.0}});  // no time passed: nothing more
  EXPECT_DOUBLE_EQ(b.TotalSpend(), 1.0);
}

}  // namespace
}  // namespace cumulus
