#include "runtime/metrics/head_metrics.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "runtime/autoscaler/cluster_config.h"
#include "runtime/autoscaler/monitor_books.h"
#include "runtime/base/logging.h"
#include "runtime/core/messages.h"
#include "runtime/metrics/exposition.h"
#include "runtime/tune/journal.h"

namespace cumulus::metrics {

namespace {

constexpr MetricType kGauge = MetricType::kGauge;
constexpr MetricType kCounter = MetricType::kCounter;

// The journal's key of entry `sequence` (runtime/tune/journal.cc writes them so).
std::string EntryKey(const std::string& name, uint64_t sequence) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "/%012llu", static_cast<unsigned long long>(sequence));
  return name + buf;
}

std::string NodeType(const NodeRecord& n) {
  auto it = n.labels.find(kNodeTypeLabel);
  return it == n.labels.end() || it->second.empty() ? "static" : it->second;
}

}  // namespace

HeadMetrics::HeadMetrics(HeadMetricsSource source) : source_(std::move(source)) {}
HeadMetrics::~HeadMetrics() = default;

// Follows the journals of the newest `max_experiments` experiments: entries appended since the
// last scrape are applied to the state kept for each; experiments no longer among them are
// forgotten.
void HeadMetrics::ReadExperiments() {
  std::vector<std::pair<int64_t, std::string>> newest;  // created, name
  std::map<std::string, std::string> specs;
  Status st = source_.scan_kv(tune::kExperimentsNamespace, "",
                              [&](const std::string& name, const std::string& value) {
                                auto spec = tune::DecodeSpec(value);
                                if (spec.ok()) {
                                  newest.emplace_back(spec->created_micros, name);
                                  specs[name] = value;
                                }
                                return true;
                              });
  if (!st.ok()) return;
  std::sort(newest.rbegin(), newest.rend());
  if (newest.size() > source_.max_experiments) newest.resize(source_.max_experiments);
  std::set<std::string> shown;
  for (auto& [created, name] : newest) shown.insert(name);
  for (auto it = experiments_.begin(); it != experiments_.end();) {
    it = shown.count(it->first) ? std::next(it) : experiments_.erase(it);
  }
  for (const std::string& name : shown) {
    Experiment& x = experiments_[name];
    if (!x.state) x.state = std::make_unique<tune::ExperimentState>(*tune::DecodeSpec(specs[name]));
    if (!x.error.empty()) continue;
    Status read = source_.scan_kv(tune::kJournalNamespace, EntryKey(name, x.next),
                                  [&](const std::string& key, const std::string& value) {
                                    if (key != EntryKey(name, x.next)) return false;
                                    auto e = tune::DecodeEntry(value);
                                    Status applied = e.ok() ? x.state->Apply(*e) : e.status();
                                    if (!applied.ok()) {
                                      x.error = applied.message();
                                      CUMULUS_LOG(WARN) << "metrics: experiment " << name << ": "
                                                        << x.error << "; its trials are not shown";
                                      return false;
                                    }
                                    x.next++;
                                    return true;
                                  });
    if (!read.ok()) x.error = read.message();
  }
}

