// ReferenceTable: the objects a driver or worker owns (the results of the tasks it submitted and
// what it Put), their reference counts, where each lives, and how a stored result can be made
// again (lineage).
//
// An object stays while a handle (ObjectRef) or a task that takes it as an argument holds it, and
// while it is pending; then it is freed: a stored one is queued for its node to free (TakeFrees).
// A stored task result keeps how it was made while it lives, with its own object arguments held,
// so that it can be rebuilt if the node holding it dies (PlanRebuild).
//
// Not thread-safe: the core worker calls it under its lock. No I/O.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/internal/runtime.h"
#include "cumulus/status.h"

namespace cumulus {

// How a stored task result was made. Its object arguments are held (pinned) while it lives.
struct Lineage {
  std::string function;
  std::vector<internal::ArgData> args;
  internal::CallOptions options;
  int max_retries = 0;
  std::vector<ObjectId> pinned;  // object arguments (held as for a task)
};

struct ObjectEntry {
  enum State { kPending, kReady, kFailed } state = kPending;
  int refs = 1;       // handles
  int task_refs = 0;  // tasks (and lineages, restartable actors) that take it as an argument
  std::shared_ptr<std::string> inline_value;
  bool stored = false;  // in a store: node, transfer, size say where
  NodeId node;
  std::string transfer;
  uint64_t size = 0;
  bool local_copy = false;  // pulled into this node's store by a read here
  Status error;
  std::vector<TaskId> waiting;       // tasks whose argument this is, waiting for it
  std::unique_ptr<Lineage> lineage;  // stored results of normal tasks
  std::string no_lineage;            // why a stored object cannot be rebuilt
  int depth = 0;                     // tasks in its lineage (1: made from values only)
  int rebuilds = 0;
};

class ReferenceTable {
 public:
  static constexpr int kMaxRebuilds = 3;  // times one lost object is rebuilt

  // Results made through longer chains of tasks keep no lineage.
  explicit ReferenceTable(int max_lineage_depth) : max_lineage_depth_(max_lineage_depth) {}

  // A new pending object with one handle (any earlier entry of that id is replaced).
  ObjectEntry& Add(const ObjectId& id);
  ObjectEntry* Find(const ObjectId& id);
  size_t size() const { return objects_.size(); }

  // A handle more / less. Unknown ids are ignored.
  void AddRef(const ObjectId& id);
  void RemoveRef(const ObjectId& id);
  // A task (or lineage, or actor constructor) takes `id` as an argument: false if it is unknown.
  bool Hold(const ObjectId& id);
  void Release(const ObjectId& id);
  void Release(const std::vector<ObjectId>& ids);
  // Frees `id` if nothing holds it any more and it is not pending.
  void FreeIfUnused(const ObjectId& id);

  // `e` is sealed in the store of `node` (object channel at `transfer`).
  static void SetStored(ObjectEntry& e, const NodeId& node, const std::string& transfer,
                        uint64_t size);
  // A draining node `from` handed its copy of `id` to `to` (object channel `transfer`): if this
  // process owns `id` and knew it there, it now reads and frees it on `to`. Returns whether it did.
  bool Moved(const ObjectId& id, const NodeId& from, const NodeId& to, const std::string& transfer);
  // `e` (stored, made by a normal task from `held` arguments) keeps how it was made, unless its
  // chain of tasks is too long; the hold on the arguments passes to the lineage.
  void RecordLineage(ObjectEntry& e, const std::string& function,
                     std::vector<internal::ArgData> args, const internal::CallOptions& options,
                     int max_retries, std::vector<ObjectId> held);

  // What to do about a stored copy of `id` on `failed_node` that cannot be read (`why`).
  struct RebuildPlan {
    enum Kind {
      kNotStored,  // not owned here, or not a stored object
      kUnderway,   // being rebuilt already, or its copy is elsewhere now
      kRebuild,    // run `lineage` again: the object is pending again
      kLost,       // it failed with ObjectLost, saying why it cannot be rebuilt
    } kind = kNotStored;
    std::unique_ptr<Lineage> lineage;  // kRebuild: release its pins once the task holds them
    int attempt = 0;                   // kRebuild: 1 for the first rebuild
  };
  // `cannot`: set when this process cannot rebuild anything now (say why).
  RebuildPlan PlanRebuild(const ObjectId& id, const NodeId& failed_node, const std::string& why,
                          const std::string& cannot);

  // Objects freed since the last call: `remote` (object id + node id, for the node to free) and
  // the copies pulled here that this process should delete from its node's store.
  struct Frees {
    std::vector<std::string> remote;
    std::vector<ObjectId> local_copies;
    bool empty() const { return remote.empty() && local_copies.empty(); }
  };
  Frees TakeFrees();
  // Frees everything (the process ends).
  void FreeAll();

 private:
  using Map = std::unordered_map<ObjectId, ObjectEntry>;
  void MaybeFree(Map::iterator it);

  int max_lineage_depth_;
  Map objects_;
  Frees frees_;
};

}  // namespace cumulus
