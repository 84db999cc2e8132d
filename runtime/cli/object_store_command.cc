// cumulus object-store serve|stats
#include <signal.h>

#include <cstdio>
#include <string>
#include <vector>

#include "runtime/base/logging.h"
#include "runtime/base/numeric.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/object_store/object_store.h"
#include "runtime/object_store/store_client.h"
#include "runtime/object_store/store_server.h"

namespace cumulus::cli {

namespace {

constexpr const char* kHelp = R"(Usage:
  cumulus object-store serve --dir DIR [--socket PATH] [--memory SIZE] [--prefault]
  cumulus object-store stats --socket PATH [--json]

serve   Runs a node object store in the foreground until SIGINT or SIGTERM. Objects live in a
        shared-memory region that local processes map read-only; when it is full the least
        recently used unpinned objects are spilled to RocksDB under DIR/objects.db and restored
        when read. Durable objects survive a crash and restart on the same DIR.
          --dir DIR       directory of the disk tier (created if missing)
          --socket PATH   Unix socket to serve on, mode 0600 (default DIR/store.sock)
          --memory SIZE   shared-memory capacity, e.g. 512M, 8G (default 30% of RAM)
          --prefault      commit all shared memory at start (no page faults on first writes)
        Prints "object store ready socket=PATH" on stdout once clients can connect.
stats   Prints the store's usage.
)";

int Serve(const std::vector<std::string>& args) {
  Flags flags({"dir", "socket", "memory"}, {"prefault"});
  Status st = flags.Parse(args);
  if (!st.ok()) return UsageError(st.message(), "cumulus object-store --help");
  if (!flags.Has("dir"))
    return UsageError("object-store serve needs --dir", "cumulus object-store --help");
  ObjectStoreOptions options;
  options.directory = flags.Get("dir");
  options.prefault = flags.Has("prefault");
  if (flags.Has("memory")) {
    auto bytes = ParseBytes(flags.Get("memory"));
    if (!bytes.ok())
      return UsageError("--memory: " + bytes.status().message(), "cumulus object-store --help");
    Status fits = ObjectStore::CheckMemoryCapacity(*bytes, "--memory");
    if (!fits.ok()) return UsageError(fits.message(), "cumulus object-store --help");
    options.memory_capacity = *bytes;
  }
  std::string socket_path = flags.Get("socket", options.directory + "/store.sock");

  // Block the stop signals before any thread starts, then wait for them here.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto store = ObjectStore::Open(options);
  if (!store.ok()) {
    std::fprintf(stderr, "cumulus: cannot open the object store: %s\n",
                 store.status().ToString().c_str());
    return 1;
  }
  auto server = StoreServer::Start(store->get(), socket_path);
  if (!server.ok()) {
    std::fprintf(stderr, "cumulus: cannot serve the object store: %s\n",
                 server.status().ToString().c_str());
    return 1;
  }
  ObjectStoreStats s = (*store)->Stats();
  std::printf("object store ready socket=%s memory=%llu dir=%s recovered_durable=%llu\n",
              socket_path.c_str(), static_cast<unsigned long long>(s.capacity_bytes),
              options.directory.c_str(), static_cast<unsigned long long>(s.recovered_durable));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  CUMULUS_LOG(INFO) << "object store stopping (signal " << sig << ")";
  server->reset();
  return 0;
}

int Stats(const std::vector<std::string>& args) {
  Flags flags({"socket"}, {"json"});
  Status st = flags.Parse(args);
  if (!st.ok()) return UsageError(st.message(), "cumulus object-store --help");
  if (!flags.Has("socket"))
    return UsageError("object-store stats needs --socket", "cumulus object-store --help");
  auto client = StoreClient::Connect(flags.Get("socket"), {"cumulus-cli", 10'000});
  if (!client.ok()) {
    std::fprintf(stderr, "cumulus: %s\n", client.status().ToString().c_str());
    return 1;
  }
  auto stats = (*client)->Stats();
  if (!stats.ok()) {
    std::fprintf(stderr, "cumulus: %s\n", stats.status().ToString().c_str());
    return 1;
  }
  const ObjectStoreStats& s = *stats;
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  if (flags.Has("json")) {
    std::printf(
        "{\"capacity_bytes\":%llu,\"used_bytes\":%llu,\"objects_in_memory\":%llu,"
        "\"objects_on_disk_only\":%llu,\"bytes_on_disk_only\":%llu,\"pinned_objects\":%llu,"
        "\"spill_count\":%llu,\"restore_count\":%llu}\n",
        u(s.capacity_bytes), u(s.used_bytes), u(s.objects_in_memory), u(s.objects_on_disk_only),
        u(s.bytes_on_disk_only), u(s.pinned_objects), u(s.spill_count), u(s.restore_count));
  } else {
    std::printf(
        "memory: %llu of %llu bytes used\nobjects in memory: %llu (pinned: %llu)\n"
        "objects on disk only: %llu (%llu bytes)\nspills: %llu  restores: %llu\n",
        u(s.used_bytes), u(s.capacity_bytes), u(s.objects_in_memory), u(s.pinned_objects),
        u(s.objects_on_disk_only), u(s.bytes_on_disk_only), u(s.spill_count), u(s.restore_count));
  }
  return 0;
}

}  // namespace

int ObjectStoreCommand(const std::vector<std::string>& args) {
  if (args.empty())
    return UsageError("object-store needs a subcommand (serve or stats)",
                      "cumulus object-store --help");
  const std::string& sub = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (sub == "-h" || sub == "--help") {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (sub == "serve") return Serve(rest);
  if (sub == "stats") return Stats(rest);
  return UsageError("unknown object-store subcommand '" + sub + "'", "cumulus object-store --help");
}

}  // namespace cumulus::cli
