// cumulus start: a head (--head) or a node that joins one (--address HOST:PORT), in the foreground
// (--block) or in a detached background process.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/base/logging.h"
#include "runtime/base/numeric.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/local_state.h"
#include "runtime/head/head_server.h"
#include "runtime/metrics/file_sd.h"
#include "runtime/metrics/metrics_server.h"
#include "runtime/net/tcp.h"
#include "runtime/node/node_daemon.h"
#include "runtime/object_store/object_store.h"

namespace cumulus::cli {

namespace {

constexpr const char* kStartHelp = R"(Usage:
  cumulus start --head [--port 6380] [--bind 127.0.0.1] [--data-dir DIR]
                       [--resources CPU=8,GPU=2,memory=32G,custom=4] [--labels site=onprem,...]
                       [--object-store-memory SIZE] [--program-cache-size SIZE] [--no-node]
                       [--wait-for-nodes] [--metrics-port N [--metrics-host ADDR]]
                       [--metrics-sd-file PATH] [--block]
  cumulus start --address HOST:PORT [--token-file FILE] [--data-dir DIR] [--bind ADDR]
                       [--resources ...] [--labels ...] [--object-store-memory SIZE]
                       [--program-cache-size SIZE] [--wait-for-nodes] [--join-timeout S]
                       [--metrics-port N [--metrics-host ADDR]] [--block]

--head starts the head (the control store, in RocksDB under the data dir) and a node on this
machine. It creates the cluster's credentials (DATA_DIR/token, mode 0600) and prints how to hand
them to other nodes and clients. --address starts a node that joins the head at HOST:PORT.

  --port N                 the head's control port (default 6380; 0 picks a free one)
  --bind ADDR              the address every TCP port started here listens on (default 127.0.0.1:
                           this machine only; use this machine's IP or 0.0.0.0 for a
                           multi-machine cluster): the head's control port, and the node's routing
                           port (other nodes forward tasks to it), object channel (other nodes
                           pull objects from it) and its actors' ports (their callers talk to
                           them); all but --port are picked by the kernel
  --data-dir DIR           head: control store and token (default STATE_DIR/head-PORT, or
                           STATE_DIR/head with --port 0);
                           node: its object store (default STATE_DIR/node-data)
  --token-file FILE        node: the cluster token (or set CUMULUS_TOKEN)
  --resources LIST         override detected resources (CPU, GPU, memory in bytes or K/M/G/T,
                           custom)
  --labels LIST            node labels, e.g. site=onprem,gpu_type=A100
  --object-store-memory S  shared memory of the node's object store (default 30% of RAM)
  --program-cache-size S   disk bound of the node's cache of job programs (DATA_DIR/node-PID/jobs;
                           default 2G, at least 1M): least recently used programs not in use are
                           removed to stay under it; a program larger than it cannot run here
  --wait-for-nodes         a task or actor no node of the cluster can run waits (shown as pending
                           demand, for the autoscaler to launch a node for) instead of failing
                           as infeasible at once, unless it is pinned to one node (hard node
                           affinity) that is gone; 'cumulus up' starts its nodes with it
  --join-timeout S         node only: while the head cannot be reached (not up yet, or
                           restarting), try again for up to S seconds (default 0: one try;
                           0 to 3600); a wrong token fails at once. Nodes an autoscaler launches
                           get 60, so a head restarting while they boot does not fail them
  --no-node                head only: run the control store alone, no node (no tasks run here;
                           the head can then restart without taking work down with it)
  --heartbeat-interval-ms N, --heartbeat-timeout-ms N, --disconnect-grace-ms N
                           head only: how often nodes heartbeat (1000), the silence after which a
                           node is DEAD (10000), and how long a node whose connection closed has to
                           reconnect (2000); each from 1 to 3600000 ms
  --metrics-port N         serve Prometheus metrics at http://ADDR:N/metrics (docs/metrics.md):
                           the head's, and its node's on the same port; 0 picks a free one (the
                           ready line says which: metrics=ADDR:N). No endpoint without it
  --metrics-host ADDR      the address the metrics endpoint listens on (default: --bind's, so
                           127.0.0.1 unless asked); it needs no token: whoever reaches it reads
                           the metrics. A node publishes its endpoint's address to the head
  --metrics-sd-file PATH   head only: keep PATH a Prometheus file_sd list of the metrics
                           endpoints of the head and its alive nodes, by node_type (rewritten
                           atomically when nodes join or leave; docs/metrics.md)
  --block                  stay in the foreground (for tests, systemd, containers, SLURM jobs);
                           otherwise start in the background and return once ready

