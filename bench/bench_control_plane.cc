// bench_control_plane: how many nodes one head holds.
//
// For each N, starts a fresh head process (`cumulus start --head --block`), connects N simulated
// nodes from this process (one TCP connection each, authenticated, registered), has each send a
// heartbeat every second (spread evenly over the second), and measures over a window:
//   - the head process's CPU use (utime + stime from /proc, as a share of one core),
//   - heartbeats the head processed per second, against the N/s the nodes were asked to send,
//   - `status` latency (a full cluster listing with N nodes) from another connection.
// Target: 1,000 nodes at under 25% of one core.
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
  FrameDecoder decoder{1 << 20};
  uint64_t next_request = 1;
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

// Reads what is there; returns the number of replies, and counts errors.
int Drain(SimNode& n, int* errors) {
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
    if (reply.getCode() != 0) (*errors)++;
    if (reply.which() == proto::ControlReply::HEARTBEAT_ACK && !reply.getHeartbeatAck().getKnown())
      (*errors)++;
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
  int errors = 0;
  // Connect, authenticate and register every node (pipelined per connection), in waves of 200 as
  // a fleet reconnecting to a restarted head would: the head caps connections that have not
  // authenticated yet.
  int pending = 0;
  epoll_event events[512];
  auto reg_deadline = Steady::now() + 60s;
  auto drain_until = [&](int left) {
    while (pending > left && Steady::now() < reg_deadline) {
      int k = epoll_wait(ep, events, 512, 1000);
      for (int e = 0; e < k; ++e) pending -= Drain(nodes[events[e].data.u32], &errors);
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
    rec.total = *ResourceSet::Parse("CPU=8,GPU=1,memory=32G");
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
  auto heartbeat = [&](SimNode& s) {
    SendAll(s.fd, Frame(
                      [&](auto r) {
                        auto hb = r.initHeartbeat();
                        hb.setNodeId(capnp::Data::Reader(s.id.data(), NodeId::kSize));
                        auto res = hb.initResourcesAvailable(2);
                        res[0].setName("CPU");
                        res[0].setAmount(8);
                        res[1].setName("GPU");
                        res[1].setAmount(1);
                      },
                      s.next_request++));
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
      heartbeat(nodes[cursor]);
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
    if (measuring && now >= next_status) {  // status latency, sampled every 250 ms
      auto s0 = Steady::now();
      auto v = (*status_client)->GetClusterStatus();
      if (!v.ok() || static_cast<int>(v->nodes.size()) != n + 1)
        Die("status did not list every node");
      status_ms.push_back(std::chrono::duration<double, std::milli>(Steady::now() - s0).count());
      next_status = Steady::now() + 250ms;
    }
    auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(due(cursor, round) - Steady::now())
            .count();
    int k = epoll_wait(ep, events, 512, static_cast<int>(std::clamp<long long>(wait, 0, 50)));
    for (int i = 0; i < k; ++i) Drain(nodes[events[i].data.u32], &errors);
  }
  double elapsed = std::chrono::duration<double>(Steady::now() - t0).count();
  double cpu = CpuSeconds(head.pid()) - cpu0;
  uint64_t hbs = heartbeats_now() - hb0;
  for (auto& s : nodes) close(s.fd);
  close(ep);
  head.Kill(SIGTERM);
  head.Wait(20s);
  g_head = nullptr;
  std::sort(status_ms.begin(), status_ms.end());
  return RunResult{
      n,     cpu / elapsed, hbs / elapsed, static_cast<double>(n), status_ms[status_ms.size() / 2],
      errors};
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick")
      quick = true;
    else if (a == "-h" || a == "--help") {
      std::printf("usage: bench_control_plane [--quick]\n");
      return 0;
    } else {
      std::fprintf(
          stderr,
          "bench_control_plane: unknown argument '%s'; usage: bench_control_plane [--quick]\n",
          argv[i]);
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
  for (int n : {100, 1000, 5000}) results.push_back(RunOne(n, window));
  std::printf(
      "\nbench_control_plane: one head, N simulated nodes heartbeating every 1 s over loopback "
      "(%.0f s window; %.1f s total)\n",
      window, std::chrono::duration<double>(Steady::now() - t).count());
  std::printf("reproduce: build/bin/bench_control_plane%s\n\n", quick ? " --quick" : "");
  std::printf("%-7s %-16s %-18s %-18s %-8s %-17s %s\n", "nodes", "head CPU", "heartbeats/s",
              "sent/s (anchor)", "ratio", "status latency", "errors");
  for (auto& r : results) {
    std::printf(
        "%-7d %-16s %-18.0f %-18.0f %-8.2f %-17s %d\n", r.nodes,
        (std::to_string(static_cast<int>(r.cpu_share * 1000) / 10.0).substr(0, 4) + "% of a core")
            .c_str(),
        r.heartbeat_rate, r.expected_rate, r.heartbeat_rate / r.expected_rate,
        (std::to_string(r.status_ms).substr(0, 5) + " ms").c_str(), r.errors);
  }
  std::printf("\ntarget: 1,000 nodes at under 25%% of one core\n");
  return 0;
}
