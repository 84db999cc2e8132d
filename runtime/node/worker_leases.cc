#include "runtime/node/worker_leases.h"

#include "scheduler/gpu_assignment.h"

namespace cumulus {

WorkerLeases::WorkerLeases(const ResourceSet& total, std::vector<uint32_t> gpu_ids,
                           WorkerPoolOptions pool, ObjectStore* store, const std::string& token,
                           Clock& clock, uint64_t program_cache_bytes)
    : resources_(total, std::move(gpu_ids)),
      workers_(pool),
      programs_(pool.work_dir, store, token, clock, program_cache_bytes) {
  // A job's program stays while a worker of it lives here (a detached actor outlives its job).
  programs_.SetJobRunning([this](const JobId& job) {
    for (auto& [id, w] : workers_.workers()) {
      if (w.job == job) return true;
    }
    return false;
  });
}

Result<Worker*> WorkerLeases::Start(const LeaseRequest& req, HeldBundle* bundle, TimePoint now,
                                    std::string* wait) {
  auto waits = [&](std::string why) -> Result<Worker*> {
    if (wait) *wait = std::move(why);
    return nullptr;
  };
  ResourcePool& pool = bundle ? bundle->pool : resources_;
  auto gpus = pool.Acquire(req.demand);
  if (!gpus.ok()) {
    return waits("waiting for " + req.demand.ToString() + " to be free on this node" +
                 (bundle ? std::string(" in its placement-group bundle") : std::string()));
  }
  std::vector<uint32_t> gpu_ids = std::move(*gpus);
  std::string devices = GpuAssignment::VisibleDevices(gpu_ids);
  std::string key = req.job.Hex() + "/" + devices;
  // A GPU actor gets a process of its own: CUDA state does not outlive an actor cleanly.
  bool fresh_needed = req.actor && !gpu_ids.empty();
  Worker* w = fresh_needed ? nullptr : workers_.FindIdle(key);
  if (!w) {
    if (!req.actor && gpu_ids.empty() && workers_.AtTaskWorkerLimit()) {
      pool.Release(req.demand, gpu_ids);
      return waits(
          "waiting for one of this node's task workers to come free (it runs as many "
          "as it may)");
    }
    auto program = programs_.Get(req.job, now);
    if (program.ok() && !*program) {
      pool.Release(req.demand, gpu_ids);
      return waits("waiting for its job's program to be fetched to this node");
    }
    Result<Worker*> spawned = program.ok() ? workers_.Spawn(req.job, **program, key, devices, now)
                                           : Result<Worker*>(program.status());
    if (!spawned.ok()) {
      pool.Release(req.demand, gpu_ids);
      return spawned.status();
    }
    w = *spawned;
  }
  w->in_bundle = bundle != nullptr;
  if (bundle) w->bundle = {bundle->group, bundle->index};
  w->leased = true;
  w->lease = req.demand;
  w->gpu_ids = gpu_ids;
  w->lease_class = req.lease_class;
  w->is_actor = req.actor;
  w->detached = req.detached;
  return w;
}

void WorkerLeases::ReleaseIfIdle(Worker& w, TimePoint now) {
  if (w.is_actor || !w.assigned.empty() || !w.leased) return;
  Release(w);
  w.idle_since = now;
}

void WorkerLeases::Release(Worker& w) {
  if (!w.leased) return;
  if (!w.in_bundle) {
    resources_.Release(w.lease, w.gpu_ids, w.lent_cpu);
  } else if (HeldBundle* b = bundles_.Find(w.bundle)) {
    b->pool.Release(w.lease, w.gpu_ids);
  }  // else the bundle went first and took its whole reservation back with it
  w.lent_cpu = 0;
  w.in_bundle = false;
  w.leased = false;
  w.lease = ResourceSet();
  w.gpu_ids.clear();
  w.lease_class.clear();
}

void WorkerLeases::SetBlocked(Worker& w, bool blocked) {
  w.blocked = blocked;
  // Like Ray: a task waiting in Get for other tasks lends its CPU to them meanwhile (nested
  // tasks would otherwise deadlock a full node). Bundle leases keep theirs.
  if (blocked && w.leased && !w.is_actor && !w.in_bundle && w.lent_cpu == 0) {
    w.lent_cpu = w.lease.GetUnits("CPU");
    resources_.LendCpu(w.lent_cpu);
  } else if (!blocked && w.lent_cpu > 0) {
    resources_.ReclaimCpu(w.lent_cpu);
    w.lent_cpu = 0;
  }
}

Status WorkerLeases::Reserve(const PlacementGroupId& id, const JobId& job, uint32_t round,
                             const std::vector<uint32_t>& indices,
                             const std::vector<ResourceSet>& bundles,
                             const std::string& node_name) {
  return bundles_.Reserve(id, job, round, indices, bundles, resources_, node_name);
}

std::vector<WorkerId> WorkerLeases::WorkersInBundles(const PlacementGroupId& id, uint32_t round) {
  std::set<BundleKey> held;
  for (auto& key : bundles_.HeldThrough(id, round)) held.insert(key);
  std::vector<WorkerId> out;
  for (auto& [wid, w] : workers_.workers()) {
    if (w.leased && w.in_bundle && held.count(w.bundle)) out.push_back(wid);
  }
  return out;
}

void WorkerLeases::ReleaseBundles(const PlacementGroupId& id, uint32_t round) {
  bundles_.Release(id, round, resources_);
}

}  // namespace cumulus