STATE_DIR is $CUMULUS_STATE_DIR or /tmp/cumulus-<uid>. Logs of background processes go to
DATA_DIR/logs/.
)";

using ReadyFn = std::function<void(const std::string&)>;

// Runs `serve` in the foreground, or in a detached child whose output goes to `log_path`; returns
// once `serve` reported "ok ..." or "error ..." through `ready`, with the exit code to use.
int RunDetachable(bool block, const std::string& log_path, const std::function<int(ReadyFn)>& serve,
                  const std::function<void(const std::string&)>& on_ready) {
  if (block) {
    return serve([&](const std::string& line) {
      if (line.rfind("ok ", 0) == 0) {
        on_ready(line.substr(3));
      } else {
        std::fprintf(stderr, "cumulus: %s\n", line.substr(line.find(' ') + 1).c_str());
      }
      std::fflush(stdout);
    });
  }
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "cumulus: pipe: %s\n", std::strerror(errno));
    return 1;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "cumulus: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (pid == 0) {
    close(pipefd[0]);
    setsid();
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, STDIN_FILENO);
    int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log >= 0) {
      dup2(log, STDOUT_FILENO);
      dup2(log, STDERR_FILENO);
    }
    int write_fd = pipefd[1];
    int rc = serve([&](const std::string& line) {
      std::string l = line + "\n";
      ssize_t ignored = write(write_fd, l.data(), l.size());
      (void)ignored;
      close(write_fd);
      write_fd = -1;
    });
    _exit(rc);
  }
  close(pipefd[1]);
  std::string got;
  char buf[512];
  pollfd p{pipefd[0], POLLIN, 0};
  auto deadline = SystemClock::Get().Now() + std::chrono::seconds(60);
  while (got.find('\n') == std::string::npos) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SystemClock::Get().Now())
            .count();
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) break;
    ssize_t n = read(pipefd[0], buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(pipefd[0]);
  std::string line = got.substr(0, got.find('\n'));
  if (line.rfind("ok ", 0) == 0) {
    on_ready(line.substr(3));
    return 0;
  }
  if (line.rfind("error ", 0) == 0) {
    std::fprintf(stderr, "cumulus: %s\n", line.substr(6).c_str());
  } else {
    kill(pid, SIGKILL);  // nothing is left half-started
    std::fprintf(stderr, "cumulus: the background process did not start (see %s)\n",
                 log_path.c_str());
  }
  return 1;
}

// Blocks SIGINT and SIGTERM (before any thread starts) and returns the set to sigwait on.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

Status ParseDurationMs(const Flags& flags, const std::string& name, Duration* out) {
  if (!flags.Has(name)) return Status();
  CUMULUS_ASSIGN_OR_RETURN(*out, ParseMilliseconds("--" + name, flags.Get(name), 1, 3'600'000));
  return Status();
}

// Creates (0700) or checks the data dir and its logs/. A data dir holds credentials: it must be
// this user's and private.
Status PrepareDir(const std::string& dir) {
  Status st = EnsurePrivateDir(dir);
  if (st.ok()) st = EnsurePrivateDir(dir + "/logs");
  if (st.ok() && access(dir.c_str(), W_OK) != 0)
    st = Status::InvalidArgument(dir + " is not writable");
  if (!st.ok())
    return Status::InvalidArgument("data dir: " + st.message() +
                                   "; choose another with --data-dir");
  return Status();
}

