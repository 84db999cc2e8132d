// bench_faults: a job of short tasks and actor calls on a real cluster of `cumulus start`
// processes on loopback (a head with a node that hosts this driver, and 3 nodes), run twice: once
// undisturbed, once while a node is SIGKILLed and replaced every --node-every seconds and a
// worker process is SIGKILLed every --worker-every seconds. It reports completed tasks/s in both
// runs (the undisturbed run is the anchor: the ratio is what the faults cost), how long the
// cluster took to notice each fault, and the results lost or duplicated (must be 0).
//
//   build/bin/bench_faults            100,000 tasks and 20 actors; a node every 20 s, a worker
//                                     every 2 s
//   build/bin/bench_faults --quick    10,000 tasks, a node every 4 s, a worker every 1 s (< 30 s)
// Each run repeats the job (new ids each round) for 60 s (--quick: 10 s).
//
// Detection times: a node's, from its SIGKILL until the head lists it DEAD; a worker's, from its
// SIGKILL until its node has reaped the process (it then retries what ran there).
// Lost: a task or call whose Get failed or returned a wrong value. Duplicated: a result delivered
// twice for one call (each ObjectRef resolves once, so this counts wrong values that match another
// call's). Re-executions (a task run again because its worker or node died: tasks are
// at-least-once by default, like Ray's) are counted from a log every execution appends to.
#include <cumulus/cumulus.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/base/subprocess.h"
#include "runtime/base/temp_dir.h"
#include "runtime/head/control_client.h"
#include "runtime/head/head_server.h"

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// Every execution appends its 8-byte id here (O_APPEND writes of 8 bytes do not interleave).
std::string ExecLog() {
  const char* p = std::getenv("BENCH_FAULTS_EXEC_LOG");
  return p ? p : "";
}
void LogExecution(uint64_t id) {
  static int fd = open(ExecLog().c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0) (void)!write(fd, &id, sizeof(id));
}

std::pair<uint64_t, int> Work(uint64_t id) {
  LogExecution(id);
  uint64_t x = id;
  for (int i = 0; i < 2000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  (void)x;
  return {id * 3 + 1, static_cast<int>(getpid())};
}

class Acc {
 public:
  std::pair<uint64_t, int> Add(uint64_t id) {
    LogExecution(id);
    return {id * 3 + 1, static_cast<int>(getpid())};
  }
};
Acc* CreateAcc() { return new Acc(); }

}  // namespace

CUMULUS_REMOTE(Work, CreateAcc, &Acc::Add);

namespace {

struct Config {
  bool quick = false;
  uint64_t tasks = 100000;
  int actors = 20;
  int calls_per_actor = 500;
  double node_every_s = 20, worker_every_s = 2;
  double run_s = 60;  // each run repeats the job until this long has passed
};

class Cluster {
 public:
  explicit Cluster(const std::string& dir) : dir_(dir) {}

  bool Start() {
    setenv("CUMULUS_STATE_DIR", (dir_ + "/state").c_str(), 1);
    head_ = std::make_unique<cumulus::Subprocess>(std::vector<std::string>{
        Bin("cumulus"), "start", "--head", "--block", "--port", "0", "--data-dir", dir_ + "/head",
        "--resources", "CPU=2", "--object-store-memory", "256M"});
    auto ready = head_->WaitForLine("cumulus head ready", 30s);
    if (!ready) return false;
    address_ = Field(*ready, "address");
    token_file_ = Field(*ready, "token_file");
    for (int i = 0; i < 3; ++i) {
      if (!AddNode()) return false;
    }
    return true;
  }

  bool AddNode() {
    std::string name = "n" + std::to_string(next_node_++);
    auto p = std::make_unique<cumulus::Subprocess>(std::vector<std::string>{
        Bin("cumulus"), "start", "--address", address_, "--token-file", token_file_, "--block",
        "--data-dir", dir_ + "/" + name, "--resources", "CPU=2", "--object-store-memory", "256M"});
    auto ready = p->WaitForLine("cumulus node ready", 30s);
    if (!ready) return false;
    std::lock_guard<std::mutex> lock(mu_);
    nodes_.push_back({std::move(p), Field(*ready, "node_id")});
    return true;
  }

