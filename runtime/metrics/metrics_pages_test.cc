// The node's and the head's pages over sources a test controls.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "runtime/autoscaler/cluster_config.h"
#include "runtime/autoscaler/monitor_books.h"
#include "runtime/core/messages.h"
#include "runtime/metrics/head_metrics.h"
#include "runtime/metrics/node_metrics.h"
#include "runtime/tune/journal.h"

namespace cumulus::metrics {
namespace {

bool Has(const std::string& page, const std::string& line) {
  return page.find("\n" + line + "\n") != std::string::npos || page.rfind(line + "\n", 0) == 0;
}

TEST(NodeMetricsTest, ShowsTheRouterTheResourcesAndTheStore) {
  NodeMetricsSource s;
  s.node_id = [] { return std::string("abcd"); };
  s.hostname = "host\"1";
  s.total = *ResourceSet::Parse("CPU=4,GPU=1,special=2");
  s.available = [] { return *ResourceSet::Parse("CPU=1.5,GPU=1"); };
  s.router = [] {
    RouterMetrics r;
    r.tasks["RUNNING"] = 2;
    r.tasks["QUEUED"] = 5;
    r.tasks_finished = 40;
    r.tasks_failed = 3;
    r.actors_alive = 1;
    r.actors_dead = 2;
    r.worker_failures = 4;
    r.oom_kills = 1;
    return r;
  };
  s.store = [] {
    ObjectStoreStats st;
    st.capacity_bytes = 1000;
    st.used_bytes = 300;
    st.bytes_on_disk_only = 7000;
    st.objects_in_memory = 3;
    st.objects_on_disk_only = 2;
    return st;
  };
  s.machine = false;
  std::string page = NodeMetrics(s).Render();
  EXPECT_TRUE(
      Has(page, "cumulus_node_info{NodeId=\"abcd\",hostname=\"host\\\"1\",node_type=\"static\"} 1"))
      << page;
  EXPECT_TRUE(Has(page, "cumulus_tasks{State=\"RUNNING\"} 2")) << page;
  EXPECT_TRUE(Has(page, "cumulus_tasks{State=\"QUEUED\"} 5")) << page;
  EXPECT_TRUE(Has(page, "cumulus_tasks{State=\"FORWARDED\"} 0")) << page;
  EXPECT_TRUE(Has(page, "cumulus_tasks{State=\"FINISHED\"} 40")) << page;
  EXPECT_TRUE(Has(page, "cumulus_tasks{State=\"FAILED\"} 3")) << page;
  EXPECT_TRUE(Has(page, "cumulus_actors{State=\"ALIVE\"} 1")) << page;
  EXPECT_TRUE(Has(page, "cumulus_actors{State=\"DEAD\"} 2")) << page;
  EXPECT_TRUE(Has(page, "cumulus_worker_failures_total 4")) << page;
  EXPECT_TRUE(Has(page, "cumulus_memory_manager_worker_eviction_total{Type=\"Task\"} 1")) << page;
  EXPECT_TRUE(Has(page, "cumulus_resources{Name=\"CPU\",State=\"USED\"} 2.5")) << page;
  EXPECT_TRUE(Has(page, "cumulus_resources{Name=\"CPU\",State=\"AVAILABLE\"} 1.5")) << page;
  EXPECT_TRUE(Has(page, "cumulus_resources{Name=\"special\",State=\"AVAILABLE\"} 0")) << page;
  EXPECT_TRUE(Has(page, "cumulus_resources{Name=\"special\",State=\"USED\"} 2")) << page;
  EXPECT_TRUE(Has(page, "cumulus_object_store_memory{Location=\"MMAP_SHM\"} 300")) << page;
  EXPECT_TRUE(Has(page, "cumulus_object_store_memory{Location=\"SPILLED\"} 7000")) << page;
  EXPECT_TRUE(Has(page, "cumulus_object_store_available_memory 700")) << page;
  EXPECT_TRUE(Has(page, "cumulus_object_store_num_local_objects{Location=\"SPILLED\"} 2")) << page;
  EXPECT_EQ(page.find("cumulus_node_cpu"), std::string::npos);  // machine: off
}

TEST(NodeMetricsTest, ShowsTheMachine) {
  NodeMetricsSource s;
  std::string page = NodeMetrics(s).Render();
  EXPECT_NE(page.find("\ncumulus_node_cpu_utilization "), std::string::npos) << page;
  EXPECT_NE(page.find("\ncumulus_node_mem_total "), std::string::npos) << page;
  EXPECT_EQ(page.find("cumulus_node_mem_total 0\n"), std::string::npos) << page;
  // GPUs only where NVML finds some (never on a machine without the driver).
  GpuUsage gpus;
  EXPECT_EQ(page.find("cumulus_node_gpus_utilization{") != std::string::npos, !gpus.Read().empty())
      << gpus.why_not();
}

// A key-value store for HeadMetrics: namespace -> key -> value.
using Kv = std::map<std::string, std::map<std::string, std::string>>;

HeadMetricsSource SourceOver(const Kv* kv, const std::vector<NodeRecord>* nodes) {
  HeadMetricsSource s;
  s.nodes = [nodes] { return *nodes; };
  s.scan_kv = [kv](const std::string& ns, const std::string& from,
                   const std::function<bool(const std::string&, const std::string&)>& fn) {
    auto it = kv->find(ns);
    if (it == kv->end()) return Status();
    for (auto e = it->second.lower_bound(from); e != it->second.end(); ++e) {
      if (!fn(e->first, e->second)) break;
    }
    return Status();
  };
  s.heartbeats = [] { return uint64_t{77}; };
  return s;
}

std::string EntryKey(const std::string& name, int seq) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "/%012d", seq);
  return name + buf;
}

