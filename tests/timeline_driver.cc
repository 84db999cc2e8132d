// timeline_driver: a job for timeline_test. It runs --tasks tasks (one with an argument large
// enough to go through the object store) and, with --calls, an actor with that many method
// calls; prints "JOB <id>" first and "RAN" once all returned, then waits for a line on stdin (the
// test has fetched the timeline) before it ends: its workers stay until then.
#include <cstdio>
#include <string>
#include <vector>

#include "cumulus/cumulus.h"
#include "driver_checks.h"

namespace {

int Square(int x) { return x * x; }
uint64_t Sum(std::vector<uint8_t> bytes) {
  uint64_t s = 0;
  for (uint8_t b : bytes) s += b;
  return s;
}

class Counter {
 public:
  int Add(int x) { return total_ += x; }

 private:
  int total_ = 0;
};
Counter* CreateCounter() { return new Counter(); }

}  // namespace

CUMULUS_REMOTE(Square, Sum, CreateCounter, &Counter::Add);

int main(int argc, char** argv) {
  cumulus::Status st = cumulus::Init(argc, argv);
  if (!st.ok()) {
    std::printf("CHECK init FAIL %s\n", st.ToString().c_str());
    return 1;
  }
  auto args = driver::Args(argc, argv);
  int tasks = args.count("tasks") ? std::stoi(args["tasks"]) : 20;
  int calls = args.count("calls") ? std::stoi(args["calls"]) : 0;

  auto first = cumulus::Task(Square).Remote(1);
  std::printf("JOB %s\n", first.id().Task().Job().Hex().c_str());
  std::fflush(stdout);
  std::vector<cumulus::ObjectRef<int>> refs;
  for (int i = 1; i < tasks; ++i) refs.push_back(cumulus::Task(Square).Remote(i));
  bool ok = cumulus::Get(first) == 1;
  for (int i = 1; i < tasks; ++i) ok = ok && cumulus::Get(refs[i - 1]) == i * i;
  driver::Check("tasks", ok);
  // An argument over the inline limit: read from the object store by the worker.
  auto big = cumulus::Put(std::vector<uint8_t>(512 * 1024, 1));
  driver::Check("stored_argument", cumulus::Get(cumulus::Task(Sum).Remote(big)) == 512 * 1024);
  if (calls > 0) {
    auto counter = cumulus::Actor(CreateCounter).Remote();
    std::vector<cumulus::ObjectRef<int>> sums;
    for (int i = 0; i < calls; ++i) sums.push_back(counter.Task(&Counter::Add).Remote(1));
    driver::Check("calls", cumulus::Get(sums.back()) == calls);
  }
  std::printf("RAN\n");
  std::fflush(stdout);
  char line[16];
  (void)!fgets(line, sizeof(line), stdin);
  std::printf("DONE failures=%d\n", driver::failures);
  std::fflush(stdout);
  cumulus::Shutdown();
  return driver::failures == 0 ? 0 : 1;
}