std::string HeadMetrics::Render() {
  std::lock_guard<std::mutex> lock(mu_);
  Exposition e;
  std::vector<NodeRecord> nodes = source_.nodes ? source_.nodes() : std::vector<NodeRecord>{};

  e.Family("cumulus_cluster_nodes",
           "Nodes the head knows by state: ALIVE, RECOVERING (read back after a head restart, "
           "not heard from yet), DEAD (failed) and STOPPED (left on purpose).",
           kGauge);
  std::map<std::string, uint64_t> by_state = {
      {"ALIVE", 0}, {"RECOVERING", 0}, {"DEAD", 0}, {"STOPPED", 0}};
  std::map<std::string, uint64_t> alive_by_type;
  std::set<std::string> alive_instances;
  for (auto& n : nodes) {
    by_state[NodeStateName(n)]++;
    if (n.state != NodeState::kAlive) continue;
    alive_by_type[NodeType(n)]++;
    auto instance = n.labels.find(kInstanceIdLabel);
    if (instance != n.labels.end()) alive_instances.insert(instance->second);
  }
  for (auto& [state, count] : by_state) e.Add({{"State", state}}, static_cast<double>(count));
  e.Family("cumulus_cluster_active_nodes",
           "Alive nodes by node type: the autoscaler's type, or 'static' for nodes it did not "
           "launch.",
           kGauge);
  for (auto& [type, count] : alive_by_type)
    e.Add({{"node_type", type}}, static_cast<double>(count));

  size_t groups = 0;
  Status st = source_.scan_kv(kGroupsNamespace, "", [&](const std::string&, const std::string&) {
    ++groups;
    return true;
  });
  if (st.ok()) {
    e.Family("cumulus_placement_groups",
             "Placement groups by state: CREATED (their bundles are reserved on nodes).", kGauge);
    e.Add({{"State", "CREATED"}}, static_cast<double>(groups));
  }

  // The autoscaler's books: only once `cumulus up` ran a monitor on this cluster.
  std::string books_text;
  bool have_books = false;
  (void)source_.scan_kv(kAutoscalerNamespace, kBooksKey,
                        [&](const std::string& key, const std::string& value) {
                          if (key == kBooksKey) {
                            books_text = value;
                            have_books = true;
                          }
                          return false;
                        });
  if (have_books) {
    auto books = DecodeBooks(books_text);
    if (books.ok()) {
      std::map<std::string, std::map<std::string, uint64_t>> launched;  // type -> state -> n
      for (auto& [type, t] : books->types) {
        launched[type] = {{"PENDING", 0}, {"ACTIVE", 0}, {"DRAINING", 0}};
      }
      for (auto& [id, inst] : books->instances) {
        auto& states = launched[inst.type];
        states.emplace("PENDING", 0);
        states.emplace("ACTIVE", 0);
        states.emplace("DRAINING", 0);
        const char* state = inst.draining                   ? "DRAINING"
                            : alive_instances.count(id) > 0 ? "ACTIVE"
                                                            : "PENDING";
        states[state]++;
      }
      e.Family("cumulus_autoscaler_nodes",
               "Nodes the autoscaler launched and has not seen end, by node type and state: "
               "PENDING (launched, not joined yet), ACTIVE (joined), DRAINING (terminated once "
               "idle).",
               kGauge);
      for (auto& [type, states] : launched) {
        for (auto& [state, n] : states) {
          e.Add({{"node_type", type}, {"State", state}}, static_cast<double>(n));
        }
      }
      e.Family("cumulus_cluster_pending_nodes",
               "Nodes the autoscaler launched that have not joined yet, by node type.", kGauge);
      for (auto& [type, states] : launched) {
        e.Add({{"node_type", type}}, static_cast<double>(states["PENDING"]));
      }
      e.Family("cumulus_cluster_failed_nodes",
               "Launches that failed, by node type, since the autoscaler was first started.",
               kGauge);
      for (auto& [type, t] : books->types) {
        e.Add({{"node_type", type}}, static_cast<double>(t.failed_launches));
      }
      e.Family("cumulus_autoscaler_spend",
               "Money spent on launched nodes so far by node type, in the currency of the "
               "cluster file's prices (price per hour x hours), as of the monitor's last round.",
               kGauge);
      for (auto& [type, t] : books->types) e.Add({{"node_type", type}}, t.spend);
    } else {
      CUMULUS_LOG(WARN) << "metrics: the autoscaler's books do not decode: " << books.status();
    }
  }

  ReadExperiments();
  if (!experiments_.empty()) {
    e.Family("cumulus_tune_trials",
             "Trials of each tuning experiment by state (PENDING, RUNNING, PAUSED, STOPPED, "
             "FINISHED, FAILED), as its journal says; the newest experiments only.",
             kGauge);
    for (auto& [name, x] : experiments_) {
      if (!x.error.empty()) continue;
      std::map<tune::TrialState, uint64_t> counts;
      for (auto& [id, t] : x.state->trials()) counts[t.state]++;
      for (auto s : {tune::TrialState::kPending, tune::TrialState::kRunning,
                     tune::TrialState::kPaused, tune::TrialState::kStoppedEarly,
                     tune::TrialState::kFinished, tune::TrialState::kFailed}) {
        e.Add({{"experiment", name}, {"State", tune::TrialStateName(s)}},
              static_cast<double>(counts[s]));
      }
    }
  }

  auto counter = [&](const char* name, const char* help, const std::function<uint64_t()>& fn) {
    if (!fn) return;
    e.Family(name, help, kCounter);
    e.Add(static_cast<double>(fn()));
  };
  counter("cumulus_head_heartbeats_total", "Heartbeats the head received since it started.",
          source_.heartbeats);
  counter("cumulus_head_connections_total", "Connections the head accepted since it started.",
          source_.connections);
  counter("cumulus_head_auth_failures_total",
          "Connections closed for not authenticating in time, since the head started.",
          source_.auth_failures);
  counter("cumulus_head_protocol_errors_total",
          "Connections closed for sending malformed frames, since the head started.",
          source_.protocol_errors);
  return e.Render();
}

}  // namespace cumulus::metrics
