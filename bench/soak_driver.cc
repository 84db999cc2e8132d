// soak_driver: the driver bench_soak submits (`cumulus submit --wait -- soak_driver MODE N`).
//
//   soak_driver hello N    N tiny tasks, then exits 0 (the job submitted again and again)
//   soak_driver put MIB    Puts 64 MiB values until MIB MiB have gone through the store; each is
//                          read back and dropped before the next (so the store frees it)
//   soak_driver tasks N    N tiny tasks, submitted in batches of 1,000 and got
// It prints one line "soak_driver result SECONDS UNITS" (the time of the work alone, after Init)
// and exits 0 only if every value came back right.
#include <cumulus/cumulus.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

uint64_t Noop(uint64_t x) { return x + 1; }

}  // namespace

CUMULUS_REMOTE(Noop);

namespace {

using Clock = std::chrono::steady_clock;

// Runs n tasks in batches; returns the number that came back wrong or not at all.
uint64_t RunTasks(uint64_t n) {
  const uint64_t kBatch = 1000;
  uint64_t bad = 0;
  for (uint64_t done = 0; done < n;) {
    std::vector<cumulus::ObjectRef<uint64_t>> refs;
    uint64_t base = done;
    for (; done < n && done - base < kBatch; ++done)
      refs.push_back(cumulus::Task(Noop).Remote(done));
    for (uint64_t i = 0; i < refs.size(); ++i) {
      auto v = cumulus::TryGet(refs[i], std::chrono::seconds(60));
      if (!v.ok() || *v != base + i + 1) {
        if (bad == 0)
          std::fprintf(stderr, "soak_driver: task %llu: %s\n",
                       static_cast<unsigned long long>(base + i),
                       v.ok() ? "wrong value" : v.status().ToString().c_str());
        bad++;
      }
    }
  }
  return bad;
}

// Puts 64 MiB values until `mib` MiB went through; returns the number that failed.
uint64_t RunPuts(uint64_t mib) {
  const size_t kValue = 64u << 20;
  std::vector<uint8_t> value(kValue);
  uint64_t bad = 0;
  for (uint64_t i = 0; i * 64 < mib; ++i) {
    std::memset(value.data(), static_cast<int>(i & 0xff), 4096);  // a different first page each
    try {
      auto ref = cumulus::Put(value);
      auto back = cumulus::TryGet(ref, std::chrono::seconds(60));
      if (!back.ok() || back->size() != kValue || (*back)[0] != static_cast<uint8_t>(i & 0xff)) {
        if (bad == 0)
          std::fprintf(stderr, "soak_driver: put %llu: %s\n", static_cast<unsigned long long>(i),
                       back.ok() ? "wrong value" : back.status().ToString().c_str());
        bad++;
      }
    } catch (const std::exception& e) {  // Put throws when the store cannot take the value
      if (bad == 0)
        std::fprintf(stderr, "soak_driver: put %llu: %s\n", static_cast<unsigned long long>(i),
                     e.what());
      bad++;
    }
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  if (auto st = cumulus::Init(argc, argv); !st.ok()) {
    std::fprintf(stderr, "soak_driver: %s\n", st.ToString().c_str());
    return 1;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: soak_driver hello|put|tasks N\n");
    return 2;
  }
  std::string mode = argv[1];
  char* end = nullptr;
  uint64_t n = std::strtoull(argv[2], &end, 10);
  if (*argv[2] == '\0' || *end != '\0') {
    std::fprintf(stderr, "soak_driver: '%s' is not a number\n", argv[2]);
    return 2;
  }
  auto t0 = Clock::now();
  uint64_t bad = 0;
  if (mode == "hello" || mode == "tasks") {
    bad = RunTasks(n);
  } else if (mode == "put") {
    bad = RunPuts(n);
  } else {
    std::fprintf(stderr, "soak_driver: unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("soak_driver result %.6f %llu\n", s, static_cast<unsigned long long>(n));
  std::fflush(stdout);
  cumulus::Shutdown();
  return bad == 0 ? 0 : 1;
}