TEST(HeadMetricsTest, ShowsNodesGroupsTheAutoscalerAndTrials) {
  std::vector<NodeRecord> nodes(4);
  nodes[0].state = NodeState::kAlive;
  nodes[1].state = NodeState::kAlive;
  nodes[1].labels = {{kNodeTypeLabel, "cpu-small"}, {kInstanceIdLabel, "i-1"}};
  nodes[2].state = NodeState::kDead;
  nodes[3].state = NodeState::kDead;
  nodes[3].left = true;
  Kv kv;
  kv[kGroupsNamespace]["g1"] = "x";
  kv[kGroupsNamespace]["g2"] = "x";
  MonitorBooks books;
  books.instances["i-1"] = {"i-1", "cpu-small", "local", 1, false};
  books.instances["i-2"] = {"i-2", "cpu-small", "local", 2, false};
  books.instances["i-3"] = {"i-3", "gpu", "local", 3, true};
  books.types["cpu-small"].spend = 1.25;
  books.types["gpu"].failed_launches = 2;
  kv[kAutoscalerNamespace][kBooksKey] = EncodeBooks(books);
  tune::ExperimentSpec spec;
  spec.name = "exp1";
  spec.metric = "score";
  spec.num_samples = 2;
  spec.created_micros = 10;
  kv[tune::kExperimentsNamespace]["exp1"] = tune::EncodeSpec(spec);
  auto entry = [](tune::JournalEntry::Kind kind, uint64_t trial, uint8_t state = 0) {
    tune::JournalEntry e;
    e.kind = kind;
    e.trial = trial;
    e.state = state;
    e.config = tune::Config().Encode();
    return tune::EncodeEntry(e);
  };
  using K = tune::JournalEntry::Kind;
  kv[tune::kJournalNamespace][EntryKey("exp1", 1)] = entry(K::kRun, 0);
  kv[tune::kJournalNamespace][EntryKey("exp1", 2)] = entry(K::kTrialAdded, 1);
  kv[tune::kJournalNamespace][EntryKey("exp1", 3)] = entry(K::kTrialAdded, 2);
  kv[tune::kJournalNamespace][EntryKey("exp1", 4)] = entry(K::kTrialStarted, 1);

  HeadMetrics head(SourceOver(&kv, &nodes));
  std::string page = head.Render();
  EXPECT_TRUE(Has(page, "cumulus_cluster_nodes{State=\"ALIVE\"} 2")) << page;
  EXPECT_TRUE(Has(page, "cumulus_cluster_nodes{State=\"DEAD\"} 1")) << page;
  EXPECT_TRUE(Has(page, "cumulus_cluster_nodes{State=\"STOPPED\"} 1")) << page;
  EXPECT_TRUE(Has(page, "cumulus_cluster_active_nodes{node_type=\"static\"} 1")) << page;
  EXPECT_TRUE(Has(page, "cumulus_cluster_active_nodes{node_type=\"cpu-small\"} 1")) << page;
  EXPECT_TRUE(Has(page, "cumulus_placement_groups{State=\"CREATED\"} 2")) << page;
  EXPECT_TRUE(Has(page, "cumulus_autoscaler_nodes{node_type=\"cpu-small\",State=\"ACTIVE\"} 1"))
      << page;
  EXPECT_TRUE(Has(page, "cumulus_autoscaler_nodes{node_type=\"cpu-small\",State=\"PENDING\"} 1"))
      << page;
  EXPECT_TRUE(Has(page, "cumulus_autoscaler_nodes{node_type=\"gpu\",State=\"DRAINING\"} 1"))
      << page;
  EXPECT_TRUE(Has(page, "cumulus_cluster_pending_nodes{node_type=\"cpu-small\"} 1")) << page;
  EXPECT_TRUE(Has(page, "cumulus_cluster_failed_nodes{node_type=\"gpu\"} 2")) << page;
  EXPECT_TRUE(Has(page, "cumulus_autoscaler_spend{node_type=\"cpu-small\"} 1.25")) << page;
  EXPECT_TRUE(Has(page, "cumulus_tune_trials{experiment=\"exp1\",State=\"RUNNING\"} 1")) << page;
  EXPECT_TRUE(Has(page, "cumulus_tune_trials{experiment=\"exp1\",State=\"PENDING\"} 1")) << page;
  EXPECT_TRUE(Has(page, "cumulus_head_heartbeats_total 77")) << page;

  // Entries appended later are read on the next scrape (the earlier ones are not read again:
  // an entry that would not apply twice is left in place and changes nothing).
  kv[tune::kJournalNamespace][EntryKey("exp1", 5)] =
      entry(K::kTrialEnded, 1, static_cast<uint8_t>(tune::TrialState::kFinished));
  kv[tune::kJournalNamespace][EntryKey("exp1", 6)] = entry(K::kTrialStarted, 2);
  page = head.Render();
  EXPECT_TRUE(Has(page, "cumulus_tune_trials{experiment=\"exp1\",State=\"FINISHED\"} 1")) << page;
  EXPECT_TRUE(Has(page, "cumulus_tune_trials{experiment=\"exp1\",State=\"RUNNING\"} 1")) << page;
  EXPECT_TRUE(Has(page, "cumulus_tune_trials{experiment=\"exp1\",State=\"PENDING\"} 0")) << page;
}

TEST(HeadMetricsTest, ShowsOnlyTheNewestExperiments) {
  std::vector<NodeRecord> nodes;
  Kv kv;
  for (int i = 0; i < 30; ++i) {
    tune::ExperimentSpec spec;
    spec.name = "e" + std::to_string(i);
    spec.metric = "score";
    spec.num_samples = 1;
    spec.created_micros = i;
    kv[tune::kExperimentsNamespace][spec.name] = tune::EncodeSpec(spec);
  }
  auto source = SourceOver(&kv, &nodes);
  source.max_experiments = 5;
  std::string page = HeadMetrics(source).Render();
  EXPECT_TRUE(Has(page, "cumulus_tune_trials{experiment=\"e29\",State=\"RUNNING\"} 0")) << page;
  EXPECT_TRUE(Has(page, "cumulus_tune_trials{experiment=\"e25\",State=\"RUNNING\"} 0")) << page;
  EXPECT_EQ(page.find("experiment=\"e24\""), std::string::npos) << page;
  EXPECT_EQ(page.find("cumulus_autoscaler_nodes"), std::string::npos);  // no books: none
}

}  // namespace
}  // namespace cumulus::metrics
