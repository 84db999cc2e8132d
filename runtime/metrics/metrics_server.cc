#include "runtime/metrics/metrics_server.h"

#include "runtime/autoscaler/cluster_config.h"
#include "runtime/metrics/head_metrics.h"
#include "runtime/metrics/node_metrics.h"

namespace cumulus::metrics {

Result<std::unique_ptr<MetricsEndpoint>> StartMetricsEndpoint(const MetricsEndpointOptions& options,
                                                              const HeadServer* head,
                                                              const NodeDaemon* node) {
  if (!head && !node) return Status::InvalidArgument("metrics endpoint: nothing to show");
  std::shared_ptr<HeadMetrics> head_page;
  std::shared_ptr<NodeMetrics> node_page;
  if (head) {
    HeadMetricsSource s;
    s.nodes = [head] { return head->PublishedNodes(); };
    s.scan_kv = [head](const std::string& ns, const std::string& from,
                       const std::function<bool(const std::string&, const std::string&)>& fn) {
      return head->ScanKv(ns, from, fn);
    };
    s.heartbeats = [head] { return head->counters().heartbeats.load(); };
    s.connections = [head] { return head->counters().connections.load(); };
    s.auth_failures = [head] { return head->counters().auth_failures.load(); };
    s.protocol_errors = [head] { return head->counters().protocol_errors.load(); };
    head_page = std::make_shared<HeadMetrics>(std::move(s));
  }
  if (node) {
    NodeMetricsSource s;
    s.node_id = [node] { return node->node_id().Hex(); };
    s.hostname = node->hostname();
    auto type = node->labels().find(kNodeTypeLabel);
    if (type != node->labels().end()) s.node_type = type->second;
    s.total = node->resources();
    s.available = [node] { return node->router().Available(); };
    s.router = [node] { return node->router().Metrics(); };
    s.store = [node] { return node->store_stats(); };
    node_page = std::make_shared<NodeMetrics>(std::move(s));
  }
  return MetricsEndpoint::Start(options, [head_page, node_page] {
    std::string page;
    if (head_page) page += head_page->Render();
    if (node_page) page += node_page->Render();
    return page;
  });
}

}  // namespace cumulus::metrics
