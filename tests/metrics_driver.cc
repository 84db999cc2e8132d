// A Cumulus program run by metrics_test: --tasks=N tasks, an actor, and a stored object, so that
// the metrics have something to count. It prints "READY tasks=N" once all of it is done and holds
// the actor and the object until its stdin closes (the test closes it when it has looked).
#include <cumulus/cumulus.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "driver_checks.h"

namespace {

int Square(int x) { return x * x; }

class Counter {
 public:
  int Increment(int by) { return value_ += by; }

 private:
  int value_ = 0;
};
Counter* CreateCounter() { return new Counter(); }

}  // namespace

CUMULUS_REMOTE(Square, CreateCounter, &Counter::Increment);

int main(int argc, char** argv) {
  if (auto st = cumulus::Init(argc, argv); !st.ok()) {
    std::fprintf(stderr, "metrics_driver: %s\n", st.ToString().c_str());
    return 1;
  }
  auto args = driver::Args(argc, argv);
  int n = args.count("tasks") ? std::stoi(args["tasks"]) : 10;
  std::vector<cumulus::ObjectRef<int>> refs;
  for (int i = 0; i < n; ++i) refs.push_back(cumulus::Task(Square).Remote(i));
  long sum = 0, want = 0;
  for (int i = 0; i < n; ++i) want += static_cast<long>(i) * i;
  for (int v : cumulus::Get(refs)) sum += v;
  auto counter = cumulus::Actor(CreateCounter).Remote();
  int after = cumulus::Get(counter.Task(&Counter::Increment).Remote(5));
  auto held = cumulus::Put(std::vector<uint8_t>(1 << 20, 7));  // 1 MiB in the store
  std::printf("READY tasks=%d\n", n);
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  // (Printed after READY: the test reads the lines that follow it.)
  driver::Check("tasks", sum == want, std::to_string(sum) + " != " + std::to_string(want));
  driver::Check("actor", after == 5, std::to_string(after));
  std::printf("DONE failures=%d\n", driver::failures);
  std::fflush(stdout);
  cumulus::Shutdown();
  return driver::failures == 0 ? 0 : 1;
}
