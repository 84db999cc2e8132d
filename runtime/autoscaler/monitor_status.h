// What `cumulus status` shows of the autoscaler, as the monitor publishes it each round into the
// head's KV (monitor_books.h: status.txt, status.json): per node type running, launching, idle,
// draining, failed launches, cost so far and per hour now, backoff; and for every pending demand
// the policy's reason (launching, or why not). Pure formatting.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/autoscaler/cluster_config.h"
#include "runtime/autoscaler/monitor_books.h"
#include "scheduler/autoscale/snapshot.h"

namespace cumulus {

struct MonitorStatusInput {
  const ClusterConfig* config;
  const MonitorBooks* books;
  const autoscale::Decision* decision;
  const autoscale::Snapshot* snapshot;
  int64_t now_micros;
};

// Lines starting "Autoscaler", a table of types (LAUNCHING counts the launches decided this
// round too), then "Pending demand" with one line per verdict.
std::string StatusText(const MonitorStatusInput& in);
// {"updated_micros", "cluster", "spend", "per_hour", "budget_per_hour", "budget_total",
//  "types": [{"type", "running", "launching", "idle", "draining", "failed_launches", "cost",
//             "per_hour", "backoff_until_micros", "last_error"}],
//  "demand": [{"id", "count", "reason", "detail"}]}  (budgets: null when unlimited)
std::string StatusJson(const MonitorStatusInput& in);

}  // namespace cumulus
