// The metrics endpoint of a `cumulus start` process: the head's page (head_metrics.h), its node's
// (node_metrics.h), or both on one port when the head runs a node too.
#pragma once

#include <memory>

#include "cumulus/status.h"
#include "runtime/head/head_server.h"
#include "runtime/metrics/http_endpoint.h"
#include "runtime/node/node_daemon.h"

namespace cumulus::metrics {

// Serves the pages of `head` and `node` (either may be null, not both) on options.host:port.
// REQUIRES: both outlive the endpoint returned (destroy it first).
Result<std::unique_ptr<MetricsEndpoint>> StartMetricsEndpoint(const MetricsEndpointOptions& options,
                                                              const HeadServer* head,
                                                              const NodeDaemon* node);

}  // namespace cumulus::metrics
