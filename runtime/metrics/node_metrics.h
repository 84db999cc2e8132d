// NodeMetrics: the page a node's metrics endpoint serves (docs/metrics.md lists every metric and
// its labels). Names follow Ray's where Ray has one, with the prefix cumulus_ instead of ray_.
//
// Everything comes from what the node publishes for other threads: the router's counts (at most a
// second old, TaskRouter::Metrics), its free resources, the object store's statistics, and the
// machine (/proc, NVML). A scrape never waits for the node's event loop.
//
// Labels are bounded: states, resource names, object locations, GPU indexes; never a task,
// object, worker or job id. The node's id is on one sample only (cumulus_node_info).
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "runtime/core/task_router.h"
#include "runtime/metrics/gpu_usage.h"
#include "runtime/object_store/object_store.h"
#include "scheduler/resources.h"

namespace cumulus::metrics {

// What a node's page is made from; every function must be thread-safe and must not block.
struct NodeMetricsSource {
  std::function<std::string()> node_id;  // hex
  std::string hostname;
  std::string node_type;  // the autoscaler's node type (its label), "" for others
  ResourceSet total;
  std::function<ResourceSet()> available;
  std::function<RouterMetrics()> router;
  std::function<ObjectStoreStats()> store;
  bool machine = true;  // CPU, memory and GPUs of this machine (tests turn it off)
};

class NodeMetrics {
 public:
  explicit NodeMetrics(NodeMetricsSource source);
  // One scrape's page (Prometheus text format).
  std::string Render();

 private:
  struct CpuTimes {
    uint64_t busy = 0, total = 0;
  };
  static CpuTimes ReadCpuTimes();

  NodeMetricsSource source_;
  std::mutex mu_;      // guards last_cpu_
  CpuTimes last_cpu_;  // at the previous scrape: utilization is over the time since
  GpuUsage gpus_;
};

}  // namespace cumulus::metrics
