// cumulus up FILE | down: the autoscaler from a cluster file (runtime/autoscaler/).
//
// `up` starts the head the file describes (no node of its own), its on-prem nodes on this machine
// (host: localhost) and the autoscaler's monitor, which runs as a process of its own beside the
// head ("autoscaler" among what `cumulus stop` stops). With --address it adds the monitor to a
// head that runs already. `down` stops the monitor, drains every node it launched (their work
// finishes), terminates them (its books in the head's KV and the providers' lists; a provider
// that fails leaves the head up for another try), then stops what `cumulus start`/`up` started
// here. It parses the cluster file's text `up` kept in the head's KV.
// `drain NODE` is drain_command.cc.
#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "runtime/autoscaler/cluster_config.h"
#include "runtime/autoscaler/monitor.h"
#include "runtime/base/logging.h"
#include "runtime/base/numeric.h"
#include "runtime/base/subprocess.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/head_connection.h"
#include "runtime/cli/interrupt.h"
#include "runtime/cli/local_state.h"
#include "runtime/cli/state_table.h"

namespace cumulus::cli {

namespace {

constexpr const char* kUpHelp = R"(Usage:
  cumulus up FILE [--insecure] [--address HOST:PORT --token-file F] [--round-ms N]
                  [--metrics-port N [--metrics-sd-file PATH]] [--block]
  cumulus down [--timeout S | --force] [--address HOST:PORT] [--token-file FILE]
  cumulus drain NODE [--wait [--timeout S]] [--address HOST:PORT] [--token-file FILE]

up reads the cluster file FILE (docs/cluster_file.md), starts its head (control store only, no
node) and its on-prem nodes with host 'localhost' on this machine, and the autoscaler: a monitor
that launches cloud nodes of the file's types when work waits that on-prem nodes cannot run, and
drains and terminates them when idle (docs/autoscaler.md). With --address it adds the autoscaler
to a head that runs already (start its nodes with --wait-for-nodes, or work no node can run
fails at once instead of waiting for a launch). Without --block it returns once everything is
started; the monitor's log is STATE_DIR/autoscaler.log. 'cumulus status' shows what it does and why.
  --insecure   accept node types whose nodes may run outside this machine or a private network:
               channels between nodes and the head are not encrypted yet
  --round-ms N how often the monitor decides (default 2000, 100 to 600000)
  --metrics-port N
               Prometheus metrics (docs/metrics.md) of the head it starts at the head's host:N,
               of its on-prem node number i (from 0, in the file's order) at N+1+i (N = 0: each
               at a free port), and of each node the autoscaler launches at a free port of that
               node (its --bind address, loopback unless its provider says otherwise); every
               node publishes its endpoint's address to the head. Not with --address
  --metrics-sd-file PATH
               the head keeps PATH a Prometheus file_sd list of those endpoints by node_type
               (file_sd_configs; rewritten atomically as nodes join and leave)

down stops the autoscaler, drains every node it launched (no new work goes there; what runs
there finishes: 'cumulus drain'), terminates them, then stops the head and the nodes started on
this machine (as 'cumulus stop'). It reads the cluster file as 'up' read it, so a file changed or
moved since does not matter. If an instance cannot be terminated (its provider fails), it says
which, and leaves the head up so that 'cumulus down' can be run again once that is fixed.
  --timeout S  how long launched nodes may take to drain (default 300, 1 to 86400); those still
               draining then are terminated anyway
  --force      terminate launched nodes at once, without draining them
drain NODE: see 'cumulus drain --help'.
)";

bool PrivateIpv4(uint32_t ip) {  // host byte order
  return (ip >> 24) == 127 || (ip >> 24) == 10 || (ip >> 20) == 0xAC1 || (ip >> 16) == 0xC0A8;
}

// Whether every address `host` names is loopback or private (RFC 1918; IPv6 ::1 and fc00::/7).
// A name is resolved here; one that does not resolve is not.
bool IsLoopbackOrPrivate(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
  bool all = found != nullptr;
  for (addrinfo* a = found; a && all; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      all = PrivateIpv4(ntohl(reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr.s_addr));
    } else if (a->ai_family == AF_INET6) {
      const in6_addr& v6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr;
      uint32_t v4 = 0;
      std::memcpy(&v4, v6.s6_addr + 12, 4);
      all = IN6_IS_ADDR_LOOPBACK(&v6) || (v6.s6_addr[0] & 0xFE) == 0xFC ||
            (IN6_IS_ADDR_V4MAPPED(&v6) && PrivateIpv4(ntohl(v4)));
    } else {
      all = false;
    }
  }
  freeaddrinfo(found);
  return all;
}

