// Reading a cluster trace in the format of the Alibaba GPU cluster traces ("openb"): a pod list
// (name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
// deletion_time,scheduled_time) and a node list (sn,cpu_milli,memory_mib,gpu,model). Columns are
// found by name in the header, in any order; other columns are ignored.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cumulus/status.h"

namespace cumulus::burst {

// Amounts as the trace gives them: CPU in thousandths, memory in MiB, GPU in thousandths of a GPU.
struct Res {
  int64_t cpu = 0, mem = 0, gpu = 0;
  bool Fits(const Res& need) const { return cpu >= need.cpu && mem >= need.mem && gpu >= need.gpu; }
  Res& operator-=(const Res& o) {
    cpu -= o.cpu, mem -= o.mem, gpu -= o.gpu;
    return *this;
  }
  Res& operator+=(const Res& o) {
    cpu += o.cpu, mem += o.mem, gpu += o.gpu;
    return *this;
  }
  bool operator==(const Res& o) const { return cpu == o.cpu && mem == o.mem && gpu == o.gpu; }
  bool operator<(const Res& o) const {
    return gpu != o.gpu ? gpu < o.gpu : cpu != o.cpu ? cpu < o.cpu : mem < o.mem;
  }
};

struct Pod {
  std::string name;
  Res need;  // num_gpu > 1: whole GPUs (num_gpu x 1000); else gpu_milli of one GPU
  std::vector<std::string> models;  // gpu_spec: the GPU models it may run on; empty: any
  int64_t arrival = 0;              // creation_time, seconds
  int64_t duration = 0;  // deletion_time - scheduled_time (or - creation_time if never scheduled)
};

struct TraceNode {
  std::string name;
  Res total;
  std::string model;  // "" for a CPU-only node
};

// InvalidArgument "FILE:LINE:COLUMN: what" for a missing file, a missing column, a cell that is
// not a number (or out of range), or a file with no rows.
Result<std::vector<Pod>> ReadPods(const std::string& path);
Result<std::vector<TraceNode>> ReadNodes(const std::string& path);

// A label value for a model name from a trace ("V100M16"): characters labels do not allow -> '_'.
std::string ModelLabel(const std::string& model);

}  // namespace cumulus::burst
