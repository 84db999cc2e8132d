// The metrics endpoint of a `cumulus start` process: the head's page (head_metrics.h), its node's
// (node_metrics.h), or both on one port when the head runs a node too.
#pragma once

#include <memory>
#include <mutex>

#include "cumulus/status.h"
#include "runtime/head/head_server.h"
#include "runtime/metrics/http_endpoint.h"
#include "runtime/node/node_daemon.h"

namespace cumulus::metrics {

class NodeMetrics;

// The node's page of an endpoint that listens before its node starts, so that the node can
// publish the endpoint's address to the head when it registers (service discovery). Until
// Attach the page is empty (a scrape answers 200 with no node metrics). Thread-safe.
class NodePageSlot {
 public:
  // REQUIRES: `node` outlives every endpoint that renders this slot; called at most once.
  void Attach(const NodeDaemon* node);
  std::string Render() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<NodeMetrics> page_;  // guarded by mu_; null until Attach
};

// Serves the pages of `head` and `node` (either may be null, not both) on options.host:port.
// REQUIRES: both outlive the endpoint returned (destroy it first).
Result<std::unique_ptr<MetricsEndpoint>> StartMetricsEndpoint(const MetricsEndpointOptions& options,
                                                              const HeadServer* head,
                                                              const NodeDaemon* node);

// As above, with the node's page from `node` (attached later); `head` may be null.
Result<std::unique_ptr<MetricsEndpoint>> StartMetricsEndpoint(const MetricsEndpointOptions& options,
                                                              const HeadServer* head,
                                                              std::shared_ptr<NodePageSlot> node);

// A `cumulus start` process's node daemon and the metrics endpoint that shows it, started and
// stopped in the order each needs: the endpoint listens first, so the node publishes the
// endpoint's address to the head when it registers (service discovery); it is destroyed first
// (members go in reverse), so no scrape reads a node that is gone, however the caller returns.
// Either part is optional. Not thread-safe.
class ServedNode {
 public:
  ServedNode() = default;
  ServedNode(const ServedNode&) = delete;
  ServedNode& operator=(const ServedNode&) = delete;
  ~ServedNode() { Stop(); }

  // Listens on `options`, showing `head` (may be null) and, once StartNode succeeds, the node.
  // The error names what failed and what to do. REQUIRES: `head` outlives this object; at most
  // once, before StartNode.
  Status StartEndpoint(const MetricsEndpointOptions& options, const HeadServer* head);
  // Starts the node; it publishes published_metrics_address() ("" without an endpoint).
  Status StartNode(NodeDaemonOptions options);
  // Stops the endpoint, then the node.
  void Stop();

  NodeDaemon* node() const { return node_.get(); }               // null before StartNode
  MetricsEndpoint* endpoint() const { return endpoint_.get(); }  // null without one
  // Where others reach the endpoint: ReachableHost(options.host):port; "" without one.
  const std::string& published_metrics_address() const { return published_; }

 private:
  std::unique_ptr<NodeDaemon> node_;
  std::shared_ptr<NodePageSlot> slot_ = std::make_shared<NodePageSlot>();
  std::unique_ptr<MetricsEndpoint> endpoint_;  // declared after node_: destroyed before it
  std::string published_;
};

}  // namespace cumulus::metrics
