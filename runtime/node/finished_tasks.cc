#include "runtime/node/finished_tasks.h"

#include "runtime/base/numeric.h"

namespace cumulus {

Result<size_t> FinishedTasksFromEnv(size_t fallback) {
  auto n = IntegerFromEnv("CUMULUS_FINISHED_TASKS",
                          {0, static_cast<int64_t>(kMaxFinishedTasks), "tasks"});
  if (!n.ok()) return n.status();
  return *n ? static_cast<size_t>(**n) : fallback;
}

void FinishedTasks::Add(FinishedTask t) {
  if (capacity_ == 0) return;
  if (kept_.size() >= capacity_) {
    kept_.pop_front();
    ++dropped_;
  }
  kept_.push_back(std::move(t));
}

void FinishedTasks::ForEach(const std::function<void(const FinishedTask&)>& fn) const {
  for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) fn(*it);
}

FinishedTask FinishedFrom(const RoutedTask& t, const std::string& node, int pid,
                          const std::string& worker, const Status& error, int64_t ended_micros) {
  FinishedTask f;
  f.id = t.id;
  f.job = t.job;
  f.function = t.function;
  f.failed = !error.ok();
  if (f.failed) f.error = error.ToString();
  f.node = node;
  f.pid = pid;
  f.worker = worker;
  f.attempt = t.attempt;
  f.max_retries = t.max_retries;
  f.demand = t.req.placement.demand.ToString();
  f.labels = t.req.placement.labels.ToString();
  f.purpose = t.req.purpose;
  f.actor = t.actor;
  f.attempts = t.attempts;
  f.ended_micros = ended_micros;
  return f;
}

}  // namespace cumulus
