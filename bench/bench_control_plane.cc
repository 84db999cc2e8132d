// bench_control_plane: how many nodes one head holds.
//
// For each N, starts a fresh head process (`cumulus start --head --block`), connects N simulated
// nodes from this process (one TCP connection each, authenticated, registered), and has each do
// what a real node's daemon and job supervisor do, spread evenly over every second:
//   - a heartbeat every second that asks for the cluster's view as a delta (the nodes changed
//     since the version it holds), which it then holds;
//   - its state report (a NodeStateReport) put in the head's store every 2 s;
//   - every 5 s, a listing of its job queue and a 5 s wait for its job bell (which never rings).
// (A real node uses two connections, one for the heartbeats and one for its job supervisor; a
// simulated node carries both on one, so that 10,000 of them fit this machine's 20,000
// descriptors.) It measures over a window:
//   - the head process's CPU use (utime + stime from /proc, as a share of one core),
//   - heartbeats the head processed per second, against the N/s the nodes were asked to send,
//   - nodes per view delta (how much of the cluster each ack carried),
//   - `status` latency (a full cluster listing with N nodes, once a second) from another
//     connection.
// Each node starts from the view as of the end of registration (as if its first heartbeat had
// brought the whole cluster), so the window measures the steady state.
// Targets: 1,000 nodes under 25% of one core, 10,000 under 50%.
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/base/subprocess.h"
#include "runtime/base/temp_dir.h"
#include "runtime/core/messages.h"
#include "runtime/head/control_client.h"
#include "runtime/head/head_server.h"
#include "runtime/head/node_codec.h"
#include "runtime/net/frame.h"
#include "runtime/proto/control.capnp.h"

using namespace cumulus;
using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;
using cumulus::Subprocess;

namespace {

Subprocess* g_head = nullptr;  // killed on failure, so no head outlives the benchmark

void Die(const std::string& what) {
  std::fprintf(stderr, "bench_control_plane: %s\n", what.c_str());
  if (g_head) {
    g_head->Kill(SIGKILL);
    g_head->Wait(std::chrono::seconds(10));
  }
  std::exit(1);
}

// CPU seconds (user + system) the process has used.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  std::istringstream fields(line.substr(line.rfind(')') + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stoull(f);
    if (i == 15) stime = std::stoull(f);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

struct SimNode {
  int fd = -1;
  NodeId id;
  FrameDecoder decoder{64 << 20};
  uint64_t next_request = 1;
  int64_t view_epoch = 0;  // the view it holds, as a real node does (ViewCursor)
  uint64_t view_version = 0;
};

struct Tally {
  int errors = 0;
  uint64_t acks_with_view = 0;
  uint64_t view_nodes = 0;  // nodes carried by those acks
};

std::string Frame(const std::function<void(proto::ControlRequest::Builder)>& fill,
                  uint64_t request_id) {
  capnp::MallocMessageBuilder m;
  auto req = m.initRoot<proto::ControlRequest>();
  req.setRequestId(request_id);
  fill(req);
  return EncodeFrame(m);
}

void SendAll(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n > 0)
      off += static_cast<size_t>(n);
    else if (n < 0 && (errno == EAGAIN || errno == EINTR))
      continue;
    else
      Die("a simulated node lost its connection");
  }
}

