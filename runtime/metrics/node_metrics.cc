#include "runtime/metrics/node_metrics.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "runtime/metrics/exposition.h"
#include "runtime/node/detect_resources.h"

namespace cumulus::metrics {

namespace {
constexpr MetricType kGauge = MetricType::kGauge;
constexpr MetricType kCounter = MetricType::kCounter;
}  // namespace

NodeMetrics::NodeMetrics(NodeMetricsSource source) : source_(std::move(source)) {
  if (source_.machine) last_cpu_ = ReadCpuTimes();
}

// The first line of /proc/stat: time spent by all CPUs, in ticks; busy is all but idle and
// iowait.
NodeMetrics::CpuTimes NodeMetrics::ReadCpuTimes() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;
  CpuTimes t;
  if (cpu != "cpu") return t;
  uint64_t v[8] = {0};
  for (auto& x : v) in >> x;  // user nice system idle iowait irq softirq steal
  for (auto x : v) t.total += x;
  t.busy = t.total - v[3] - v[4];
  return t;
}

std::string NodeMetrics::Render() {
  Exposition e;
  std::string id = source_.node_id ? source_.node_id() : "";
  e.Family("cumulus_node_info", "This node: its id, host name and autoscaler node type (value 1).",
           kGauge);
  e.Add({{"NodeId", id},
         {"hostname", source_.hostname},
         {"node_type", source_.node_type.empty() ? "static" : source_.node_type}},
        1);

  if (source_.router) {
    RouterMetrics r = source_.router();
    e.Family("cumulus_tasks",
             "Tasks on this node by state: held now (QUEUED, RUNNING, FORWARDED to another node, "
             "RETRY_WAIT) and ended here since the node started (FINISHED, FAILED). Actor method "
             "calls go to the actor directly and are not counted.",
             kGauge);
    for (const char* state : {"QUEUED", "RUNNING", "FORWARDED", "RETRY_WAIT"}) {
      auto it = r.tasks.find(state);
      e.Add({{"State", state}}, it == r.tasks.end() ? 0 : static_cast<double>(it->second));
    }
    e.Add({{"State", "FINISHED"}}, static_cast<double>(r.tasks_finished));
    e.Add({{"State", "FAILED"}}, static_cast<double>(r.tasks_failed));
    e.Family("cumulus_actors",
             "Actors on this node by state: PENDING_CREATION (held here, or the constructor runs), "
             "ALIVE (its worker runs here), DEAD (its worker here ended, since the node started).",
             kGauge);
    e.Add({{"State", "PENDING_CREATION"}}, static_cast<double>(r.actors_pending));
    e.Add({{"State", "ALIVE"}}, static_cast<double>(r.actors_alive));
    e.Add({{"State", "DEAD"}}, static_cast<double>(r.actors_dead));
    e.Family("cumulus_workers", "Worker processes of this node now.", kGauge);
    e.Add(static_cast<double>(r.workers));
    e.Family("cumulus_worker_failures_total",
             "Workers that died under work (a task running or an actor hosted) since the node "
             "started, as 'cumulus status' lists them.",
             kCounter);
    e.Add(static_cast<double>(r.worker_failures));
    e.Family("cumulus_tasks_returned_total",
             "Tasks another node forwarded here that went back to it unstarted since the node "
             "started: no room was free here for them (the sender placed them on a view of this "
             "node older than the work that took it), no node that has joined could run them "
             "(with an autoscaler), or this node drains.",
             kCounter);
    e.Add(static_cast<double>(r.tasks_returned));
    e.Family("cumulus_memory_manager_worker_eviction_total",
             "Workers the node's memory monitor killed to keep the machine from running out of "
             "memory, since the node started (their tasks are retried).",
             kCounter);
    e.Add({{"Type", "Task"}}, static_cast<double>(r.oom_kills));
  }

  if (source_.available) {
    ResourceSet available = source_.available();
    e.Family("cumulus_resources",
             "Logical resources of this node by name (CPU, GPU, memory in bytes, custom) and "
             "state: USED by tasks and actors, or AVAILABLE.",
             kGauge);
    for (auto& [name, units] : source_.total.units()) {
      double total = source_.total.Get(name), free = available.Get(name);
      e.Add({{"Name", name}, {"State", "USED"}}, std::max(0.0, total - free));
      e.Add({{"Name", name}, {"State", "AVAILABLE"}}, free);
    }
  }

  if (source_.store) {
    ObjectStoreStats s = source_.store();
    e.Family("cumulus_object_store_memory",
             "Bytes of objects in this node's object store by location: MMAP_SHM (its shared "
             "memory) or SPILLED (to its disk only).",
             kGauge);
    e.Add({{"Location", "MMAP_SHM"}}, static_cast<double>(s.used_bytes));
    e.Add({{"Location", "SPILLED"}}, static_cast<double>(s.bytes_on_disk_only));
    e.Family("cumulus_object_store_available_memory",
             "Bytes of this node's object store memory not in use.", kGauge);
    e.Add(
        static_cast<double>(s.capacity_bytes > s.used_bytes ? s.capacity_bytes - s.used_bytes : 0));
    e.Family("cumulus_object_store_num_local_objects",
             "Objects in this node's object store by location (MMAP_SHM, SPILLED).", kGauge);
    e.Add({{"Location", "MMAP_SHM"}}, static_cast<double>(s.objects_in_memory));
    e.Add({{"Location", "SPILLED"}}, static_cast<double>(s.objects_on_disk_only));
    e.Family("cumulus_object_store_spilled_objects_total",
             "Objects moved from memory to disk since the node started.", kCounter);
    e.Add(static_cast<double>(s.spill_count));
    e.Family("cumulus_object_store_restored_objects_total",
             "Objects read back from disk since the node started.", kCounter);
    e.Add(static_cast<double>(s.restore_count));
  }

  if (source_.machine) {
    CpuTimes now = ReadCpuTimes();
    double utilization = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (now.total > last_cpu_.total) {
        utilization = 100.0 * static_cast<double>(now.busy - last_cpu_.busy) /
                      static_cast<double>(now.total - last_cpu_.total);
      }
      last_cpu_ = now;
    }
    e.Family("cumulus_node_cpu_utilization",
             "CPU use of this machine in percent (0..100) since the previous scrape.", kGauge);
    e.Add(std::clamp(utilization, 0.0, 100.0));
    e.Family("cumulus_node_cpu_count", "CPU cores of this machine.", kGauge);
    e.Add(static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN)));
    MemoryUse mem = MemoryUsage();
    e.Family("cumulus_node_mem_used",
             "Memory in use in bytes: in this process's cgroup if it has a limit, else on the "
             "machine (MemTotal - MemAvailable).",
             kGauge);
    e.Add(static_cast<double>(mem.used));
    e.Family("cumulus_node_mem_total",
             "Memory in bytes: the cgroup's limit if it has one, else the machine's.", kGauge);
    e.Add(static_cast<double>(mem.limit));
    std::vector<GpuSample> gpus = gpus_.Read();
    if (!gpus.empty()) {
      e.Family("cumulus_node_gpus_utilization",
               "Each GPU's utilization in percent (0..100) over NVML's last sample period.",
               kGauge);
      for (auto& g : gpus) {
        e.Add({{"GpuIndex", std::to_string(g.index)}, {"GpuDeviceName", g.name}}, g.utilization);
      }
      e.Family("cumulus_node_gram_used", "Each GPU's memory in use, in bytes.", kGauge);
      for (auto& g : gpus) {
        e.Add({{"GpuIndex", std::to_string(g.index)}, {"GpuDeviceName", g.name}},
              static_cast<double>(g.memory_used));
      }
      e.Family("cumulus_node_gram_available", "Each GPU's memory not in use, in bytes.", kGauge);
      for (auto& g : gpus) {
        e.Add({{"GpuIndex", std::to_string(g.index)}, {"GpuDeviceName", g.name}},
              static_cast<double>(g.memory_total - std::min(g.memory_total, g.memory_used)));
      }
    }
  }
  return e.Render();
}

}  // namespace cumulus::metrics
