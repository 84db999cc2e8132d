// cumulus up FILE | down | drain NODE: the autoscaler from a cluster file (runtime/autoscaler/).
//
// `up` starts the head the file describes (no node of its own), its on-prem nodes on this machine
// (host: localhost) and the autoscaler's monitor, which runs as a process of its own beside the
// head ("autoscaler" among what `cumulus stop` stops). With --address it adds the monitor to a
// head that runs already. `down` stops the monitor, terminates every node it launched (its books
// in the head's KV and the providers' lists), then stops what `cumulus start`/`up` started here.
// `drain NODE` asks the head to mark a node DRAINING (no new work; it leaves once it runs and
// holds nothing); a launched node is also drained in the monitor's books, which terminate it.
#include <arpa/inet.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
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
  cumulus down [--address HOST:PORT] [--token-file FILE]
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

down stops the autoscaler, terminates every node it launched, then stops the head and the nodes
started on this machine (as 'cumulus stop').
drain NODE: see 'cumulus drain --help'.
)";

constexpr const char* kDrainHelp = R"(Usage:
  cumulus drain NODE [--wait [--timeout S]] [--address HOST:PORT] [--token-file FILE]

Drains NODE (a node id or a prefix of it; any alive node, on-prem or launched by the autoscaler).
The head marks it DRAINING, which every node learns with its next heartbeat:
  - no new task, actor or placement-group bundle is placed on it; work that only it could run
    waits as pending demand (an autoscaler may launch a node for it) instead of failing;
  - work submitted to it is forwarded to other nodes (what waits for room there keeps it up
    meanwhile); what runs or is queued on its workers, and work in placement-group bundles it
    holds, finishes there;
  - once it runs nothing (no tasks, actors, busy workers, bundles or connected drivers), it
    hands the objects its store holds (spilled ones too) to another alive node that is not
    draining: that node pulls each, their owners read and free them there from then on, and
    nothing is lost. Then it leaves by itself: 'cumulus status' shows it STOPPED. If no node
    can take them (none is alive and not draining, or its store is full), it keeps them and
    stays DRAINING, and 'cumulus status' says why ("waiting for 2 objects: no other alive node
    that is not draining can take them"); it tries again once one can.
A node that also runs the head stops taking work but does not leave (nor hand its objects on).
The autoscaler terminates a launched node's instance once the node no longer waits for anything
(or is gone). The mark is kept by the head (it survives a restart).
  --wait       wait until the node left; exit 0 when it did, 1 if it died or time ran out
  --timeout S  how long --wait waits (default 600, 1 to 86400)
An empty or non-hex NODE, or an unknown or ambiguous one, is one line on stderr and exit status 2.
)";

bool IsLoopbackOrPrivate(const std::string& host) {
  if (host == "localhost") return true;
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) != 1) return false;
  uint32_t ip = ntohl(a.s_addr);
  return (ip >> 24) == 127 || (ip >> 24) == 10 || (ip >> 20) == 0xAC1 || (ip >> 16) == 0xC0A8;
}

// Refuses node types whose nodes would reach the head over a network no one trusts.
Status CheckSecure(const ClusterConfig& config) {
  for (auto& t : config.node_types) {
    const ProviderConfig& p = config.providers.at(t.provider);
    std::string where;
    if (p.kind == ProviderKind::kCommand)
      where = "its command provider '" + p.name + "' may start nodes anywhere (a cloud)";
    else if (p.kind == ProviderKind::kSlurm && !IsLoopbackOrPrivate(config.head.host))
      where = "the head's address " + config.head.host + " is not loopback or a private network";
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
    return Status::Unavailable("'cumulus " + args[0] + " " + args[1] +
                               "' did not start: " + p.ReadAll(std::chrono::seconds(1)));
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
  if (auto marker = ConnectHead(head_flags); marker.ok())
    (void)(*marker)->KvPut(kAutoscalerNamespace, kCommandKey, "stopped");
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
  if (args.empty() || args[0].rfind("--", 0) == 0)
    return UsageError("up needs a cluster file: cumulus up FILE", "cumulus up --help");
  Flags flags({"address", "token-file", "round-ms", "metrics-port", "metrics-sd-file"},
              {"insecure", "block"});
  Status st = flags.Parse(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!st.ok()) return UsageError(st.message(), "cumulus up --help");
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
  auto config = LoadClusterConfig(std::filesystem::absolute(args[0]).string());
  if (!config.ok()) return UsageError(config.status().message(), "cumulus up --help");
  if (!flags.Has("insecure")) {
    Status secure = CheckSecure(*config);
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
  (void)(*head)->KvPut(kAutoscalerNamespace, kClusterFileKey, config->file);
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
  std::printf("Autoscaler started (pid %d, log %s) for the types of %s.\n", pid, log.c_str(),
              config->file.c_str());
  std::printf("To see it: cumulus status   To stop everything: cumulus down\n");
  return 0;
}

int DownCommand(const std::vector<std::string>& args) {
  for (auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kUpHelp, stdout);
      return 0;
    }
  }
  Flags flags({"address", "token-file"}, {});
  Status st = flags.Parse(args);
  if (!st.ok()) return UsageError(st.message(), "cumulus down --help");
  auto head = ConnectHead(flags);
  if (!head.ok()) return Fail(head.status());
  auto file = (*head)->KvGet(kAutoscalerNamespace, kClusterFileKey);
  if (!file.ok()) {
    return Fail(file.status().code() == StatusCode::kNotFound
                    ? Status::NotFound("no autoscaler was started on this cluster ('cumulus up "
                                       "FILE' starts one); 'cumulus stop' stops plain clusters")
                    : file.status());
  }
  auto config = LoadClusterConfig(*file);
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
  if (!terminated.ok()) return Fail(terminated);
  std::printf("Terminated the autoscaler's nodes (%zu in its books).\n", launched);
  monitor->reset();
  return StopCommand({});
}

