#include "runtime/node/finished_tasks.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace cumulus {
namespace {

FinishedTask Numbered(int n) {
  FinishedTask t;
  t.function = "f" + std::to_string(n);
  return t;
}

TEST(FinishedTasksTest, KeepsTheNewestUpToItsCapacityNewestFirst) {
  FinishedTasks ring(3);
  for (int i = 0; i < 5; ++i) ring.Add(Numbered(i));
  std::vector<std::string> seen;
  ring.ForEach([&](const FinishedTask& t) { seen.push_back(t.function); });
  EXPECT_EQ(seen, (std::vector<std::string>{"f4", "f3", "f2"}));
  EXPECT_EQ(ring.dropped(), 2u);

  FinishedTasks off(0);
  off.Add(Numbered(1));
  EXPECT_EQ(off.size(), 0u);
}

TEST(FinishedTasksTest, RecordsAFailureWithEachEarlierAttempt) {
  RoutedTask t;
  t.function = "Flaky";
  t.attempt = 1;
  t.max_retries = 2;
  t.AddAttempt({"node-a", 42, "killed by signal 9", 1000});
  FinishedTask f = FinishedFrom(t, "node-b", 43, "w", Status::Unavailable("gone"), 2000);
  EXPECT_TRUE(f.failed);
  EXPECT_EQ(f.error, Status::Unavailable("gone").ToString());
  ASSERT_EQ(f.attempts.size(), 1u);
  EXPECT_EQ(f.attempts[0].cause, "killed by signal 9");
  EXPECT_FALSE(FinishedFrom(t, "node-b", 43, "w", Status(), 2000).failed);
}

TEST(FinishedTasksTest, TheEnvironmentSetsTheCapacityOrSaysWhatIsWrong) {
  unsetenv("CUMULUS_FINISHED_TASKS");
  EXPECT_EQ(*FinishedTasksFromEnv(7), 7u);
  setenv("CUMULUS_FINISHED_TASKS", "12", 1);
  EXPECT_EQ(*FinishedTasksFromEnv(7), 12u);
  setenv("CUMULUS_FINISHED_TASKS", "many", 1);
  auto bad = FinishedTasksFromEnv(7);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("CUMULUS_FINISHED_TASKS"), std::string::npos);
  unsetenv("CUMULUS_FINISHED_TASKS");
}

}  // namespace
}  // namespace cumulus