  // SIGKILLs the oldest node (never the head's, which hosts the driver); returns its id.
  std::string KillANode() {
    std::lock_guard<std::mutex> lock(mu_);
    if (nodes_.empty()) return "";
    auto victim = std::move(nodes_.front());
    nodes_.erase(nodes_.begin());
    victim.process->Kill(SIGKILL);
    (void)victim.process->Wait(10s);
    return victim.id;
  }

  std::unique_ptr<cumulus::ControlClient> Client() {
    auto token = cumulus::LoadToken(token_file_);
    auto hp = cumulus::ParseHostPort(address_);
    if (!token.ok() || !hp.ok()) return nullptr;
    auto c = cumulus::ControlClient::Connect(*hp, *token);
    return c.ok() ? std::move(*c) : nullptr;
  }

  std::string HeadNodeSocket() {
    auto c = Client();
    if (!c) return "";
    auto v = c->GetClusterStatus();
    if (!v.ok()) return "";
    for (auto& n : v->nodes) {
      if (n.pid == head_->pid()) return n.core_socket;
    }
    return "";
  }

  const std::string& address() const { return address_; }
  const std::string& token_file() const { return token_file_; }

 private:
  struct Node {
    std::unique_ptr<cumulus::Subprocess> process;
    std::string id;
  };
  static std::string Bin(const std::string& name) { return cumulus::ExecutableDir() + "/" + name; }
  static std::string Field(const std::string& line, const std::string& key) {
    size_t at = line.find(key + "=");
    if (at == std::string::npos) return "";
    at += key.size() + 1;
    return line.substr(at, line.find(' ', at) - at);
  }