// The flags every node takes (the head runs one too): --resources, --labels,
// --object-store-memory, --program-cache-size. Checked before anything starts.
Status ParseNodeFlags(const Flags& flags, NodeDaemonOptions* node) {
  auto resources = ResourceSet::Parse(flags.Get("resources"));
  if (!resources.ok()) return resources.status().WithContext("--resources");
  if (resources->GetUnits("GPU") % ResourceSet::kUnit != 0) {
    return Status::InvalidArgument(
        "--resources: a node's GPU count must be a whole number (got GPU=" +
        std::to_string(resources->Get("GPU")) + "); fractions are for requests");
  }
  auto labels = ParseLabels(flags.Get("labels"));
  if (!labels.ok()) return labels.status().WithContext("--labels");
  node->declared = *resources;
  node->labels = *labels;
  node->wait_for_nodes = flags.Has("wait-for-nodes");
  if (flags.Has("object-store-memory")) {
    auto bytes = ParseBytes(flags.Get("object-store-memory"));
    if (!bytes.ok()) return bytes.status().WithContext("--object-store-memory");
    CUMULUS_RETURN_IF_ERROR(ObjectStore::CheckMemoryCapacity(*bytes, "--object-store-memory"));
    node->object_store_memory = *bytes;
  }
  if (flags.Has("program-cache-size")) {
    auto bytes = ParseBytes(flags.Get("program-cache-size"));
    if (!bytes.ok()) return bytes.status().WithContext("--program-cache-size");
    if (*bytes < (1u << 20)) {
      return Status::InvalidArgument("--program-cache-size: at least 1M, got " +
                                     flags.Get("program-cache-size"));
    }
    node->program_cache_bytes = *bytes;
  }
  return Status();
}

