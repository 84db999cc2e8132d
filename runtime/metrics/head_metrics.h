// HeadMetrics: the page the head's metrics endpoint serves (docs/metrics.md lists every metric and
// its labels): nodes by state, placement groups, the autoscaler's nodes by type and state and its
// spend (from its books, KV autoscaler/books), and tuning trials by state per experiment (from
// the experiments' journals, read incrementally: each scrape reads only the entries appended
// since the previous one).
//
// It reads what the head publishes (HeadServer::PublishedNodes) and the control store directly
// (HeadServer::ScanKv); a scrape never waits for the head's event loop.
//
// Labels are bounded: node states, node types of the cluster file, placement-group states, and
// at most `max_experiments` experiment names (the most recently created).
//
// Thread-safe (one scrape at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cumulus/status.h"
#include "runtime/head/membership.h"
#include "runtime/tune/experiment_state.h"

namespace cumulus::metrics {

// What the head's page is made from; thread-safe functions that do not block on the loop.
struct HeadMetricsSource {
  std::function<std::vector<NodeRecord>()> nodes;
  // As HeadServer::ScanKv.
  std::function<Status(const std::string& ns, const std::string& from,
                       const std::function<bool(const std::string&, const std::string&)>& fn)>
      scan_kv;
  std::function<uint64_t()> heartbeats, connections, auth_failures, protocol_errors;  // optional
  size_t max_experiments = 20;
};

class HeadMetrics {
 public:
  explicit HeadMetrics(HeadMetricsSource source);
  ~HeadMetrics();
  // One scrape's page (Prometheus text format).
  std::string Render();

 private:
  struct Experiment {
    std::unique_ptr<tune::ExperimentState> state;
    uint64_t next = 1;  // the next journal entry to read
    std::string error;  // why the journal could not be followed (then it is not shown)
  };
  void ReadExperiments();

  HeadMetricsSource source_;
  std::mutex mu_;  // one scrape at a time: guards experiments_
  std::map<std::string, Experiment> experiments_;
};

}  // namespace cumulus::metrics
