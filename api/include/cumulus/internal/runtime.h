// The type-erased core behind the templates of cumulus/api.h: one per process (driver or worker).
// Users do not call this directly.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/options.h"
#include "cumulus/status.h"

namespace cumulus {
namespace internal {

struct ArgData {
  bool is_ref = false;
  ObjectId ref;       // is_ref
  std::string value;  // !is_ref: the serialized value
};

struct CallOptions {
  // Tasks ask for CPU=1 unless "CPU" is named here (0: none); actors ask for nothing by default.
  std::map<std::string, double> resources;
  std::string label_selector;      // "site=onprem,gpu_type!=T4"
  std::string name;                // actors: the name GetActor finds
  std::optional<int> max_retries;  // unset: the default (tasks 3, actor methods 0); -1: forever
  int max_restarts = 0;            // actors
  bool detached = false;           // actors: outlives its job (needs a name)
  Strategy strategy = Strategy::kDefault;
  NodeId affinity_node;
  bool affinity_soft = false;
  PlacementGroupId placement_group;  // nil: none
  int bundle_index = -1;
  std::string purpose;  // tasks and actor creations: shown with their pending demand
};

// A read-only view of an object's bytes, valid while the Payload lives.
struct Payload {
  std::string_view bytes;
  std::shared_ptr<void> keep;  // owns what `bytes` points into
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  // Submission never fails synchronously: a bad request makes the returned object fail, and Get
  // reports why.
  virtual ObjectId SubmitTask(const std::string& function, std::vector<ArgData> args,
                              const CallOptions& options) = 0;
  virtual ActorId CreateActor(const std::string& factory, const std::string& class_name,
                              std::vector<ArgData> args, const CallOptions& options) = 0;
  virtual ObjectId SubmitActorTask(const ActorId& actor, const std::string& method,
                                   std::vector<ArgData> args, const CallOptions& options) = 0;
  // timeout_ms < 0: no limit.
  virtual Result<Payload> Get(const ObjectId& id, int64_t timeout_ms) = 0;
  virtual Result<ObjectId> Put(std::string bytes) = 0;
  // Put of `size` bytes that `fill` writes straight into the object store (large values).
  virtual Result<ObjectId> PutWith(uint64_t size, const std::function<void(uint8_t*)>& fill) = 0;
  // ready[i] for each id; returns when `num_ready` are ready (or failed) or at the timeout.
  virtual std::vector<bool> Wait(const std::vector<ObjectId>& ids, size_t num_ready,
                                 int64_t timeout_ms) = 0;
  virtual void AddRef(const ObjectId& id) = 0;
  virtual void RemoveRef(const ObjectId& id) = 0;
  virtual Status Cancel(const ObjectId& id) = 0;
  virtual Status KillActor(const ActorId& actor) = 0;
  // The actor's id and its class (typeid name).
  virtual Result<std::pair<ActorId, std::string>> GetActor(const std::string& name) = 0;
  // The group's binary id and the node of each bundle. `id`: the group's id (nil: a new one),
  // so that another thread can CancelPlacementGroup it while it is being reserved.
  virtual Result<std::pair<PlacementGroupId, std::vector<NodeId>>> CreatePlacementGroup(
      const std::vector<std::map<std::string, double>>& bundles, PlacementGroupStrategy strategy,
      int64_t timeout_ms, const std::string& purpose, const PlacementGroupId& id) = 0;
  virtual Status RemovePlacementGroup(const PlacementGroupId& id) = 0;
  // Gives up on the CreatePlacementGroup under `id` that has not returned (begun, or about to
  // begin on another thread): it returns Cancelled at once and nothing stays reserved.
  virtual void CancelPlacementGroup(const PlacementGroupId& id) = 0;
  virtual NodeId node_id() const = 0;
  // Actor workers: this instance was built again after its predecessor died.
  virtual bool was_restarted() const { return false; }
  // In an actor's worker: that actor (from its constructor on); elsewhere a null id.
  virtual ActorId current_actor() const = 0;
  // The job this process belongs to (its driver's, for workers).
  virtual JobId job_id() const = 0;
};

// The process's runtime; null before Init and after Shutdown.
Runtime* CurrentRuntime();

}  // namespace internal
}  // namespace cumulus