int DrainCommand(const std::vector<std::string>& args) {
  for (auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kDrainHelp, stdout);
      return 0;
    }
  }
  if (args.empty() || args[0].rfind("--", 0) == 0)
    return UsageError("drain needs a node id: cumulus drain NODE", "cumulus drain --help");
  Flags flags({"address", "token-file", "timeout"}, {"wait"});
  Status st = flags.Parse(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!st.ok()) return UsageError(st.message(), "cumulus drain --help");
  auto timeout_s = ParseInteger("--timeout", flags.Get("timeout", "600"), {1, 86400, "seconds"});
  if (!timeout_s.ok()) return UsageError(timeout_s.status().message(), "cumulus drain --help");
  // An empty id would start every node's id: `cumulus drain "$NODE"` with NODE unset.
  auto prefix = IdPrefix("node", args[0]);
  if (!prefix.ok()) return UsageError(prefix.status().message(), "cumulus drain --help");
  auto head = ConnectHead(flags);
  if (!head.ok()) return Fail(head.status());
  auto view = (*head)->GetClusterStatus();
  if (!view.ok()) return Fail(view.status());
  const NodeRecord* found = nullptr;
  for (auto& n : view->nodes) {
    if (n.state != NodeState::kAlive || n.id.Hex().rfind(*prefix, 0) != 0) continue;
    if (found) {
      std::fprintf(stderr,
                   "cumulus: '%s' names more than one alive node; give more of its id "
                   "('cumulus status' lists them)\n",
                   args[0].c_str());
      return 2;
    }
    found = &n;
  }
  if (!found) {
    std::fprintf(stderr,
                 "cumulus: no alive node's id starts with '%s' ('cumulus status' lists them)\n",
                 args[0].c_str());
    return 2;
  }
  NodeId id = found->id;
  Status marked = (*head)->DrainNode(id, "cumulus drain");
  if (!marked.ok()) return Fail(marked);
  // A node the autoscaler launched is drained in its books too (it terminates it once it left).
  auto type = found->labels.find(kNodeTypeLabel);
  if (type != found->labels.end())
    (void)(*head)->KvPut(kAutoscalerNamespace, kDrainPrefix + id.Hex(), "1");
  std::printf(
      "Draining node %s: it takes no new work, finishes what it runs, hands its objects to "
      "another node, then leaves.\n",
      id.Hex().c_str());
  if (!flags.Has("wait")) return 0;

  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(*timeout_s);
  auto started = std::chrono::steady_clock::now();
  std::string last_note;
  while (true) {
    auto now_view = (*head)->GetClusterStatus();
    if (!now_view.ok()) return Fail(now_view.status());
    const NodeRecord* n = nullptr;
    for (auto& r : now_view->nodes) {
      if (r.id == id) n = &r;
    }
    if (!n) return Fail(Status::NotFound("the head no longer lists node " + id.Hex()));
    if (n->state == NodeState::kDead) {
      double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (n->left) {
        std::printf("Node %s left the cluster (%s) after %.1f s: STOPPED.\n", id.Hex().c_str(),
                    n->death_reason.c_str(), secs);
        return 0;
      }
      return Fail(Status::Unavailable("node " + id.Hex() + " died while draining (" +
                                      n->death_reason + ")"));
    }
    if (n->drain_note != last_note && !n->drain_note.empty()) {
      last_note = n->drain_note;
      std::printf("  %s\n", last_note.c_str());
      std::fflush(stdout);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Fail(Status::TimedOut("node " + id.Hex() + " did not leave within " +
                                   std::to_string(*timeout_s) + " s (" +
                                   (last_note.empty() ? "draining" : last_note) +
                                   "); it stays DRAINING: wait again, or 'cumulus stop' it"));
    }
    // Polling the head's view; Ctrl-C in the shell returns to the prompt (the node drains on).
    if (!SleepUnlessInterrupted(std::chrono::milliseconds(200))) {
      std::printf("Stopped waiting; node %s goes on draining ('cumulus status' shows it).\n",
                  id.Hex().c_str());
      return kInterruptedExit;
    }
  }
}

}  // namespace cumulus::cli
