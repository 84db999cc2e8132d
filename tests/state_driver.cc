// The driver of tests/state_test.cc: work for `cumulus list|describe|top` to see.
//   --scenario=many     --n=N --objects=M: one task that holds a CPU until DIR/go, N more queued
//                       behind it, M objects of 100 KiB put in its node's store; READY, then waits
//                       for DIR/go and for every task to finish
//   --scenario=pending  on a node of 2 CPUs started with --wait-for-nodes: HoldRetried and
//                       HoldUntil hold both CPUs, Quick wants 2 CPUs (waiting), Impossible wants
//                       a resource no node has (infeasible); READY; the test kills HoldRetried's
//                       worker and touches DIR/go; HoldRetried's second attempt must succeed
#include <cumulus/cumulus.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "driver_checks.h"

namespace {

bool WaitForFile(const std::string& path) {
  while (access(path.c_str(), F_OK) != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // (a file barrier: polled)
  }
  return true;
}
int HoldUntil(std::string path) { return WaitForFile(path) ? 1 : 0; }
int HoldRetried(std::string path) { return WaitForFile(path) ? 2 : 0; }
int Quick(int x) { return x + 1; }
int Impossible() { return 0; }

}  // namespace

CUMULUS_REMOTE(HoldUntil, HoldRetried, Quick, Impossible);

namespace {

void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void Many(const std::string& dir, int n, int objects) {
  auto hold = cumulus::Task(HoldUntil).Remote(dir + "/go");
  std::vector<cumulus::ObjectRef<int>> queued;
  queued.reserve(n);
  for (int i = 0; i < n; ++i) queued.push_back(cumulus::Task(Quick).Remote(i));
  // Just over the size kept inline in the driver: each goes to the node's store.
  std::string bytes(100 * 1024 + 1, 'x');
  std::vector<cumulus::ObjectRef<std::string>> puts;
  for (int i = 0; i < objects; ++i) puts.push_back(cumulus::Put(bytes));
  Say("READY");
  WaitForFile(dir + "/go");
  bool all = true;
  for (int i = 0; i < n; ++i) {
    auto r = cumulus::TryGet(queued[i], std::chrono::seconds(60));
    all = all && r.ok() && *r == i + 1;
  }
  driver::Check("queued_tasks_finished", all, "a queued task failed");
}

void Pending(const std::string& dir) {
  auto retried = cumulus::Task(HoldRetried).SetMaxRetries(2).Remote(dir + "/go");
  auto hold = cumulus::Task(HoldUntil).Remote(dir + "/go");
  auto waiting = cumulus::Task(Quick).SetResource("CPU", 2).Remote(1);
  auto impossible = cumulus::Task(Impossible).SetResource("unobtainium", 1).Remote();
  Say("READY");
  WaitForFile(dir + "/go");
  auto r = cumulus::TryGet(retried, std::chrono::seconds(90));
  driver::Check("retried_task_finished", r.ok() && *r == 2,
                r.ok() ? std::to_string(*r) : r.status().ToString());
}

}  // namespace

int main(int argc, char** argv) {
  if (auto st = cumulus::Init(argc, argv); !st.ok()) {
    std::fprintf(stderr, "state_driver: %s\n", st.ToString().c_str());
    return 1;
  }
  auto args = driver::Args(argc, argv);
  std::string scenario = args["scenario"], dir = args["dir"];
  if (scenario == "many") {
    Many(dir, std::atoi(args["n"].c_str()), std::atoi(args["objects"].c_str()));
  } else if (scenario == "pending") {
    Pending(dir);
  } else {
    std::fprintf(stderr, "state_driver: unknown --scenario=%s\n", scenario.c_str());
    return 2;
  }
  std::printf("DONE failures=%d\n", driver::failures);
  std::fflush(stdout);
  cumulus::Shutdown();
  return driver::failures == 0 ? 0 : 1;
}
