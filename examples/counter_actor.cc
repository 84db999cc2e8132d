// An actor: a counter whose state lives in its own worker process. Calls from one handle run in
// order; a named actor can be found from anywhere in the job with GetActor.
#include <cumulus/cumulus.h>

#include <cstdio>
#include <string>
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

namespace {

// What went wrong, printed as one line; the example then exits 1.
int Fail(const std::string& what) {
  std::fprintf(stderr, "counter_actor: %s\n", what.c_str());
  cumulus::Shutdown();
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (cumulus::Status st = cumulus::Init(argc, argv); !st.ok()) {
    std::fprintf(stderr, "cannot start cumulus: %s\n", st.ToString().c_str());
    return 1;
  }
  try {
    cumulus::ActorHandle<Counter> counter =
        cumulus::Actor(CreateCounter).SetName("counter").Remote(10);
    std::vector<cumulus::ObjectRef<int>> steps;
    for (int i = 0; i < 5; ++i) steps.push_back(counter.Task(&Counter::Increment).Remote(1));
    int expected = 10;
    for (int v : cumulus::Get(steps)) {
      std::printf("counter -> %d\n", v);
      // In order, one at a time: 11, 12, ... 15.
      if (v != ++expected) {
        return Fail("calls from one handle run in order: expected " + std::to_string(expected) +
                    ", got " + std::to_string(v));
      }
    }

    auto found = cumulus::GetActor<Counter>("counter");
    if (!found.ok()) return Fail("GetActor(\"counter\"): " + found.status().ToString());
    int by_name = cumulus::Get(found->Task(&Counter::Read).Remote());
    std::printf("by name: %d\n", by_name);
    if (by_name != 15) {
      return Fail("the actor found by name holds 15, not " + std::to_string(by_name));
    }
    (void)counter.Kill();
    try {
      int v = cumulus::Get(counter.Task(&Counter::Read).Remote());
      return Fail("a killed actor answered " + std::to_string(v));
    } catch (const cumulus::Error& e) {
      std::printf("after Kill: %s\n", e.what());
      if (e.status().code() != cumulus::StatusCode::kActorDied) {
        return Fail(std::string("a call to a killed actor must fail with ActorDied, not ") +
                    e.what());
      }
    }
  } catch (const cumulus::Error& e) {
    return Fail(e.what());
  }
  cumulus::Shutdown();
  return 0;
}