// --metrics-port and --metrics-host: nullopt without --metrics-port.
Result<std::optional<metrics::MetricsEndpointOptions>> ParseMetricsFlags(
    const Flags& flags, const std::string& bind_host) {
  if (!flags.Has("metrics-port")) {
    if (flags.Has("metrics-host"))
      return Status::InvalidArgument("--metrics-host needs --metrics-port");
    return std::optional<metrics::MetricsEndpointOptions>();
  }
  auto port = ParseInteger("--metrics-port", flags.Get("metrics-port"), {0, 65535});
  if (!port.ok()) return port.status();
  metrics::MetricsEndpointOptions o;
  o.port = static_cast<uint16_t>(*port);
  o.host = flags.Get("metrics-host", bind_host);
  if (o.host.empty()) return Status::InvalidArgument("--metrics-host: an address, e.g. 127.0.0.1");
  return std::optional<metrics::MetricsEndpointOptions>(o);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

int StartHead(const Flags& flags) {
  HeadOptions head;
  if (flags.Has("port")) {
    auto port = ParseInteger("--port", flags.Get("port"), {0, 65535});
    if (!port.ok()) return UsageError(port.status().message(), "cumulus start --help");
    head.port = static_cast<uint16_t>(*port);
  }
  head.bind_host = flags.Get("bind", "127.0.0.1");
  if (flags.Has("token-file")) {
    return UsageError("--token-file is for 'start --address' (the head creates the token)",
                      "cumulus start --help");
  }
  Status st = ParseDurationMs(flags, "heartbeat-interval-ms", &head.heartbeat_interval);
  if (st.ok())
    st = ParseDurationMs(flags, "heartbeat-timeout-ms", &head.membership.heartbeat_timeout);
  if (st.ok())
    st = ParseDurationMs(flags, "disconnect-grace-ms", &head.membership.disconnect_grace);
  if (st.ok() && head.membership.heartbeat_timeout <= 2 * head.heartbeat_interval) {
    st = Status::InvalidArgument(
        "--heartbeat-timeout-ms must be more than twice --heartbeat-interval-ms, or "
        "nodes would be declared dead between two heartbeats");
  }
  if (!st.ok()) return UsageError(st.message(), "cumulus start --help");

  NodeDaemonOptions node;
  if (Status st = ParseNodeFlags(flags, &node); !st.ok())
    return UsageError(st.message(), "cumulus start --help");
  auto metrics_options = ParseMetricsFlags(flags, head.bind_host);
  if (!metrics_options.ok())
    return UsageError(metrics_options.status().message(), "cumulus start --help");
  std::string sd_file;
  if (flags.Has("metrics-sd-file")) {
    if (flags.Get("metrics-sd-file").empty())
      return UsageError("--metrics-sd-file: a file path", "cumulus start --help");
    sd_file = std::filesystem::absolute(flags.Get("metrics-sd-file")).string();
  }
  head.publish_nodes = metrics_options->has_value() || !sd_file.empty();
  if (!flags.Has("data-dir")) {
    if (Status sd = EnsureStateDir(); !sd.ok()) {
      std::fprintf(stderr, "cumulus: %s\n", sd.message().c_str());
      return 1;
    }
  }
  head.data_dir = flags.Get(
      "data-dir", StateDir() + (head.port ? "/head-" + std::to_string(head.port) : "/head"));
  bool data_dir_existed = std::filesystem::exists(head.data_dir);
  st = PrepareDir(head.data_dir);
  if (!st.ok()) {
    std::fprintf(stderr, "cumulus: %s\n", st.message().c_str());
    return 1;
  }
  std::string token_file = head.data_dir + "/token";
  auto token = CreateOrLoadToken(token_file);
  if (!token.ok()) {
    std::fprintf(stderr, "cumulus: %s\n", token.status().message().c_str());
    return 1;
  }
  head.token = *token;
  node.token = *token;
  node.data_dir = head.data_dir;
  if (auto id = NodeId::FromHex(ReadFile(head.data_dir + "/node_id")); id.ok()) node.node_id = *id;

  bool block = flags.Has("block");
  bool with_node = !flags.Has("no-node");
  std::string advertise_host = ReachableHost(head.bind_host);

  auto serve = [&](ReadyFn ready) -> int {
    sigset_t stop = BlockStopSignals();
    auto server = HeadServer::Start(head);
    if (!server.ok()) {
      ready("error cannot start the head: " + server.status().message());
      return 1;
    }
    node.head =
        HostPort{head.bind_host == "0.0.0.0" ? "127.0.0.1" : head.bind_host, (*server)->port()};
    node.bind_host = head.bind_host;
    // The metrics endpoint, then the SD file (a bad path fails before the node starts), then
    // the node; `served` stops the endpoint before the node however this returns.
    metrics::ServedNode served;
    if (*metrics_options) {
      if (Status st = served.StartEndpoint(**metrics_options, server->get()); !st.ok()) {
        ready("error " + st.message());
        return 1;
      }
    }
    std::unique_ptr<metrics::FileSdWriter> sd_writer;
    if (!sd_file.empty()) {
      metrics::FileSdWriterOptions o;
      o.path = sd_file;
      o.head_target = served.published_metrics_address();
      o.nodes = [s = server->get()] { return s->PublishedNodes(); };
      auto started = metrics::FileSdWriter::Start(std::move(o));
      if (!started.ok()) {
        ready("error --metrics-sd-file: " + started.status().message() +
              "; make its directory exist and be writable, or choose another path");
        return 1;
      }
      sd_writer = std::move(*started);
    }
    if (with_node) {
      if (Status st = served.StartNode(node); !st.ok()) {
        ready("error cannot start the head's node: " + st.message());
        return 1;
      }
      std::ofstream(head.data_dir + "/node_id") << served.node()->node_id().Hex() << "\n";
    }
    std::string address = advertise_host + ":" + std::to_string((*server)->port());
    Status remembered = RememberCluster(address, token_file);
    if (remembered.ok()) remembered = RememberProcess(getpid(), "head");
    if (!remembered.ok())
      CUMULUS_LOG(WARN) << "cannot remember the cluster locally: " << remembered;
    ready("ok " + address + " " + (*server)->cluster_id() + " " + std::to_string(getpid()) + " " +
          (with_node ? served.node()->resources().ToString() : std::string("-")) + " " +
          (served.endpoint() ? served.endpoint()->address() : std::string("-")));
    int sig = 0;
    sigwait(&stop, &sig);
    CUMULUS_LOG(INFO) << "head stopping (signal " << sig << ")";
    sd_writer.reset();
    served.Stop();
    server->reset();
    ForgetProcess(getpid());
    return 0;
  };
  auto on_ready = [&](const std::string& info) {
    std::istringstream in(info);
    std::string address, cluster, pid, resources_text, metrics_address;
    in >> address >> cluster >> pid >> resources_text >> metrics_address;
    std::string metrics_field = metrics_address.empty() || metrics_address == "-"
                                    ? std::string()
                                    : " metrics=" + metrics_address;
    std::printf("cumulus head ready address=%s token_file=%s pid=%s%s\n", address.c_str(),
                token_file.c_str(), pid.c_str(), metrics_field.c_str());
    std::printf("Started the Cumulus head at %s (cluster %s, data dir %s).\n", address.c_str(),
                cluster.c_str(), head.data_dir.c_str());
    if (with_node) {
      std::printf("It also runs a node with %s.\n", resources_text.c_str());
    } else {
      std::printf("It runs no node (--no-node): start nodes to run work.\n");
    }
    std::printf("Credentials: %s (mode 0600; whoever has it controls the cluster).\n",
                token_file.c_str());
    if (!metrics_field.empty()) {
      std::printf("Metrics:     http://%s/metrics (Prometheus; docs/metrics.md)\n",
                  metrics_address.c_str());
    }
    if (head.bind_host == "127.0.0.1" || head.bind_host == "localhost") {
      std::printf(
          "The head listens on %s only; to take nodes on other machines, restart it with --bind.\n",
          head.bind_host.c_str());
    }
    std::printf("To add a node:  cumulus start --address %s --token-file %s\n", address.c_str(),
                token_file.c_str());
    std::printf("           or:  CUMULUS_TOKEN=$(cat %s) cumulus start --address %s\n",
                token_file.c_str(), address.c_str());
    std::printf("To see it:      cumulus status\nTo stop it:     cumulus stop\n");
    std::fflush(stdout);
  };
  int rc = RunDetachable(block, head.data_dir + "/logs/head.log", serve, on_ready);
  if (rc != 0 && !block && !data_dir_existed) {
    std::error_code ec;
    std::filesystem::remove_all(head.data_dir, ec);  // a failed start leaves nothing behind
  }
  return rc;
}

int StartNode(const Flags& flags) {
  NodeDaemonOptions node;
  auto address = ParseHostPort(flags.Get("address"));
  if (!address.ok())
    return UsageError("--address: " + address.status().message(), "cumulus start --help");
  node.head = *address;
  node.bind_host = flags.Get("bind", "127.0.0.1");
  auto join_timeout_s =
      ParseInteger("--join-timeout", flags.Get("join-timeout", "0"), {0, 3600, "seconds"});
  if (!join_timeout_s.ok())
    return UsageError(join_timeout_s.status().message(), "cumulus start --help");
  for (const char* head_only : {"port", "heartbeat-interval-ms", "heartbeat-timeout-ms",
                                "disconnect-grace-ms", "metrics-sd-file"}) {
    if (flags.Has(head_only)) {
      return UsageError(std::string("--") + head_only + " is for 'start --head'",
                        "cumulus start --help");
    }
  }
  if (Status st = ParseNodeFlags(flags, &node); !st.ok())
    return UsageError(st.message(), "cumulus start --help");
  auto metrics_options = ParseMetricsFlags(flags, node.bind_host);
  if (!metrics_options.ok())
    return UsageError(metrics_options.status().message(), "cumulus start --help");
  auto token = ResolveToken(flags.Get("token-file"));
  if (!token.ok()) {
    std::fprintf(stderr, "cumulus: %s\n", token.status().message().c_str());
    return 1;
  }
  node.token = *token;
  if (!flags.Has("data-dir")) {
    if (Status sd = EnsureStateDir(); !sd.ok()) {
      std::fprintf(stderr, "cumulus: %s\n", sd.message().c_str());
      return 1;
    }
  }
  node.data_dir = flags.Get("data-dir", StateDir() + "/node-data");
  Status st = PrepareDir(node.data_dir);
  if (!st.ok()) {
    std::fprintf(stderr, "cumulus: %s\n", st.message().c_str());
    return 1;
  }
  // A drained node (cumulus drain) stops itself the way `cumulus stop` does: it leaves as STOPPED.
  node.on_drained = [] { kill(getpid(), SIGTERM); };
  auto serve = [&](ReadyFn ready) -> int {
    sigset_t stop = BlockStopSignals();
    metrics::ServedNode served;  // the endpoint first: the node publishes its address
    if (*metrics_options) {
      if (Status st = served.StartEndpoint(**metrics_options, nullptr); !st.ok()) {
        ready("error " + st.message());
        return 1;
      }
    }
    // An unreachable head (Unavailable, TimedOut) is tried again until --join-timeout; a stop
    // signal meanwhile ends the wait. A start that fails leaves nothing to undo
    // (NodeDaemon::Start).
    auto join_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(*join_timeout_s);
    for (bool said = false;;) {
      Status st = served.StartNode(node);
      if (st.ok()) break;
      bool unreachable =
          st.code() == StatusCode::kUnavailable || st.code() == StatusCode::kTimedOut;
      if (!unreachable || std::chrono::steady_clock::now() >= join_deadline) {
        ready("error cannot join the cluster at " + node.head.ToString() + ": " + st.message());
        return 1;
      }
      if (!said) {
        CUMULUS_LOG(WARN) << "cannot reach the head at " << node.head.ToString() << " yet ("
                          << st.message() << "); trying again for up to " << *join_timeout_s
                          << " s";
        said = true;
      }
      timespec pause{0, 500'000'000};
      if (sigtimedwait(&stop, nullptr, &pause) > 0) {
        ready("error stopped while waiting to join the cluster at " + node.head.ToString());
        return 1;
      }
    }
    NodeDaemon* daemon = served.node();
    Status remembered = RememberProcess(getpid(), "node");
    if (remembered.ok())
      remembered = RememberCluster(node.head.ToString(), flags.Get("token-file"));
    if (!remembered.ok()) CUMULUS_LOG(WARN) << "cannot remember the node locally: " << remembered;
    ready("ok " + daemon->node_id().Hex() + " " + std::to_string(getpid()) + " " +
          daemon->resources().ToString() + " " + daemon->store_socket() + " " +
          daemon->transfer_address() + " " +
          (served.endpoint() ? served.endpoint()->address() : std::string("-")));
    int sig = 0;
    sigwait(&stop, &sig);
    CUMULUS_LOG(INFO) << "node stopping (signal " << sig << ")";
    served.Stop();
    ForgetProcess(getpid());
    return 0;
  };
  auto on_ready = [&](const std::string& info) {
    std::istringstream in(info);
    std::string id, pid, resources_text, store_socket, transfer, metrics_address;
    in >> id >> pid >> resources_text >> store_socket >> transfer >> metrics_address;
    std::string metrics_field = metrics_address.empty() || metrics_address == "-"
                                    ? std::string()
                                    : " metrics=" + metrics_address;
    std::printf("cumulus node ready node_id=%s head=%s pid=%s store_socket=%s transfer=%s%s\n",
                id.c_str(), node.head.ToString().c_str(), pid.c_str(), store_socket.c_str(),
                transfer.c_str(), metrics_field.c_str());
    std::printf("Joined the cluster at %s as node %s with %s.\n", node.head.ToString().c_str(),
                id.c_str(), resources_text.c_str());
    std::fflush(stdout);
  };
  return RunDetachable(flags.Has("block"),
                       node.data_dir + "/logs/node-" + std::to_string(getpid()) + ".log", serve,
                       on_ready);
}

}  // namespace

int StartCommand(const std::vector<std::string>& args) {
  for (auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kStartHelp, stdout);
      return 0;
    }
  }
  Flags flags(
      {"port", "bind", "data-dir", "resources", "labels", "address", "token-file",
       "object-store-memory", "program-cache-size", "heartbeat-interval-ms", "heartbeat-timeout-ms",
       "disconnect-grace-ms", "metrics-port", "metrics-host", "metrics-sd-file", "join-timeout"},
      {"head", "block", "no-node", "wait-for-nodes"});
  Status st = flags.Parse(args);
  if (!st.ok()) return UsageError(st.message(), "cumulus start --help");
  if (flags.Has("head") == flags.Has("address")) {
    return UsageError("start needs exactly one of --head or --address HOST:PORT",
                      "cumulus start --help");
  }
  if (flags.Has("no-node") && !flags.Has("head")) {
    return UsageError("--no-node is for 'start --head' (a node joining with --address is a node)",
                      "cumulus start --help");
  }
  return flags.Has("head") ? StartHead(flags) : StartNode(flags);
}

}  // namespace cumulus::cli
