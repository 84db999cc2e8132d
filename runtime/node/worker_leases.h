// WorkerLeases: the node's resources handed to workers. A task or actor gets a lease of its demand
// from the node's free resources (or from its placement-group bundle), GPUs by device, and a
// worker to run on: an idle one of its job and device set, or a new one (its job's program is
// fetched first). A worker blocked in Get lends its lease's CPU back until it wakes. The lease
// goes back when the worker has no task left (an actor's, when the actor ends).
//
// Owns the node's ResourcePool, BundleTable, WorkerPool and JobProgramCache. Not thread-safe: the
// node's event loop owns it.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "runtime/base/clock.h"
#include "runtime/node/job_programs.h"
#include "runtime/node/worker_pool.h"
#include "scheduler/bundle_table.h"
#include "scheduler/resource_pool.h"

namespace cumulus {

class ObjectStore;

struct LeaseRequest {
  JobId job;
  ResourceSet demand;
  std::string lease_class;  // the scheduling class: pipelined tasks share a lease of it
  bool actor = false;
  bool detached = false;
};

class WorkerLeases {
 public:
  WorkerLeases(const ResourceSet& total, std::vector<uint32_t> gpu_ids, WorkerPoolOptions pool,
               ObjectStore* store, const std::string& token, Clock& clock,
               uint64_t program_cache_bytes = kDefaultProgramCacheBytes);

  // A worker holding a new lease for `req` from the node's free resources, or from `bundle`'s.
  // nullptr (and OK) if it does not fit now, the node has as many task workers as it may, or the
  // job's program is being fetched (JobProgramCache); an error if no worker can be started
  // (Unavailable: the job's program cannot be fetched yet). With nullptr, `*wait` (if given) says
  // what it waits for, in words for the pending demand.
  Result<Worker*> Start(const LeaseRequest& req, HeldBundle* bundle, TimePoint now,
                        std::string* wait = nullptr);
  // Gives the worker's lease back if it has no task left and hosts no actor.
  void ReleaseIfIdle(Worker& w, TimePoint now);
  void Release(Worker& w);
  // The worker blocked in Get (lends its CPU) or woke up (takes it back).
  void SetBlocked(Worker& w, bool blocked);

  // Holds / releases placement-group bundles here; Release returns the workers leasing from the
  // bundles released (their processes must be ended by the caller).
  Status Reserve(const PlacementGroupId& id, const JobId& job, uint32_t round,
                 const std::vector<uint32_t>& indices, const std::vector<ResourceSet>& bundles,
                 const std::string& node_name);
  std::vector<WorkerId> WorkersInBundles(const PlacementGroupId& id, uint32_t round);
  void ReleaseBundles(const PlacementGroupId& id, uint32_t round);

  const ResourceSet& available() const { return resources_.available(); }
  BundleTable& bundles() { return bundles_; }
  WorkerPool& workers() { return workers_; }
  JobProgramCache& programs() { return programs_; }

 private:
  ResourcePool resources_;
  BundleTable bundles_;
  WorkerPool workers_;
  JobProgramCache programs_;
};

}  // namespace cumulus
