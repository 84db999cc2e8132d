// Init and Shutdown: a worker process, a driver joining a running cluster, or a driver with an
// embedded cluster (a head and a node in this process).
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>

#include "cumulus/api.h"
#include "runtime/base/logging.h"
#include "runtime/base/numeric.h"
#include "runtime/call/function_catalog.h"
#include "runtime/cli/local_state.h"
#include "runtime/core/messages.h"
#include "runtime/core/timeline.h"
#include "runtime/head/control_client.h"
#include "runtime/head/head_server.h"
#include "runtime/node/node_daemon.h"
#include "workers/core_worker.h"

namespace cumulus {

namespace {

struct Process {
  std::mutex mu;
  std::unique_ptr<HeadServer> head;
  std::unique_ptr<NodeDaemon> node;
  std::unique_ptr<CoreWorker> core;
  std::string embedded_dir;  // removed at Shutdown
  bool is_worker = false;
};
Process& Me() {
  static Process* p = new Process();
  return *p;
}
std::atomic<internal::Runtime*> g_runtime{nullptr};

void RemoveEmbeddedDir(Process& me) {
  if (me.embedded_dir.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(me.embedded_dir, ec);
  me.embedded_dir.clear();
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::NotFound("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> OwnArgv() {
  std::vector<std::string> out;
  auto raw = ReadFile("/proc/self/cmdline");
  if (!raw.ok()) return out;
  std::string cur;
  for (char c : *raw) {
    if (c == '\0') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  return out;
}

// CUMULUS_MAX_LINEAGE_DEPTH (0-10000; default 100): see CoreWorkerOptions::max_lineage_depth.
int MaxLineageDepth() {
  auto depth = IntegerFromEnv("CUMULUS_MAX_LINEAGE_DEPTH", {0, 10000});
  if (depth.ok()) return static_cast<int>(depth->value_or(100));
  CUMULUS_LOG(WARN) << "cumulus: " << depth.status().message() << "; using 100";
  return 100;
}

// CUMULUS_HEAD_WAIT_MS (100-3600000; default 60000): see CoreWorkerOptions::head_wait.
Duration HeadWait() {
  const Duration fallback = CoreWorkerOptions().head_wait;
  auto ms = IntegerFromEnv("CUMULUS_HEAD_WAIT_MS", {100, 3'600'000, "milliseconds"});
  if (ms.ok()) return ms->has_value() ? std::chrono::milliseconds(**ms) : fallback;
  CUMULUS_LOG(WARN) << "cumulus: " << ms.status().message() << "; using "
                    << std::chrono::duration_cast<std::chrono::milliseconds>(fallback).count();
  return fallback;
}

[[noreturn]] void RunAsWorker() {
  CoreWorkerOptions o;
  o.node_socket = Env("CUMULUS_NODE_SOCKET");
  auto head = ParseHostPort(Env("CUMULUS_HEAD"));
  if (head.ok()) o.head = *head;
  o.token = Env("CUMULUS_TOKEN");
  auto job = JobId::FromHex(Env("CUMULUS_JOB_ID"));
  auto wid = WorkerId::FromHex(Env("CUMULUS_WORKER_ID"));
  if (!job.ok() || !wid.ok()) {
    std::fprintf(stderr, "cumulus worker: bad CUMULUS_JOB_ID or CUMULUS_WORKER_ID\n");
    _exit(2);
  }
  o.job = *job;
  o.worker_id = *wid;
  o.bind_host = Env("CUMULUS_BIND_HOST").empty() ? "127.0.0.1" : Env("CUMULUS_BIND_HOST");
  o.max_lineage_depth = MaxLineageDepth();
  o.head_wait = HeadWait();
  o.timeline = TimelineEnabledInEnv();  // the node sets CUMULUS_TIMELINE=0 when it keeps none
  auto core = CoreWorker::Start(o);
  if (!core.ok()) {
    std::fprintf(stderr, "cumulus worker: %s\n", core.status().ToString().c_str());
    _exit(3);
  }
  Me().is_worker = true;
  CoreWorker* w = core->get();
  Me().core = std::move(*core);
  g_runtime.store(w);
  w->RunWorkerLoop();
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(0);
}

Result<NodeRecord> FindLocalNode(ControlClient& head) {
  CUMULUS_ASSIGN_OR_RETURN(ClusterView view, head.GetClusterStatus());
  // A driver attached to a node keeps it up (its drain waits for the driver): a draining node
  // only if no other runs here, and one an autoscaler launched (a cumulus.node_type label) only
  // if no other node it could use runs here, so that an idle launched node can still go.
  for (int pass = 0; pass < 3; ++pass) {
    for (auto& n : view.nodes) {
      if (n.state != NodeState::kAlive || n.core_socket.empty()) continue;
      bool launched = n.labels.count(kNodeTypeLabel) > 0;
      if ((pass == 0 && (n.draining || launched)) || (pass == 1 && n.draining)) continue;
      if (access(n.core_socket.c_str(), R_OK | W_OK) == 0) return n;
    }
  }
  return Status::NotFound("no node of the cluster at " + head.head().ToString() +
                          " runs on this machine: start one with `cumulus start --address " +
                          head.head().ToString() +
                          "` (a driver talks to the node on its own machine)");
}

Status RegisterJob(CoreWorker& core, ControlClient& head, const JobId& job) {
  CUMULUS_ASSIGN_OR_RETURN(std::string program, ReadFile("/proc/self/exe"));
  ObjectId binary = ObjectId::FromPut(TaskId::ForDriver(job), ObjectId::kPutBit - 1);
  CUMULUS_RETURN_IF_ERROR(core.PutRaw(binary, program));
  JobRecord record;
  record.binary_object = binary.Hex();
  record.binary_size = program.size();
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(program.data(), program.size())));
  record.binary_hash = hash;
  record.transfer_address = core.transfer_address();
  record.argv = OwnArgv();
  record.driver_node = core.node_id().Hex();
  record.submitted = !Env("CUMULUS_JOB_ID").empty();
  record.start_micros = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  std::string bytes = EncodeRecord(record);
  CUMULUS_ASSIGN_OR_RETURN(bool existed, head.KvPut(kJobsNamespace, job.Hex(), bytes, false));
  if (existed) return Status::AlreadyExists("job id " + job.Hex() + " is taken");
  // What `cumulus call` may call in this job (runtime/call/function_catalog.h). The job runs
  // without it if it cannot be written.
  auto published = head.KvPut(kFunctionsNamespace, job.Hex(), EncodeThisProgramsCatalog());
  if (!published.ok()) {
    CUMULUS_LOG(WARN) << "cumulus: could not publish this job's functions for `cumulus call`: "
                      << published.status().message();
  }
  return core.AnnounceJob(bytes);
}

Status StartDriver(const InitOptions& options) {
  Process& me = Me();
  HostPort head_address;
  std::string token;
  std::string address = options.address.empty() ? Env("CUMULUS_ADDRESS") : options.address;
  if (address.empty()) {
    // An embedded cluster: a head and a node in this process, state in a private temp dir.
    if (options.object_store_memory) {  // checked before anything is made
      CUMULUS_RETURN_IF_ERROR(ObjectStore::CheckMemoryCapacity(options.object_store_memory,
                                                               "InitOptions::object_store_memory"));
    }
    std::string dir = options.data_dir;
    if (dir.empty()) {
      char tmpl[] = "/tmp/cumulus-embedded-XXXXXX";
      if (!mkdtemp(tmpl)) return Status::Unavailable("cannot create a directory in /tmp");
      dir = tmpl;
      me.embedded_dir = dir;
    } else {
      std::filesystem::create_directories(dir);
      chmod(dir.c_str(), 0700);
    }
    CUMULUS_ASSIGN_OR_RETURN(token, CreateOrLoadToken(dir + "/token"));
    HeadOptions ho;
    ho.port = 0;
    ho.data_dir = dir + "/head";
    ho.token = token;
    std::filesystem::create_directories(ho.data_dir);
    CUMULUS_ASSIGN_OR_RETURN(me.head, HeadServer::Start(ho));
    head_address = HostPort{"127.0.0.1", me.head->port()};
    NodeDaemonOptions no;
    no.head = head_address;
    no.token = token;
    no.data_dir = dir + "/node";
    std::filesystem::create_directories(no.data_dir);
    if (!options.resources.empty()) {
      CUMULUS_ASSIGN_OR_RETURN(no.declared, ResourceSet::Parse(options.resources));
    }
    if (!options.labels.empty()) {
      CUMULUS_ASSIGN_OR_RETURN(no.labels, ParseLabels(options.labels));
    }
    no.object_store_memory =
        options.object_store_memory ? options.object_store_memory : (2ull << 30);
    CUMULUS_ASSIGN_OR_RETURN(me.node, NodeDaemon::Start(no));
  } else {
    CUMULUS_ASSIGN_OR_RETURN(head_address, cli::ResolveAddress(address));
    std::string token_file =
        options.token_file.empty() ? Env("CUMULUS_TOKEN_FILE") : options.token_file;
    CUMULUS_ASSIGN_OR_RETURN(token, cli::ResolveToken(token_file));
  }
  ControlClientOptions co;
  co.role = "driver";
  CUMULUS_ASSIGN_OR_RETURN(auto head, ControlClient::Connect(head_address, token, co));
  std::string socket;
  if (me.node) {
    socket = me.node->core_socket();
  } else if (!Env("CUMULUS_NODE_SOCKET").empty()) {
    socket = Env("CUMULUS_NODE_SOCKET");  // the node that started it (`cumulus submit`), or chosen
  } else {
    CUMULUS_ASSIGN_OR_RETURN(NodeRecord local, FindLocalNode(*head));
    socket = local.core_socket;
  }
  std::random_device rd;
  Status last;
  // `cumulus submit` chose the job's id (its records and logs are filed under it).
  std::string given = Env("CUMULUS_WORKER_ID").empty() ? Env("CUMULUS_JOB_ID") : "";
  auto given_job = JobId::FromHex(given);
  if (!given.empty() && (!given_job.ok() || given_job->IsNil())) {
    return Status::InvalidArgument("CUMULUS_JOB_ID=" + given + " is not a job id");
  }
  for (int attempt = 0; attempt < (given.empty() ? 8 : 1); ++attempt) {
    JobId job = given.empty() ? JobId::FromInt((rd() & 0x7fffffffu) | 1u) : *given_job;
    CoreWorkerOptions o;
    o.node_socket = socket;
    o.head = head_address;
    o.token = token;
    o.job = job;
    o.max_lineage_depth = MaxLineageDepth();
    o.head_wait = HeadWait();
    CUMULUS_ASSIGN_OR_RETURN(auto core, CoreWorker::Start(o));
    last = RegisterJob(*core, *head, job);
    if (last.ok()) {
      g_runtime.store(core.get());
      me.core = std::move(core);
      return Status();
    }
    core->Stop();
    if (last.code() != StatusCode::kAlreadyExists) break;
  }
  return last;
}

}  // namespace

namespace internal {
Runtime* CurrentRuntime() { return g_runtime.load(std::memory_order_acquire); }
}  // namespace internal

// Every runtime Init installs is a CoreWorker.
CoreWorker* CurrentCoreWorker() { return static_cast<CoreWorker*>(internal::CurrentRuntime()); }

Status Init(const InitOptions& options) {
  if (!Env("CUMULUS_WORKER_ID").empty()) RunAsWorker();
  Process& me = Me();
  std::lock_guard<std::mutex> lock(me.mu);
  if (me.core) return Status::AlreadyExists("cumulus::Init was already called");
  Status st = StartDriver(options);
  if (!st.ok()) {
    me.core.reset();
    me.node.reset();
    me.head.reset();
    RemoveEmbeddedDir(me);
  }
  return st;
}

Status Init(int argc, char** argv, const InitOptions& options) {
  (void)argc;
  (void)argv;  // the program's own command line is read from /proc for its workers
  return Init(options);
}

void Shutdown() {
  Process& me = Me();
  std::lock_guard<std::mutex> lock(me.mu);
  if (!me.core) return;
  me.core->Stop();
  g_runtime.store(nullptr);
  me.core.reset();
  me.node.reset();
  me.head.reset();
  RemoveEmbeddedDir(me);
}

bool IsInitialized() { return internal::CurrentRuntime() != nullptr; }
bool IsWorker() { return !Env("CUMULUS_WORKER_ID").empty(); }

std::vector<int> GetGpuIds() {
  std::vector<int> ids;
  std::string v = Env("CUDA_VISIBLE_DEVICES");
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // A device given by UUID (or anything but an index) has no id here.
    auto id = ParseInteger("a CUDA_VISIBLE_DEVICES entry", item, {0, INT32_MAX});
    if (id.ok()) ids.push_back(static_cast<int>(*id));
  }
  return ids;
}

NodeId CurrentNodeId() {
  auto* r = internal::CurrentRuntime();
  return r ? r->node_id() : NodeId();
}

bool WasRestarted() {
  auto* r = internal::CurrentRuntime();
  return r && r->was_restarted();
}

Result<PlacementGroup> CreatePlacementGroup(
    const std::vector<std::map<std::string, double>>& bundles, PlacementGroupStrategy strategy,
    std::chrono::milliseconds timeout, const std::string& purpose) {
  auto* r = internal::CurrentRuntime();
  if (!r) return Status::Unavailable("cumulus is not initialized: call cumulus::Init() first");
  CUMULUS_ASSIGN_OR_RETURN(auto made, r->CreatePlacementGroup(bundles, strategy, timeout.count(),
                                                              purpose, PlacementGroupId()));
  return PlacementGroup(made.first, std::move(made.second));
}

Status RemovePlacementGroup(const PlacementGroup& group) {
  auto* r = internal::CurrentRuntime();
  if (!r) return Status::Unavailable("cumulus is not initialized: call cumulus::Init() first");
  return r->RemovePlacementGroup(group.id());
}

}  // namespace cumulus