// Refuses node types whose nodes would reach the head over a network no one trusts.
// `head_host` is where its nodes reach the head: head.host, or the host of --address.
Status CheckSecure(const ClusterConfig& config, const std::string& head_host) {
  for (auto& t : config.node_types) {
    const ProviderConfig& p = config.providers.at(t.provider);
    std::string where;
    if (p.kind == ProviderKind::kCommand)
      where = "its command provider '" + p.name + "' may start nodes anywhere (a cloud)";
    else if (p.kind == ProviderKind::kSlurm && !IsLoopbackOrPrivate(head_host))
      where = "the head's address " + head_host + " is not loopback or a private network";
    if (!where.empty()) {
      return Status::InvalidArgument(
          config.file + ": node type '" + t.name + "': " + where +
          ", and channels between nodes and the head are not encrypted yet; pass --insecure to "
          "accept that");
    }
  }
  return Status();
}

// Runs `cumulus ARGS` (detached start: it returns once ready); returns the line starting `ready`.
Result<std::string> RunStart(const std::vector<std::string>& args, const std::string& ready) {
  std::vector<std::string> argv = {ExecutableDir() + "/cumulus"};
  argv.insert(argv.end(), args.begin(), args.end());
  Subprocess p(argv, /*merge_stderr=*/true);
  std::string seen;
  auto line = p.WaitForLine(ready, std::chrono::seconds(60));
  auto st = p.Wait(std::chrono::seconds(10));
  if (!line) {
    // What it printed says why (the lines WaitForLine passed over, then the rest): its last line.
    std::string said = p.Skipped() + p.ReadAll(std::chrono::seconds(1));
    while (!said.empty() && std::isspace(static_cast<unsigned char>(said.back()))) said.pop_back();
    said = said.substr(said.find_last_of('\n') + 1);
    if (said.rfind("cumulus: ", 0) == 0) said = said.substr(9);
    if (said.empty()) said = "it printed nothing";
    return Status::Unavailable("'cumulus " + args[0] + " " + args[1] + "' did not start: " + said);
  }
  (void)st;
  return *line;
}

std::string Field(const std::string& line, const std::string& key) {
  size_t at = line.find(key + "=");
  if (at == std::string::npos) return "";
  at += key.size() + 1;
  return line.substr(at, line.find(' ', at) - at);
}

Result<std::unique_ptr<Monitor>> MakeMonitor(const ClusterConfig& config,
                                             std::unique_ptr<ControlClient> head,
                                             const std::string& token_file, Duration round,
                                             int launched_metrics_port) {
  ProviderEnv env;
  env.cluster_name = config.cluster_name;
  env.cumulus_binary = ExecutableDir() + "/cumulus";
  env.state_dir = StateDir();
  std::map<std::string, std::unique_ptr<NodeProvider>> providers;
  for (auto& [name, p] : config.providers) {
    CUMULUS_ASSIGN_OR_RETURN(auto provider, MakeNodeProvider(p, env));
    providers[name] = std::move(provider);
  }
  MonitorOptions o;
  o.config = config;
  o.launch = {head->head().ToString(), token_file, launched_metrics_port};
  o.round = round;
  HostPort address = head->head();
  o.reconnect = [address, token_file]() -> Result<std::unique_ptr<ControlClient>> {
    CUMULUS_ASSIGN_OR_RETURN(std::string token, ResolveToken(token_file));
    return ControlClient::Connect(address, token);
  };
  CUMULUS_ASSIGN_OR_RETURN(auto monitor, Monitor::Create(o, std::move(head), std::move(providers)));
  CUMULUS_RETURN_IF_ERROR(monitor->Recover());
  return monitor;
}

