#include "bench/tree_counters.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

namespace cumulus::bench {
namespace {

// This process and every live process below it.
std::vector<int> TreePids() {
  std::map<int, std::vector<int>> children;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2) {
      children[ppid].push_back(std::atoi(name.c_str()));
    }
  }
  std::vector<int> tree, todo = {getpid()};
  while (!todo.empty()) {
    int pid = todo.back();
    todo.pop_back();
    tree.push_back(pid);
    for (int c : children[pid]) todo.push_back(c);
  }
  return tree;
}

int OpenCounter(uint32_t type, uint64_t config, int* error) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = type;
  attr.config = config;
  attr.inherit = 1;  // threads and processes started later count with this one
  attr.exclude_hv = 1;
  int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0 && (errno == EACCES || errno == EPERM)) {
    attr.exclude_kernel = 1;  // perf_event_paranoid >= 2 without CAP_PERFMON: user space only
    fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  }
  *error = fd < 0 ? errno : 0;
  return fd;
}

}  // namespace

uint64_t TreeCpuNanos() {
  uint64_t total = 0;
  for (int pid : TreePids()) {
    std::error_code ec;
    for (const auto& t :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
      std::ifstream in(t.path() / "schedstat");
      uint64_t ns = 0;
      if (in >> ns) total += ns;
    }
  }
  return total;
}

TreeCounters TreeCounters::Open() {
  TreeCounters c;
  struct Wanted {
    const char* name;
    uint32_t type;
    uint64_t config;
  };
  const Wanted wanted[] = {
      {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
      {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
      {"context switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
      {"page faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
  };
  for (const Wanted& w : wanted) {
    int error = 0;
    int fd = OpenCounter(w.type, w.config, &error);
    if (fd >= 0) {
      c.events_.push_back({w.name, fd});
    } else {
      c.missing_.push_back(std::string(w.name) + ": perf_event_open failed (" +
                           std::strerror(error) +
                           (error == ENOENT || error == EOPNOTSUPP
                                ? "; this machine exposes no such counter, as VMs without a "
                                  "virtual PMU do)"
                                : "; see /proc/sys/kernel/perf_event_paranoid)"));
    }
  }
  return c;
}

TreeCounters::TreeCounters(TreeCounters&& other) noexcept
    : events_(std::move(other.events_)), missing_(std::move(other.missing_)) {
  other.events_.clear();
}

TreeCounters::~TreeCounters() {
  for (const Event& e : events_) close(e.fd);
}

TreeReading TreeCounters::Read() const {
  TreeReading r;
  for (const Event& e : events_) {
    uint64_t v = 0;
    if (read(e.fd, &v, sizeof(v)) == static_cast<ssize_t>(sizeof(v))) {
      r.values.emplace_back(e.name, static_cast<double>(v));
    }
  }
  return r;
}

}  // namespace cumulus::bench
