// Monitor: the autoscaler's live loop. Every round it reads the head's view (nodes with their
// labels, total and available resources, pending demand from the heartbeats), the providers'
// instances and its own books (monitor_books.h, kept in the head's KV), builds one
// autoscale::Snapshot (snapshot_builder.h), calls autoscale::Decide and carries out the launches,
// drains and terminations through the providers. It publishes what `cumulus status` shows.
//
// Concurrency: provider calls are slow (a launch may take minutes) and may hang. Each one runs on
// a thread of its own with a deadline the provider honours (node_provider.h), and its result is
// applied by the loop in a later round; the loop itself only waits on the head (each call under
// the client's request timeout). Launches in flight count as launching capacity, so nothing is
// launched twice while a call is outstanding. (Threads rather than CAF actors: the providers are
// synchronous with deadlines by contract, so one thread per outstanding call and a queue of
// results is all the loop needs.)
//
// Not thread-safe: one thread calls RunRound/Run; the provider threads only touch the result queue.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cumulus/status.h"
#include "runtime/autoscaler/cluster_config.h"
#include "runtime/autoscaler/monitor_books.h"
#include "runtime/autoscaler/node_provider.h"
#include "runtime/head/control_client.h"
#include "scheduler/autoscale/policy.h"

namespace cumulus {

struct MonitorOptions {
  ClusterConfig config;
  LaunchSpec launch;                                       // how launched nodes reach the head
  Duration round = std::chrono::seconds(2);                // between rounds
  Duration list_timeout = std::chrono::seconds(20);        // per provider List()
  Duration terminate_timeout = std::chrono::seconds(60);   // per Terminate()
  Duration min_launch_timeout = std::chrono::seconds(60);  // Launch(): max(this, 2 x boot time)
  autoscale::Options policy;  // the policy's knobs (backoff, timeouts, caps)
  // After a node joins (or the monitor starts), pending demand is not acted on for this long: a
  // node's heartbeat may still report work it is about to send to the new node, which would
  // launch a second one (Ray #36926). At least two heartbeat intervals.
  Duration demand_settle = std::chrono::seconds(3);
  // A new connection to the head, for when the one given is lost (the head restarted). Unset:
  // Run returns Unavailable instead.
  std::function<Result<std::unique_ptr<ControlClient>>()> reconnect;
};

class Monitor {
 public:
  // InvalidArgument if a type names a provider not in `providers`.
  static Result<std::unique_ptr<Monitor>> Create(
      MonitorOptions options, std::unique_ptr<ControlClient> head,
      std::map<std::string, std::unique_ptr<NodeProvider>> providers);
  ~Monitor();  // waits for provider calls in flight (each ends by its deadline)

  // Reads the books back from the head (a restarted monitor continues where the last one was).
  Status Recover();
  // One round: results of finished provider calls, snapshot, decision, actions, status published.
  Status RunRound();
  // Rounds until `stop` is set or the head's KV says "down"; returns why it stopped.
  Status Run(const std::atomic<bool>& stop);
  // Terminates every instance the books and the providers know of, waiting up to `timeout` for
  // them to end; clears the books. For `cumulus down`.
  Status TerminateAll(Duration timeout);

  const MonitorBooks& books() const { return books_; }
  const autoscale::Decision& last_decision() const { return decision_; }

 private:
  Monitor(MonitorOptions options, std::unique_ptr<ControlClient> head,
          std::map<std::string, std::unique_ptr<NodeProvider>> providers);
  // Runs `call` on a thread; its returned completion is applied by the loop (ApplyResults).
  void Spawn(std::function<std::function<void()>()> call);
  void ApplyResults();
  void Launch(const std::string& type, int count, const std::string& why);
  void Terminate(const std::string& instance, bool launch_timed_out);
  void RecordFailure(const std::string& type, int count, const std::string& error);
  Status SaveBooks();
  void Publish(const autoscale::Snapshot& snap);
  NodeProvider* ProviderOf(const std::string& type);

  MonitorOptions options_;
  std::unique_ptr<ControlClient> head_;
  std::map<std::string, std::unique_ptr<NodeProvider>> providers_;
  MonitorBooks books_;
  std::string saved_books_;  // what the head holds, to skip writes that change nothing
  autoscale::Decision decision_;
  std::map<std::string, std::vector<Instance>> listed_;  // provider -> its last List()
  std::map<std::string, int64_t> idle_since_;            // node hex -> since when idle (micros)
  std::map<std::string, int> in_flight_launches_;        // type -> nodes being asked for
  std::map<std::string, int64_t> in_flight_since_;       // type -> when the oldest was asked
  std::set<std::string> terminating_;                    // instance ids with a call in flight
  std::set<std::string> seen_registered_;                // instance ids seen as alive nodes
  std::set<std::string> alive_;                          // node hexes alive last round
  int64_t capacity_changed_ = 0;   // when a node last joined (micros; 0: not yet)
  std::set<std::string> listing_;  // providers with a List() in flight

  std::mutex mu_;  // guards results_ and threads_
  std::vector<std::pair<std::thread::id, std::function<void()>>> results_;
  std::vector<std::thread> threads_;
};

}  // namespace cumulus