// Reads what is there; returns the number of replies, counts errors and keeps the view version.
int Drain(SimNode& n, Tally* tally) {
  char buf[16384];
  int replies = 0;
  while (true) {
    ssize_t r = recv(n.fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (r <= 0) break;
    n.decoder.Append(buf, static_cast<size_t>(r));
  }
  while (true) {
    auto f = n.decoder.Next();
    if (!f.ok()) Die("bad frame from the head: " + f.status().ToString());
    if (!*f) break;
    capnp::FlatArrayMessageReader reader(**f);
    auto reply = reader.getRoot<proto::ControlReply>();
    // The job bell never rings: its wait ends TimedOut, as on a real idle node.
    if (reply.getCode() != 0 && reply.getCode() != static_cast<uint16_t>(StatusCode::kTimedOut)) {
      tally->errors++;
    }
    if (reply.which() == proto::ControlReply::HEARTBEAT_ACK) {
      auto ack = reply.getHeartbeatAck();
      if (!ack.getKnown()) tally->errors++;
      if (ack.hasView()) {
        auto view = ack.getView();
        n.view_epoch = view.getEpoch();
        n.view_version = view.getVersion();
        tally->acks_with_view++;
        tally->view_nodes += view.getNodes().size();
      }
    }
    ++replies;
  }
  return replies;
}

struct RunResult {
  int nodes;
  double cpu_share;
  double heartbeat_rate;
  double expected_rate;
  double status_ms;
  int errors;
  double nodes_per_view;  // nodes carried by each heartbeat's view delta, on average
};

RunResult RunOne(int n, double window_s) {
  TempDir dir("bench-cp");
  setenv("CUMULUS_STATE_DIR", (dir.path() + "/state").c_str(), 1);
  Subprocess head({ExecutableDir() + "/cumulus", "start", "--head", "--block", "--port", "0",
                   "--data-dir", dir.path() + "/head", "--object-store-memory", "16M",
                   "--resources", "CPU=1"});
  g_head = &head;
  auto ready = head.WaitForLine("cumulus head ready", 30s);
  if (!ready) Die("the head did not start");
  auto field = [&](const std::string& key) {
    size_t at = ready->find(key + "=") + key.size() + 1;
    return ready->substr(at, ready->find(' ', at) - at);
  };
  HostPort address = *ParseHostPort(field("address"));
  std::string token = *LoadToken(field("token_file"));

  int ep = epoll_create1(EPOLL_CLOEXEC);
  std::vector<SimNode> nodes(n);
  Tally tally;
  // Connect, authenticate and register every node (pipelined per connection), in waves of 200 as
  // a fleet reconnecting to a restarted head would: the head caps connections that have not
  // authenticated yet.
  int pending = 0;
  epoll_event events[512];
  auto reg_deadline = Steady::now() + 60s;
  auto drain_until = [&](int left) {
    while (pending > left && Steady::now() < reg_deadline) {
      int k = epoll_wait(ep, events, 512, 1000);
      for (int e = 0; e < k; ++e) pending -= Drain(nodes[events[e].data.u32], &tally);
    }
  };
  for (int i = 0; i < n; ++i) {
    if (i % 200 == 0) drain_until(0);
    SimNode& s = nodes[i];
    auto fd = ConnectTcp(address, 5s);
    if (!fd.ok()) Die("connect: " + fd.status().ToString());
    s.fd = *fd;
    s.id = NodeId::FromRandom();
    std::string out = Frame(
        [&](auto r) {
          auto h = r.initHello();
          h.setToken(token);
          h.setRole("node");
          h.setProtocolVersion(proto::PROTOCOL_VERSION);
        },
        s.next_request++);
    NodeRecord rec;
    rec.id = s.id;
    rec.total = *ResourceSet::Parse("CPU=8,GPU=1,memory=32G");  // = `idle` below
    rec.available = rec.total;
    rec.labels = {{"site", "sim"}};
    out += Frame([&](auto r) { EncodeNode(rec, r.initRegisterNode()); }, s.next_request++);
    SendAll(s.fd, out);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    epoll_ctl(ep, EPOLL_CTL_ADD, s.fd, &ev);
    pending += 2;
  }
  drain_until(0);
  if (pending > 0) Die("not every node registered in 60 s");

  auto status_client = ControlClient::Connect(address, token);
  if (!status_client.ok()) Die(status_client.status().ToString());
  // Every node holds the view as of now, as a real node does once it has joined (its first
  // heartbeat brings the whole cluster; with 10,000 nodes that is about 2 MB a node, and forming
  // the cluster is not what this measures): the window sees the steady state.
  {
    auto v = (*status_client)->GetClusterStatus();
    if (!v.ok()) Die(v.status().ToString());
    for (auto& s : nodes) {
      s.view_epoch = v->head_started_micros;
      s.view_version = v->view_version;
    }
  }
  auto heartbeats_now = [&] {
    auto v = (*status_client)->GetClusterStatus();
    if (!v.ok()) Die(v.status().ToString());
    return v->heartbeats_received;
  };

  // Heartbeats: node i at offset i/N of every second. One warm-up second, then the window.
  auto start = Steady::now();
  auto period = std::chrono::duration<double>(1.0);
  size_t cursor = 0;
  long round = 0;
  auto due = [&](size_t i, long r) {
    return start +
           std::chrono::duration_cast<Steady::duration>(period * (r + static_cast<double>(i) / n));
  };
  // What a real node sends in its second number `r` (see the top of this file).
  std::string report = EncodeRecord(NodeStateReport{});
  const ResourceSet idle = *ResourceSet::Parse("CPU=8,GPU=1,memory=32G");
  auto heartbeat = [&](SimNode& s, long r) {
    std::string out = Frame(
        [&](auto req) {
          auto hb = req.initHeartbeat();
          hb.setNodeId(capnp::Data::Reader(s.id.data(), NodeId::kSize));
          // An idle node: what it registered is free (a changed amount would be news for
          // every other node's view).
          auto res = hb.initResourcesAvailable(static_cast<unsigned>(idle.units().size()));
          unsigned k = 0;
          for (auto& [name, units] : idle.units()) {
            res[k].setName(name);
            res[k].setAmount(static_cast<double>(units) / ResourceSet::kUnit);
            ++k;
          }
          hb.setWantView(true);
          hb.setViewEpoch(s.view_epoch);
          hb.setViewVersion(s.view_version);
        },
        s.next_request++);
    std::string me = s.id.Hex();
    if (r % 2 == 0) {
      out += Frame(
          [&](auto req) {
            auto put = req.initKvPut();
            put.setNamespace(kNodeStateNamespace);
            put.setKey(me);
            put.setValue(capnp::Data::Reader(reinterpret_cast<const uint8_t*>(report.data()),
                                             report.size()));
            put.setOverwrite(true);
          },
          s.next_request++);
    }
    if (r % 5 == 0) {
      out += Frame(
          [&](auto req) {
            auto list = req.initKvList();
            list.setNamespace(kJobQueueNamespace);
            list.setPrefix(me + "/");
            list.setLimit(100);
          },
          s.next_request++);
      out += Frame(
          [&](auto req) {
            auto wait = req.initKvWait();
            wait.setNamespace(kJobQueueNamespace);
            wait.setKey(me + "/bell");
            wait.setTimeoutMs(5000);
          },
          s.next_request++);
    }
    SendAll(s.fd, out);
  };
  bool measuring = false;
  double cpu0 = 0;
  uint64_t hb0 = 0;
  Steady::time_point t0;
  std::vector<double> status_ms;
  auto end = start + std::chrono::duration_cast<Steady::duration>(period * (1 + window_s));
  auto next_status = start + 1s;
  while (Steady::now() < end) {
    auto now = Steady::now();
    while (due(cursor, round) <= now) {
      heartbeat(nodes[cursor], round);
      if (++cursor == static_cast<size_t>(n)) {
        cursor = 0;
        ++round;
      }
    }
    if (!measuring && now >= start + 1s) {
      measuring = true;
      t0 = now;
      cpu0 = CpuSeconds(head.pid());
      hb0 = heartbeats_now();
    }
    // Status latency, sampled once a second (a listing of 10,000 nodes takes the head tens of ms:
    // sampled more often, the samples would be a good part of what is measured).
    if (measuring && now >= next_status) {
      auto s0 = Steady::now();
      auto v = (*status_client)->GetClusterStatus();
      if (!v.ok() || static_cast<int>(v->nodes.size()) != n + 1)
        Die("status did not list every node");
      status_ms.push_back(std::chrono::duration<double, std::milli>(Steady::now() - s0).count());
      next_status = Steady::now() + 1s;
    }
    auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(due(cursor, round) - Steady::now())
            .count();
    int k = epoll_wait(ep, events, 512, static_cast<int>(std::clamp<long long>(wait, 0, 50)));
    for (int i = 0; i < k; ++i) Drain(nodes[events[i].data.u32], &tally);
  }
  double elapsed = std::chrono::duration<double>(Steady::now() - t0).count();
  double per_view = tally.acks_with_view ? static_cast<double>(tally.view_nodes) /
                                               static_cast<double>(tally.acks_with_view)
                                         : 0;
  double cpu = CpuSeconds(head.pid()) - cpu0;
  uint64_t hbs = heartbeats_now() - hb0;
  for (auto& s : nodes) close(s.fd);
  close(ep);
  head.Kill(SIGTERM);
  head.Wait(20s);
  g_head = nullptr;
  std::sort(status_ms.begin(), status_ms.end());
  return RunResult{n,
                   cpu / elapsed,
                   hbs / elapsed,
                   static_cast<double>(n),
                   status_ms[status_ms.size() / 2],
                   tally.errors,
                   per_view};
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::vector<int> sizes = {100, 1000, 5000, 10000};
  const char* usage = "usage: bench_control_plane [--quick] [--nodes N[,N...]]";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--nodes" && i + 1 < argc) {
      sizes.clear();
      std::stringstream list(argv[++i]);
      std::string item;
      while (std::getline(list, item, ',')) {
        char* end = nullptr;
        long v = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end || v < 1 || v > 9500 * 2) {
          std::fprintf(stderr,
                       "bench_control_plane: --nodes wants counts from 1 to 19000, not '%s'\n",
                       item.c_str());
          return 2;
        }
        sizes.push_back(static_cast<int>(v));
      }
    } else if (a == "-h" || a == "--help") {
      std::printf("%s\n", usage);
      return 0;
    } else {
      std::fprintf(stderr, "bench_control_plane: unknown argument '%s'; %s\n", argv[i], usage);
      return 2;
    }
  }
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);  // the head inherits it
  setenv("CUMULUS_LOG_LEVEL", "warn", 1);
  const double window = quick ? 3 : 10;
  std::vector<RunResult> results;
  auto t = Steady::now();
  for (int n : sizes) {
    std::fprintf(stderr, "bench_control_plane: %d nodes...\n", n);
    results.push_back(RunOne(n, window));
  }
  std::printf(
      "\nbench_control_plane: one head, N simulated nodes heartbeating every 1 s over loopback "
      "(%.0f s window; %.1f s total)\n",
      window, std::chrono::duration<double>(Steady::now() - t).count());
  std::printf("reproduce: build/bin/bench_control_plane%s\n\n", quick ? " --quick" : "");
  std::printf("%-7s %-16s %-14s %-16s %-7s %-14s %-16s %s\n", "nodes", "head CPU", "heartbeats/s",
              "sent/s (anchor)", "ratio", "nodes/delta", "status latency", "errors");
  for (auto& r : results) {
    char cpu[32], status[32];
    std::snprintf(cpu, sizeof(cpu), "%.1f%% of a core", r.cpu_share * 100);
    std::snprintf(status, sizeof(status), "%.2f ms", r.status_ms);
    std::printf("%-7d %-16s %-14.0f %-16.0f %-7.2f %-14.2f %-16s %d\n", r.nodes, cpu,
                r.heartbeat_rate, r.expected_rate, r.heartbeat_rate / r.expected_rate,
                r.nodes_per_view, status, r.errors);
  }
  std::printf("\ntargets: 1,000 nodes under 25%% of one core, 10,000 under 50%%\n");
  return 0;
}
