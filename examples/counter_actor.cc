// An actor: a counter whose state lives in its own worker process. Calls from one handle run in
// order; a named actor can be found from anywhere in the job with GetActor.
#include <cumulus/cumulus.h>

#include <cstdio>
#include <vector>

class Counter {
 public:
  explicit Counter(int start) : value_(start) {}
  int Increment(int by) { return value_ += by; }
  int Read() const { return value_; }

 private:
  int value_;
};

Counter* CreateCounter(int start) { return new Counter(start); }

CUMULUS_REMOTE(CreateCounter, &Counter::Increment, &Counter::Read);

int main(int argc, char** argv) {
  if (cumulus::Status st = cumulus::Init(argc, argv); !st.ok()) {
    std::fprintf(stderr, "cannot start cumulus: %s\n", st.ToString().c_str());
    return 1;
  }
  cumulus::ActorHandle<Counter> counter =
      cumulus::Actor(CreateCounter).SetName("counter").Remote(10);
  std::vector<cumulus::ObjectRef<int>> steps;
  for (int i = 0; i < 5; ++i) steps.push_back(counter.Task(&Counter::Increment).Remote(1));
  for (int v : cumulus::Get(steps)) std::printf("counter -> %d\n", v);

  auto found = cumulus::GetActor<Counter>("counter");
  if (found.ok()) {
    std::printf("by name: %d\n", cumulus::Get(found->Task(&Counter::Read).Remote()));
  }
  (void)counter.Kill();
  try {
    cumulus::Get(counter.Task(&Counter::Read).Remote());
  } catch (const cumulus::Error& e) {
    std::printf("after Kill: %s\n", e.what());
  }
  cumulus::Shutdown();
  return 0;
}