// Claims the cluster's autoscaler for process `pid` (kOwnerKey): AlreadyExists naming the
// monitor that runs, if one does.
Status ClaimAutoscaler(ControlClient& head, int pid, int64_t round_ms) {
  int64_t now = SystemClock::Get().WallMicros();
  auto current = head.KvGet(kAutoscalerNamespace, kOwnerKey);
  if (current.ok()) {
    if (OwnerAlive(*current, now) && OwnerPid(*current) != pid) {
      return Status::AlreadyExists(
          "an autoscaler already runs on this cluster (" + *current +
          "), and a second one would launch nodes for the same work; 'cumulus down' stops it "
          "and the cluster, or stop that process and run 'cumulus up' again");
    }
    (void)head.KvDelete(kAutoscalerNamespace, kOwnerKey);  // it died without a word
  } else if (current.status().code() != StatusCode::kNotFound) {
    return current.status();
  }
  auto existed = head.KvPut(kAutoscalerNamespace, kOwnerKey, OwnerRecord(pid, round_ms, now),
                            /*overwrite=*/false);
  if (!existed.ok()) return existed.status();
  if (*existed) {
    return Status::AlreadyExists(
        "another 'cumulus up' started this cluster's autoscaler just now ('cumulus status' "
        "shows it)");
  }
  return Status();
}

// The monitor's loop until SIGTERM/SIGINT or `cumulus down`.
int RunMonitor(Monitor& monitor, const Flags& head_flags) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::atomic<bool> stop{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    stop = true;
  });
  Status why = monitor.Run(stop);
  CUMULUS_LOG(INFO) << "autoscaler stopping: " << why;
  if (!stop) pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  if (auto marker = ConnectHead(head_flags); marker.ok()) {
    (void)(*marker)->KvPut(kAutoscalerNamespace, kCommandKey, "stopped");
    auto owner = (*marker)->KvGet(kAutoscalerNamespace, kOwnerKey);
    if (owner.ok() && OwnerPid(*owner) == getpid())
      (void)(*marker)->KvDelete(kAutoscalerNamespace, kOwnerKey);
  }
  ForgetProcess(getpid());
  // `down` goes on now; a launch still running is waited for here, so that what it makes is
  // terminated (after `down`) or kept in the books (after a plain stop) when it answers.
  bool all_done = monitor.FinishLateCalls();
  int code = why.code() == StatusCode::kCancelled ? 0 : 1;
  if (!all_done) {
    // A provider call was given up on: its thread may still be in CAF or logging code, which
    // static destructors would tear down under it. Leave without running them.
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(code);
  }
  return code;
}

}  // namespace

