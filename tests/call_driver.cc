// A Cumulus program that call_test calls into with `cumulus call`: it registers functions of
// several shapes, a named actor and an unnamed one that may restart once ("phoenix"), prints
// "READY job=<hex> counter=0 phoenix=<actor id>" once both run, and stays up until its stdin
// closes.
//
// With --wanderer-home=NODE_ID it also starts "wanderer", an actor that may restart once and
// needs the resource `slot` (1), on NODE_ID by a soft affinity, and queues behind it there a task
// that needs that slot on NODE_ID alone (it sleeps for 10 minutes): once the wanderer's process
// dies the task takes the slot, and the wanderer's next life goes to another node with a slot.
// READY then also says "wanderer=<actor id>".
#include <cumulus/cumulus.h>

#include <cstdio>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Config {
  double lr = 0;
  int32_t epochs = 0;
  std::vector<std::string> tags;
  CUMULUS_SERIALIZE(lr, epochs, tags)
};

struct Summary {
  std::string name;
  double score = 0;
  CUMULUS_SERIALIZE(name, score)
};

// A type with its own format (no CUMULUS_SERIALIZE): it has no JSON form.
struct Handle {
  int fd = -1;
};

}  // namespace

namespace cumulus {
template <>
struct Serializer<Handle> {
  static void Write(Writer& w, const Handle& h) { w.Raw(h.fd); }
  static bool Read(Reader& r, Handle* h) { return r.Raw(&h->fd); }
};
}  // namespace cumulus

namespace {

int64_t Square(int64_t x) { return x * x; }

Summary Train(Config c) {
  return Summary{"trained:" + (c.tags.empty() ? std::string("none") : c.tags[0]), c.lr * c.epochs};
}

std::string Fail(std::string why) { throw std::runtime_error("refused: " + why); }

int UseHandle(Handle h) { return h.fd; }

// n bytes: over the inline limit, the result is stored on the worker's node.
std::vector<uint8_t> Bytes(uint32_t n) { return std::vector<uint8_t>(n, 7); }

void Nothing() {}

int Sleep(int32_t seconds) {
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  return seconds;
}

class Counter {
 public:
  explicit Counter(int start) : value_(start) {}
  int Increment(int by) { return value_ += by; }
  int Read() const { return value_; }
  std::vector<uint8_t> Blob(uint32_t n) { return std::vector<uint8_t>(n, 1); }

 private:
  int value_;
};
Counter* MakeCounter(int start) { return new Counter(start); }

CUMULUS_REMOTE(Square, Train, Fail, UseHandle, Bytes, Nothing, Sleep, MakeCounter,
               &Counter::Increment, &Counter::Read, &Counter::Blob);

}  // namespace

int main(int argc, char** argv) {
  if (auto st = cumulus::Init(argc, argv); !st.ok()) {
    std::fprintf(stderr, "init: %s\n", st.ToString().c_str());
    return 1;
  }
  auto counter = cumulus::Actor(MakeCounter).SetName("counter").Remote(0);
  // Once a call has answered, the actor runs (its address is published on its way).
  int zero = cumulus::Get(counter.Task(&Counter::Read).Remote());
  auto phoenix = cumulus::Actor(MakeCounter).SetMaxRestarts(1).Remote(5);
  (void)cumulus::Get(phoenix.Task(&Counter::Read).Remote());
  std::string wanderer_line;
  cumulus::ActorHandle<Counter> wanderer;
  std::optional<cumulus::ObjectRef<int>> blocker;  // held until the end, as the actor's handle
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], flag = "--wanderer-home=";
    if (a.rfind(flag, 0) != 0) continue;
    auto home = cumulus::NodeId::FromHex(a.substr(flag.size()));
    if (!home.ok()) {
      std::fprintf(stderr, "call_driver: %s\n", home.status().ToString().c_str());
      return 2;
    }
    wanderer = cumulus::Actor(MakeCounter)
                   .SetResource("slot", 1)
                   .SetNodeAffinity(*home, /*soft=*/true)
                   .SetMaxRestarts(1)
                   .Remote(1);
    (void)cumulus::Get(wanderer.Task(&Counter::Read).Remote());
    blocker = cumulus::Task(Sleep).SetResource("slot", 1).SetNodeAffinity(*home).Remote(600);
    wanderer_line = " wanderer=" + wanderer.id().Hex();
  }
  std::printf("READY job=%s counter=%d phoenix=%s%s\n",
              cumulus::internal::CurrentRuntime()->job_id().Hex().c_str(), zero,
              phoenix.id().Hex().c_str(), wanderer_line.c_str());
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  cumulus::Shutdown();
  return 0;
}