  std::string dir_, address_, token_file_;
  std::unique_ptr<cumulus::Subprocess> head_;
  std::mutex mu_;
  std::vector<Node> nodes_;
  int next_node_ = 0;
};

struct RunResult {
  double seconds = 0;
  uint64_t completed = 0, lost = 0, duplicated = 0;
  std::string first_loss;
};

// Submits the job in windows of in-flight work; records worker pids seen for the fault thread.
RunResult RunJob(const Config& cfg, const std::vector<cumulus::ActorHandle<Acc>>& actors,
                 uint64_t id_base, std::vector<int>* pids, std::mutex* pids_mu) {
  RunResult r;
  auto t0 = Clock::now();
  std::set<uint64_t> seen;
  auto check = [&](uint64_t id, const cumulus::Result<std::pair<uint64_t, int>>& v) {
    if (!v.ok() || v->first != id * 3 + 1) {
      if (v.ok() && v->first % 3 == 1 && seen.count((v->first - 1) / 3)) r.duplicated++;
      if (r.first_loss.empty()) r.first_loss = v.ok() ? "wrong value" : v.status().ToString();
      r.lost++;
      return;
    }
    seen.insert(id);
    r.completed++;
    std::lock_guard<std::mutex> lock(*pids_mu);
    if (pids->size() < 4096) pids->push_back(v->second);
  };
  const uint64_t kWindow = 2000;
  uint64_t next = 0;
  int next_call = 0;
  uint64_t total_calls = static_cast<uint64_t>(cfg.actors) * cfg.calls_per_actor;
  while (next < cfg.tasks || next_call < static_cast<int>(total_calls)) {
    std::vector<std::pair<uint64_t, cumulus::ObjectRef<std::pair<uint64_t, int>>>> window;
    for (uint64_t i = 0; i < kWindow && next < cfg.tasks; ++i, ++next) {
      uint64_t id = id_base + next;
      window.emplace_back(id, cumulus::Task(Work).Remote(id));
    }
    // Actor calls interleaved: at-least-once (retries) so that a restart does not lose them.
    for (int i = 0; i < cfg.actors * 10 && next_call < static_cast<int>(total_calls);
         ++i, ++next_call) {
      uint64_t id = id_base + cfg.tasks + static_cast<uint64_t>(next_call);
      auto& a = actors[static_cast<size_t>(next_call) % actors.size()];
      window.emplace_back(id, a.Task(&Acc::Add).SetMaxRetries(-1).Remote(id));
    }
    for (auto& [id, ref] : window) check(id, cumulus::TryGet(ref, 120s));
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double Max(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

uint64_t ReExecutions(const std::string& path, uint64_t lo, uint64_t hi) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return 0;
  std::map<uint64_t, int> runs;
  uint64_t id;
  while (std::fread(&id, sizeof(id), 1, f) == 1) {
    if (id >= lo && id < hi) runs[id]++;
  }
  std::fclose(f);
  uint64_t extra = 0;
  for (auto& [k, n] : runs) extra += static_cast<uint64_t>(n - 1);
  return extra;
}

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv("CUMULUS_WORKER_ID")) {
    (void)cumulus::Init(argc, argv);  // a worker: runs tasks until its node goes
    return 0;
  }
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      cfg.quick = true;
      cfg.tasks = 10000;
      cfg.calls_per_actor = 50;
      cfg.node_every_s = 4;
      cfg.worker_every_s = 1;
      cfg.run_s = 10;
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: bench_faults [--quick]\n");
      return 0;
    } else {
      std::fprintf(stderr, "bench_faults: unknown argument '%s'; run bench_faults --help\n",
                   a.c_str());
      return 2;
    }
  }
  std::printf("# %s%s\n", argv[0], cfg.quick ? " --quick" : "");
  std::printf(
      "# a head+node (the driver's) and 3 nodes of 2 CPUs each on loopback; %llu tasks "
      "and %d actors x %d calls per run\n",
      static_cast<unsigned long long>(cfg.tasks), cfg.actors, cfg.calls_per_actor);
  std::fflush(stdout);
  setenv("CUMULUS_LOG_LEVEL", "error", 0);  // the cluster's retry warnings would drown the table
  cumulus::TempDir dir;
  std::string exec_log = dir.path() + "/executions";
  setenv("BENCH_FAULTS_EXEC_LOG", exec_log.c_str(), 1);
  Cluster cluster(dir.path());
  if (!cluster.Start()) {
    std::fprintf(stderr, "bench_faults: the cluster did not start\n");
    return 1;
  }
  setenv("CUMULUS_ADDRESS", cluster.address().c_str(), 1);
  setenv("CUMULUS_TOKEN_FILE", cluster.token_file().c_str(), 1);
  setenv("CUMULUS_NODE_SOCKET", cluster.HeadNodeSocket().c_str(), 1);
  if (auto st = cumulus::Init(argc, argv); !st.ok()) {
    std::fprintf(stderr, "bench_faults: %s\n", st.ToString().c_str());
    return 1;
  }
  std::vector<int> pids;
  std::mutex pids_mu;
  uint64_t per_run = cfg.tasks + static_cast<uint64_t>(cfg.actors) * cfg.calls_per_actor;

  // Rounds of the job, each with ids of its own, until the run's time is up.
  // The run's actors live through its rounds (an actor lives until killed or its job ends).
  auto run_for = [&](uint64_t base, uint64_t* ids_used) {
    std::vector<cumulus::ActorHandle<Acc>> actors;
    for (int i = 0; i < cfg.actors; ++i) {
      actors.push_back(cumulus::Actor(CreateAcc).SetMaxRestarts(-1).Remote());
    }
    RunResult total;
    uint64_t round = 0;
    do {
      RunResult r = RunJob(cfg, actors, base + round * per_run, &pids, &pids_mu);
      total.seconds += r.seconds;
      total.completed += r.completed;
      total.lost += r.lost;
      total.duplicated += r.duplicated;
      if (total.first_loss.empty()) total.first_loss = r.first_loss;
      ++round;
    } while (total.seconds < cfg.run_s);
    *ids_used = round * per_run;
    for (auto& a : actors) (void)a.Kill();
    return total;
  };
  uint64_t calm_ids = 0, hit_ids = 0;
  const uint64_t kHitBase = 1ull << 40;
  RunResult calm = run_for(0, &calm_ids);

  // The same job again, under fire.
  std::atomic<bool> done{false};
  std::vector<std::thread> replacements;  // nodes started in place of killed ones
  std::vector<double> node_detect_ms, worker_detect_ms;
  int node_kills = 0, worker_kills = 0;
  std::thread faults([&] {
    auto head = cluster.Client();
    std::mt19937 rng(42);
    auto next_node = Clock::now() + std::chrono::duration<double>(cfg.node_every_s);
    auto next_worker = Clock::now() + std::chrono::duration<double>(cfg.worker_every_s);
    std::vector<std::pair<int, Clock::time_point>> reaping;  // killed workers not yet reaped
    std::set<int> killed;
    while (!done) {
      std::this_thread::sleep_for(5ms);
      auto now = Clock::now();
      for (auto it = reaping.begin(); it != reaping.end();) {
        if (kill(it->first, 0) != 0) {
          worker_detect_ms.push_back(
              std::chrono::duration<double, std::milli>(now - it->second).count());
          it = reaping.erase(it);
        } else {
          ++it;
        }
      }
      if (now >= next_worker) {
        next_worker = now + std::chrono::duration<double>(cfg.worker_every_s);
        int pid = 0;
        {
          std::lock_guard<std::mutex> lock(pids_mu);
          for (int tries = 0; tries < 64 && !pids.empty() && pid == 0; ++tries) {
            int p = pids[rng() % pids.size()];
            if (!killed.count(p) && kill(p, 0) == 0) pid = p;
          }
          pids.clear();  // only pids seen from now on: live workers
        }
        if (pid > 0 && kill(pid, SIGKILL) == 0) {
          killed.insert(pid);
          worker_kills++;
          reaping.emplace_back(pid, now);
        }
      }
      if (now >= next_node) {
        next_node = now + std::chrono::duration<double>(cfg.node_every_s);
        auto t = Clock::now();
        std::string id = cluster.KillANode();
        node_kills++;
        replacements.emplace_back([&cluster] { cluster.AddNode(); });
        // Until the head lists it DEAD.
        while (head && !done) {
          auto v = head->GetClusterStatus();
          bool dead = false;
          if (v.ok()) {
            for (auto& n : v->nodes) {
              if (n.id.Hex() == id && n.state == cumulus::NodeState::kDead) dead = true;
            }
          }
          if (dead) {
            node_detect_ms.push_back(
                std::chrono::duration<double, std::milli>(Clock::now() - t).count());
            break;
          }
          std::this_thread::sleep_for(10ms);
        }
      }
    }
  });
  RunResult hit = run_for(kHitBase, &hit_ids);
  done = true;
  faults.join();
  for (auto& t : replacements) t.join();

  uint64_t calm_rerun = ReExecutions(exec_log, 0, calm_ids);
  uint64_t hit_rerun = ReExecutions(exec_log, kHitBase, kHitBase + hit_ids);
  double calm_rate = static_cast<double>(calm.completed) / calm.seconds;
  double hit_rate = static_cast<double>(hit.completed) / hit.seconds;
  std::printf("| run | completed | seconds | tasks+calls/s | lost | duplicated | re-executed |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  std::printf("| no faults (anchor) | %llu | %.1f | %.0f | %llu | %llu | %llu |\n",
              static_cast<unsigned long long>(calm.completed), calm.seconds, calm_rate,
              static_cast<unsigned long long>(calm.lost),
              static_cast<unsigned long long>(calm.duplicated),
              static_cast<unsigned long long>(calm_rerun));
  std::printf("| faults | %llu | %.1f | %.0f (%.2fx) | %llu | %llu | %llu |\n",
              static_cast<unsigned long long>(hit.completed), hit.seconds, hit_rate,
              hit_rate / calm_rate, static_cast<unsigned long long>(hit.lost),
              static_cast<unsigned long long>(hit.duplicated),
              static_cast<unsigned long long>(hit_rerun));
  std::printf(
      "\n| fault | injected | detection measured | median ms | max ms |\n"
      "| --- | --- | --- | --- | --- |\n");
  std::printf("| node SIGKILL (until DEAD at the head) | %d | %zu | %.0f | %.0f |\n", node_kills,
              node_detect_ms.size(), Median(node_detect_ms), Max(node_detect_ms));
  std::printf("| worker SIGKILL (until reaped by its node) | %d | %zu | %.1f | %.1f |\n",
              worker_kills, worker_detect_ms.size(), Median(worker_detect_ms),
              Max(worker_detect_ms));
  if (!calm.first_loss.empty() || !hit.first_loss.empty()) {
    std::printf("\nfirst loss: %s\n",
                (hit.first_loss.empty() ? calm.first_loss : hit.first_loss).c_str());
  }
  std::fflush(stdout);
  cumulus::Shutdown();
  return calm.lost + hit.lost == 0 ? 0 : 1;
}
