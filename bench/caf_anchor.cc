// bench_caf_anchor: the CAF anchor of bench_core, a raw CAF request/response between two
// processes through the middleman (CAF 0.17), the way a runtime built directly on CAF messages
// would make an actor call. Its own program so that bench_core (whose binary is also its workers'
// program) does not load CAF: that would slow every worker's start.
//
//   bench_caf_anchor [--rounds N]    prints "caf_rtt_us <median>"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cumulus/status.h"

namespace cumulus::bench {

namespace {

caf::actor_system_config& Configure(caf::actor_system_config& cfg) {
  cfg.load<caf::io::middleman>();
  cfg.set("scheduler.max-threads", 2);
  // Blocking requests from a scoped_actor are ~10x slower under work stealing (DESIGN.md).
  cfg.set("scheduler.policy", caf::atom("sharing"));
  return cfg;
}

[[noreturn]] void ServeEcho(int port_pipe) {
  caf::actor_system_config cfg;
  caf::actor_system system{Configure(cfg)};
  auto echo = system.spawn([]() -> caf::behavior { return {[](int64_t x) { return x; }}; });
  auto port = system.middleman().publish(echo, 0, "127.0.0.1");
  uint16_t value = port ? *port : 0;
  (void)!write(port_pipe, &value, sizeof(value));
  close(port_pipe);
  // Serves until the parent kills it.
  while (true) pause();
}

// Median round trip, in microseconds, of `rounds` blocking requests of an int64 from this process
// to an echo actor in a forked process.
Result<double> CafRequestRttMicros(int rounds) {
  int fds[2];
  if (pipe(fds) != 0) return Status::Internal("pipe failed");
  pid_t child = fork();
  if (child < 0) return Status::Internal("fork failed");
  if (child == 0) {
    close(fds[0]);
    ServeEcho(fds[1]);
  }
  close(fds[1]);
  uint16_t port = 0;
  ssize_t got = read(fds[0], &port, sizeof(port));
  close(fds[0]);
  auto end_child = [&] {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
  };
  if (got != sizeof(port) || port == 0) {
    end_child();
    return Status::Unavailable("the CAF echo process did not publish its actor");
  }
  std::vector<double> samples;
  Status failure;
  {
    caf::actor_system_config cfg;
    caf::actor_system system{Configure(cfg)};
    auto remote = system.middleman().remote_actor("127.0.0.1", port);
    if (!remote) {
      end_child();
      return Status::Unavailable("cannot reach the CAF echo actor: " +
                                 system.render(remote.error()));
    }
    caf::scoped_actor self{system};
    samples.reserve(static_cast<size_t>(rounds));
    for (int i = 0; i < rounds && failure.ok(); ++i) {
      auto t0 = std::chrono::steady_clock::now();
      self->request(*remote, std::chrono::seconds(10), int64_t{i})
          .receive(
              [&](int64_t x) {
                if (x != i) failure = Status::Internal("the CAF echo answered another request");
              },
              [&](caf::error& e) { failure = Status::Unavailable(system.render(e)); });
      samples.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    self->send_exit(*remote, caf::exit_reason::user_shutdown);
  }
  end_child();
  if (!failure.ok()) return failure;
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace
}  // namespace cumulus::bench

int main(int argc, char** argv) {
  int rounds = 10000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--rounds N]\n", argv[0]);
      return 2;
    }
  }
  if (rounds <= 0) {
    std::fprintf(stderr, "--rounds must be positive\n");
    return 2;
  }
  auto rtt = cumulus::bench::CafRequestRttMicros(rounds);
  if (!rtt.ok()) {
    std::fprintf(stderr, "caf anchor: %s\n", rtt.status().ToString().c_str());
    return 1;
  }
  std::printf("caf_rtt_us %.3f\n", *rtt);
  return 0;
}