int UpCommand(const std::vector<std::string>& args) {
  for (auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kUpHelp, stdout);
      return 0;
    }
  }
  Flags flags({"address", "token-file", "round-ms", "metrics-port", "metrics-sd-file"},
              {"insecure", "block"});
  std::vector<std::string> files;
  Status st = flags.Parse(args, &files);
  if (!st.ok()) return UsageError(st.message(), "cumulus up --help");
  if (files.size() != 1) {
    return UsageError(files.empty() ? "up needs a cluster file: cumulus up FILE"
                                    : "up takes one cluster file, got " +
                                          std::to_string(files.size()) + ": '" + files[1] + "'",
                      "cumulus up --help");
  }
  auto round_ms = ParseInteger("--round-ms", flags.Get("round-ms", "2000"), {100, 600000});
  if (!round_ms.ok()) return UsageError(round_ms.status().message(), "cumulus up --help");
  std::optional<int64_t> metrics_port;
  if (flags.Has("metrics-port")) {
    if (flags.Has("address")) {
      return UsageError("--metrics-port is for the head and nodes 'up' starts, not with --address",
                        "cumulus up --help");
    }
    auto port = ParseInteger("--metrics-port", flags.Get("metrics-port"), {0, 65000});
    if (!port.ok()) return UsageError(port.status().message(), "cumulus up --help");
    metrics_port = *port;
  }
  std::string sd_file;
  if (flags.Has("metrics-sd-file")) {
    if (!metrics_port || flags.Get("metrics-sd-file").empty()) {
      return UsageError("--metrics-sd-file needs --metrics-port (and a file path)",
                        "cumulus up --help");
    }
    sd_file = std::filesystem::absolute(flags.Get("metrics-sd-file")).string();
  }
  auto config = LoadClusterConfig(std::filesystem::absolute(files[0]).string());
  if (!config.ok()) return UsageError(config.status().message(), "cumulus up --help");
  if (config->node_types.empty()) {
    return UsageError(config->file +
                          ": no node_types: the autoscaler would have nothing to launch; list "
                          "the types it may launch (docs/cluster_file.md), or start a cluster "
                          "without one with 'cumulus start'",
                      "cumulus up --help");
  }
  std::string head_host = config->head.host;
  if (flags.Has("address")) {
    auto given = ParseHostPort(flags.Get("address"));
    if (!given.ok()) return UsageError(given.status().message(), "cumulus up --help");
    head_host = given->host;
  }
  if (!flags.Has("insecure")) {
    Status secure = CheckSecure(*config, head_host);
    if (!secure.ok()) {
      std::fprintf(stderr, "cumulus: %s\n", secure.message().c_str());
      return 2;
    }
  }
  if (Status s = EnsureStateDir(); !s.ok()) return Fail(s);

  std::string address = flags.Get("address"), token_file = flags.Get("token-file");
  if (address.empty()) {
    std::vector<std::string> head_args = {
        "start",  "--head",         "--no-node", "--port", std::to_string(config->head.port),
        "--bind", config->head.host};
    if (!config->head.data_dir.empty()) {
      head_args.push_back("--data-dir");
      head_args.push_back(config->head.data_dir);
    }
    if (metrics_port) {
      head_args.push_back("--metrics-port");
      head_args.push_back(std::to_string(*metrics_port));
    }
    if (!sd_file.empty()) {
      head_args.push_back("--metrics-sd-file");
      head_args.push_back(sd_file);
    }
    auto ready = RunStart(head_args, "cumulus head ready");
    if (!ready.ok()) return Fail(ready.status());
    address = Field(*ready, "address");
    token_file = Field(*ready, "token_file");
    std::printf("Head started at %s (token %s%s).\n", address.c_str(), token_file.c_str(),
                metrics_port ? (", metrics " + Field(*ready, "metrics")).c_str() : "");
    for (size_t i = 0; i < config->onprem_nodes.size(); ++i) {
      auto& n = config->onprem_nodes[i];
      if (n.host != "localhost") continue;
      std::string resources = n.resources.ToString();
      if (!n.resources.Has("GPU")) resources += ",GPU=0";
      std::vector<std::string> node_args({"start", "--address", address, "--token-file", token_file,
                                          "--resources", resources, "--labels",
                                          LabelsToString(n.labels), "--wait-for-nodes",
                                          "--data-dir", StateDir() + "/up-" + n.name});
      if (metrics_port) {
        node_args.push_back("--metrics-port");
        node_args.push_back(
            *metrics_port == 0 ? "0" : std::to_string(*metrics_port + 1 + static_cast<int64_t>(i)));
      }
      auto node = RunStart(node_args, "cumulus node ready");
      if (!node.ok()) return Fail(node.status());
      std::printf("On-prem node %s started: %s (%s%s).\n", n.name.c_str(),
                  Field(*node, "node_id").c_str(), resources.c_str(),
                  metrics_port ? (", metrics " + Field(*node, "metrics")).c_str() : "");
    }
  }
  Flags head_flags({"address", "token-file"}, {});
  (void)head_flags.Parse({"--address", address, "--token-file", token_file});
  auto head = ConnectHead(head_flags);
  if (!head.ok()) return Fail(head.status());
  // One autoscaler per cluster; a child runs it without --block, which claims it below.
  if (Status claimed = ClaimAutoscaler(**head, getpid(), *round_ms); !claimed.ok())
    return Fail(claimed);
  // `down` parses the text as read now: the file may change or move meanwhile.
  (void)(*head)->KvPut(kAutoscalerNamespace, kClusterFileKey, config->file);
  (void)(*head)->KvPut(kAutoscalerNamespace, kClusterTextKey, config->text);
  (void)(*head)->KvDelete(kAutoscalerNamespace, kCommandKey);

  auto run = [&]() -> int {
    auto client = ConnectHead(head_flags);
    if (!client.ok()) return Fail(client.status());
    // Launched nodes pick a free port each and publish it to the head (service discovery).
    auto monitor = MakeMonitor(*config, std::move(*client), token_file,
                               std::chrono::milliseconds(*round_ms), metrics_port ? 0 : -1);
    if (!monitor.ok()) return Fail(monitor.status());
    (void)RememberProcess(getpid(), "autoscaler");
    std::printf("cumulus autoscaler ready address=%s token_file=%s pid=%d\n", address.c_str(),
                token_file.c_str(), getpid());
    std::fflush(stdout);
    return RunMonitor(**monitor, head_flags);
  };
  if (flags.Has("block")) return run();

  std::string log = StateDir() + "/autoscaler.log";
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return Fail(Status::Internal("fork failed"));
  if (pid == 0) {
    setsid();
    FILE* f = std::freopen(log.c_str(), "a", stdout);
    if (f) dup2(fileno(stdout), STDERR_FILENO);
    _exit(run());
  }
  // The claim is the child's now (before this process exits, so no second `up` sees it free).
  (void)(*head)->KvPut(kAutoscalerNamespace, kOwnerKey,
                       OwnerRecord(pid, *round_ms, SystemClock::Get().WallMicros()));
  std::printf("Autoscaler started (pid %d, log %s) for the types of %s.\n", pid, log.c_str(),
              config->file.c_str());
  std::printf("To see it: cumulus status   To stop everything: cumulus down\n");
  return 0;
}

