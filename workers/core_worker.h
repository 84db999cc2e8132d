// CoreWorker: the runtime inside every driver and worker process (behind cumulus/api.h).
//
// As an owner (drivers, and workers whose code submits tasks) it keeps the table of the objects
// its tasks return: reference counts from ObjectRef handles, each object's state (pending, an
// inline value, or sealed in some node's store, or failed with a reason), and the tasks that wait
// for their arguments. A task is sent to the node only when its ObjectRef arguments are ready:
// small values go inline, large ones as a location, so the worker reads them from its own node's
// store (pulling them over the object channel first if they live elsewhere). When the last
// reference to an object goes, the object is freed where it lives.
//
// Actor calls go straight to the actor's worker over TCP (no node in between), in the order made.
//
// As a worker it executes the tasks its node sends (and, once it hosts an actor, the calls of
// its callers), one at a time, and answers each on the connection it came from.
#pragma once

#include <memory>
#include <string>

#include "cumulus/internal/runtime.h"
#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/net/tcp.h"

namespace cumulus {

struct CoreWorkerOptions {
  std::string node_socket;  // the node's core.sock
  HostPort head;
  std::string token;
  JobId job;
  WorkerId worker_id;                   // set: this process is a worker
  std::string bind_host = "127.0.0.1";  // where an actor listens for its callers
  // Results made through longer chains of tasks keep no lineage (they cannot be rebuilt).
  int max_lineage_depth = 100;
  // How long a call that needs the head (named actors, GetActor, the head's key-value store)
  // waits for a head that is down or does not answer, before it fails naming the head.
  Duration head_wait = std::chrono::seconds(60);
  Clock* clock = &SystemClock::Get();  // deadlines of Get, Wait, placement groups, head retries
  // Workers: time each task's phases and ship them to the node (runtime/core/timeline.h).
  bool timeline = true;
};

class CoreWorker : public internal::Runtime {
 public:
  static Result<std::unique_ptr<CoreWorker>> Start(const CoreWorkerOptions& options);
  // Runs tasks until the node goes away (worker processes only).
  virtual void RunWorkerLoop() = 0;
  // Kills owned actors, frees owned objects, closes connections. Idempotent.
  virtual void Stop() = 0;
  // Stores `bytes` as object `id` in this node's store, owned by this process (freed at Stop).
  virtual Status PutRaw(const ObjectId& id, const std::string& bytes) = 0;
  // Tells this process's node where the job's program is (a serialized JobRecord), so that the
  // job's work can start workers on any node without asking the head (drivers only).
  virtual Status AnnounceJob(const std::string& record) = 0;
  // host:port of this node's object channel.
  virtual std::string transfer_address() const = 0;

  // For libraries built into the runtime (collective groups); not part of the user's API.
  // The head's key-value store.
  virtual Status KvPut(const std::string& ns, const std::string& key, const std::string& value) = 0;
  // Waits up to timeout_ms for the key to exist.
  virtual Result<std::string> KvWait(const std::string& ns, const std::string& key,
                                     int64_t timeout_ms) = 0;
  // The head's host:port and the cluster token, for libraries that open their own connections.
  virtual std::pair<std::string, std::string> cluster_credentials() const = 0;
  // Where this process listens for other nodes (its node's bind address).
  virtual std::string bind_host() const = 0;
};

// This process's core worker; null before Init and after Shutdown.
CoreWorker* CurrentCoreWorker();

}  // namespace cumulus
