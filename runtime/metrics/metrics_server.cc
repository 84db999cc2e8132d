#include "runtime/metrics/metrics_server.h"

#include "runtime/autoscaler/cluster_config.h"
#include "runtime/metrics/head_metrics.h"
#include "runtime/metrics/node_metrics.h"
#include "runtime/net/tcp.h"

namespace cumulus::metrics {

namespace {

std::shared_ptr<HeadMetrics> HeadPage(const HeadServer* head) {
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
  return std::make_shared<HeadMetrics>(std::move(s));
}

std::shared_ptr<NodeMetrics> NodePage(const NodeDaemon* node) {
  NodeMetricsSource s;
  s.node_id = [node] { return node->node_id().Hex(); };
  s.hostname = node->hostname();
  auto type = node->labels().find(kNodeTypeLabel);
  if (type != node->labels().end()) s.node_type = type->second;
  s.total = node->resources();
  s.available = [node] { return node->router().Available(); };
  s.router = [node] { return node->router().Metrics(); };
  s.store = [node] { return node->store_stats(); };
  return std::make_shared<NodeMetrics>(std::move(s));
}

}  // namespace

void NodePageSlot::Attach(const NodeDaemon* node) {
  auto page = NodePage(node);
  std::lock_guard<std::mutex> lock(mu_);
  page_ = std::move(page);
}

std::string NodePageSlot::Render() const {
  std::shared_ptr<NodeMetrics> page;
  {
    std::lock_guard<std::mutex> lock(mu_);
    page = page_;
  }
  return page ? page->Render() : std::string();
}

Result<std::unique_ptr<MetricsEndpoint>> StartMetricsEndpoint(const MetricsEndpointOptions& options,
                                                              const HeadServer* head,
                                                              const NodeDaemon* node) {
  if (!head && !node) return Status::InvalidArgument("metrics endpoint: nothing to show");
  std::shared_ptr<NodePageSlot> slot;
  if (node) {
    slot = std::make_shared<NodePageSlot>();
    slot->Attach(node);
  }
  return StartMetricsEndpoint(options, head, std::move(slot));
}

Result<std::unique_ptr<MetricsEndpoint>> StartMetricsEndpoint(const MetricsEndpointOptions& options,
                                                              const HeadServer* head,
                                                              std::shared_ptr<NodePageSlot> node) {
  if (!head && !node) return Status::InvalidArgument("metrics endpoint: nothing to show");
  std::shared_ptr<HeadMetrics> head_page = head ? HeadPage(head) : nullptr;
  return MetricsEndpoint::Start(options, [head_page, node] {
    std::string page;
    if (head_page) page += head_page->Render();
    if (node) page += node->Render();
    return page;
  });
}

Status ServedNode::StartEndpoint(const MetricsEndpointOptions& options, const HeadServer* head) {
  auto started = StartMetricsEndpoint(options, head, slot_);
  if (!started.ok()) {
    return Status(started.status().code(),
                  started.status().message() + "; choose another --metrics-port or --metrics-host");
  }
  endpoint_ = std::move(*started);
  published_ = ReachableHost(options.host) + ":" + std::to_string(endpoint_->port());
  return Status();
}

Status ServedNode::StartNode(NodeDaemonOptions options) {
  options.metrics_address = published_;
  CUMULUS_ASSIGN_OR_RETURN(node_, NodeDaemon::Start(std::move(options)));
  slot_->Attach(node_.get());
  return Status();
}

void ServedNode::Stop() {
  endpoint_.reset();
  node_.reset();
}

}  // namespace cumulus::metrics