// Drains the alive nodes the autoscaler launched and waits until they left, `timeout` at most
// (those still draining then are terminated after this). Returns kInterruptedExit if Ctrl-C
// stopped the wait, else 0.
int DrainLaunched(ControlClient& head, std::chrono::seconds timeout) {
  auto view = head.GetClusterStatus();
  if (!view.ok()) return Fail(view.status());
  std::vector<NodeId> draining;
  for (auto& n : view->nodes) {
    if (n.state != NodeState::kAlive || !n.labels.count(kNodeTypeLabel)) continue;
    Status marked = head.DrainNode(n.id, "cumulus down");
    if (!marked.ok()) return Fail(marked);
    (void)head.KvPut(kAutoscalerNamespace, kDrainPrefix + n.id.Hex(), "1");
    draining.push_back(n.id);
  }
  if (draining.empty()) return 0;
  std::printf(
      "Draining %zu launched node(s): what runs there finishes first (at most %lld s; "
      "--force terminates at once).\n",
      draining.size(), static_cast<long long>(timeout.count()));
  std::fflush(stdout);
  auto started = std::chrono::steady_clock::now();
  while (true) {
    auto now = head.GetClusterStatus();
    if (!now.ok()) return Fail(now.status());
    std::vector<std::string> left_waiting;  // "ID (what it waits for)"
    for (const NodeId& id : draining) {
      for (auto& n : now->nodes) {
        if (n.id != id || n.state == NodeState::kDead) continue;
        // It runs nothing and keeps objects no node can take (the rest are draining too): as
        // everything stops, there is nothing more to wait for.
        if (n.work == 0 && n.drain_note.find("no other alive node") != std::string::npos) continue;
        left_waiting.push_back(id.Hex().substr(0, 12) +
                               (n.drain_note.empty() ? "" : " (" + n.drain_note + ")"));
      }
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (left_waiting.empty()) {
      std::printf("Their work ended after %.1f s.\n", secs);
      return 0;
    }
    if (secs >= static_cast<double>(timeout.count())) {
      std::string which;
      for (auto& w : left_waiting) which += (which.empty() ? "" : ", ") + w;
      std::printf("%zu did not leave within %lld s: %s; terminating them anyway.\n",
                  left_waiting.size(), static_cast<long long>(timeout.count()), which.c_str());
      return 0;
    }
    if (!SleepUnlessInterrupted(std::chrono::milliseconds(200))) {
      std::printf(
          "Stopped waiting: nothing was terminated and the nodes go on draining; "
          "'cumulus down' again finishes ('--force': at once).\n");
      return kInterruptedExit;
    }
  }
}

int DownCommand(const std::vector<std::string>& args) {
  for (auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kUpHelp, stdout);
      return 0;
    }
  }
  Flags flags({"address", "token-file", "timeout"}, {"force"});
  Status st = flags.Parse(args);
  if (!st.ok()) return UsageError(st.message(), "cumulus down --help");
  if (flags.Has("force") && flags.Has("timeout"))
    return UsageError("--force terminates at once: it takes no --timeout", "cumulus down --help");
  auto timeout_s = ParseInteger("--timeout", flags.Get("timeout", "300"), {1, 86400, "seconds"});
  if (!timeout_s.ok()) return UsageError(timeout_s.status().message(), "cumulus down --help");
  auto head = ConnectHead(flags);
  if (!head.ok()) return Fail(head.status());
  auto file = (*head)->KvGet(kAutoscalerNamespace, kClusterFileKey);
  if (!file.ok()) {
    return Fail(file.status().code() == StatusCode::kNotFound
                    ? Status::NotFound("no autoscaler was started on this cluster ('cumulus up "
                                       "FILE' starts one); 'cumulus stop' stops plain clusters")
                    : file.status());
  }
  // The file as `up` read it (a head from before the text was kept: the file as it is now).
  auto text = (*head)->KvGet(kAutoscalerNamespace, kClusterTextKey);
  auto config = text.ok() ? ParseClusterConfig(*text, *file,
                                               std::filesystem::path(*file).parent_path().string())
                          : LoadClusterConfig(*file);
  if (!config.ok()) return Fail(config.status());
  // Stop the monitor first, so it launches nothing while its nodes go.
  (void)(*head)->KvPut(kAutoscalerNamespace, kCommandKey, "down");
  bool stopped = WaitUntil(
      [&] {
        auto c = (*head)->KvGet(kAutoscalerNamespace, kCommandKey);
        return c.ok() && *c == "stopped";
      },
      std::chrono::seconds(15));
  if (!stopped) std::printf("The autoscaler did not answer within 15 s; going on without it.\n");
  (void)(*head)->KvDelete(kAutoscalerNamespace, kOwnerKey);
  if (!flags.Has("force")) {
    int drained = DrainLaunched(**head, std::chrono::seconds(*timeout_s));
    if (drained != 0) return drained;
  }
  auto client = ConnectHead(flags);
  if (!client.ok()) return Fail(client.status());
  // The monitor's bookkeeping lines ("recovered N launched instance(s)") belong in its log, not
  // in this command's output; warnings still show, and a level the user set is kept.
  if (!LogLevelFromEnvironment() && GetLogLevel() < LogLevel::kWarn) {
    SetLogLevel(LogLevel::kWarn);
  }
  // It only terminates: no launch, so no metrics port to give.
  auto monitor = MakeMonitor(*config, std::move(*client), flags.Get("token-file"),
                             std::chrono::seconds(2), /*launched_metrics_port=*/-1);
  if (!monitor.ok()) return Fail(monitor.status());
  size_t launched = (*monitor)->books().instances.size();
  Status terminated = (*monitor)->TerminateAll(std::chrono::seconds(60));
  if (!terminated.ok()) {
    std::fprintf(stderr,
                 "cumulus: %s. The head and the nodes started here stay up, so that 'cumulus "
                 "down' can finish once that is fixed ('cumulus stop' stops them and leaves "
                 "those instances running).\n",
                 terminated.message().c_str());
    return 1;
  }
  std::printf("Terminated the autoscaler's nodes (%zu in its books).\n", launched);
  monitor->reset();
  return StopCommand({});
}

}  // namespace cumulus::cli
