// Monitor: the autoscaler's live loop. Every round it reads the head's view (nodes with their
// labels, total and available resources, pending demand from the heartbeats), the providers'
// instances and its own books (monitor_books.h, kept in the head's KV), builds one
// autoscale::Snapshot (snapshot_builder.h), calls autoscale::Decide and carries out the launches,
// drains and terminations through the providers. It publishes what `cumulus status` shows.
//
// Concurrency (monitor_loop.cc): Run makes the monitor a CAF actor. Provider calls are slow (a
// launch may take minutes) and may hang, so each runs in a CAF actor of its own, with a timer
// (the provider's own deadline plus a grace): its answer, or the timer first, comes back to the
// monitor's actor as a message and is applied there, between rounds. A launch past its timer
// counts as failed; its answer, when it comes, still puts the instances it made in the books. A
// list or terminate call is not started again while one is still running. Rounds
// are timer messages. So the monitor's state is touched by one actor only and nothing waits on
// a provider. The loop itself only waits on the head (each call under the client's request
// timeout). Launches in flight count as launching capacity, so nothing is launched twice while a
// call is outstanding.
//
// Not thread-safe: Recover, Run and TerminateAll are called from one thread, one at a time.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cumulus/status.h"
#include "runtime/autoscaler/cluster_config.h"
#include "runtime/autoscaler/monitor_books.h"
#include "runtime/autoscaler/node_provider.h"
#include "runtime/head/control_client.h"
#include "scheduler/autoscale/idle_gaps.h"
#include "scheduler/autoscale/policy.h"

namespace cumulus {

struct MonitorOptions {
  ClusterConfig config;
  LaunchSpec launch;                                       // how launched nodes reach the head
  Duration round = std::chrono::seconds(2);                // between rounds
  Duration list_timeout = std::chrono::seconds(20);        // per provider List()
  Duration terminate_timeout = std::chrono::seconds(60);   // per Terminate()
  Duration min_launch_timeout = std::chrono::seconds(60);  // Launch(): max(this, 2 x boot time)
  // A provider call whose answer has not come this long after its deadline is given up on (a
  // launch counts as failed; the provider broke its contract).
  Duration provider_grace = std::chrono::seconds(10);
  // When the monitor stops (`cumulus down`, SIGTERM), Run waits at most this long for provider
  // calls still running: `down` does not wait for a launch that takes minutes. What such a launch
  // makes is terminated when it answers (FinishLateCalls), or found by `down` in List().
  Duration stop_wait = std::chrono::seconds(3);
  // The destructor waits at most this long for provider calls still running (FinishLateCalls).
  // Past it they are given up on: a provider that never returns does not hang its owner.
  Duration destroy_wait = std::chrono::seconds(3);
  autoscale::Options policy;  // the policy's knobs (backoff, timeouts, caps)
  // After a node joins (or the monitor starts), pending demand is not acted on for this long: a
  // node's heartbeat may still report work it is about to send to the new node, which would
  // launch a second one (Ray #36926). At least two heartbeat intervals.
  Duration demand_settle = std::chrono::seconds(3);
  // A launched node that registered and then died or stopped without a drain is taken as gone
  // (its instance terminated, no launch failure counted) once the head has shown it DEAD this
  // long: a node cut off from the head rejoins under a new id when it reconnects.
  Duration dead_node_grace = std::chrono::seconds(10);
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
  ~Monitor();

  // Reads the books back from the head (a restarted monitor continues where the last one was).
  Status Recover();
  // Rounds until `stop` is set or the head's KV says "down"; returns why it stopped. Provider
  // calls still in flight are waited for at most `stop_wait` (their answers applied as they
  // come); those still running then are FinishLateCalls'.
  Status Run(const std::atomic<bool>& stop);
  // After Run: waits for the provider calls still running when it returned, each until its own
  // deadline plus provider_grace and at most `limit` in all, and applies their answers. After
  // `cumulus down` the instances a late launch made are terminated; after a plain stop they go
  // in the books. True if no call is left. A call still running then (its provider broke its
  // contract) is given up on: its answer is never applied, the providers are kept alive for it
  // (leaked, so that a call that returns later touches nothing freed) and this monitor cannot
  // Run again. The destructor runs it with `destroy_wait`.
  bool FinishLateCalls(Duration limit = Duration::max());
  // How many provider calls are still running (after Run returned).
  int late_calls() const;
  // Terminates every instance the books and the providers know of, waiting up to `timeout` for
  // them to end; what was terminated leaves the books. For `cumulus down`. A provider whose list
  // or terminate fails does not stop the rest: Unavailable names every failure, and what was
  // not terminated stays in the books (a later call tries it again).
  Status TerminateAll(Duration timeout);

  const MonitorBooks& books() const { return books_; }
  const autoscale::Decision& last_decision() const { return decision_; }

 private:
  Monitor(MonitorOptions options, std::unique_ptr<ControlClient> head,
          std::map<std::string, std::unique_ptr<NodeProvider>> providers);
  friend class MonitorLoop;
  // Applies answers that came after the monitor's actor ended (Run, FinishLateCalls): after
  // `cumulus down` (down_asked_) a launch's instances are terminated rather than kept.
  void ApplyLate(const std::function<void()>& apply);
  // A slow provider call: runs in an actor of its own; the function it returns (or `timed_out`,
  // if no answer comes within `deadline` plus a grace) is applied on the monitor's actor.
  using ProviderCall = std::function<std::function<void()>()>;
  void Spawn(ProviderCall call, Duration deadline, std::function<void()> timed_out);
  // One round: snapshot, decision, actions, status published. On the monitor's actor only.
  Status RunRound();
  void Launch(const std::string& type, int count, const std::string& why);
  void Terminate(const std::string& instance, bool launch_timed_out);
  // `launch_micros`: when the launch was asked for (its instances' launched_micros), so that one
  // launch counts once in the backoff (TypeBooks::CountFailure).
  void RecordFailure(const std::string& type, int count, int64_t launch_micros,
                     const std::string& error);
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
  std::map<std::string, int64_t> listed_started_;        // provider -> when that List() began
  // Instance -> when its Launch's answer put it in the books (a Launch may answer rounds after
  // it began, past a List begun meanwhile); pruned with the books.
  std::map<std::string, int64_t> booked_at_;
  std::map<std::string, int64_t> idle_since_;       // node hex -> since when idle (micros)
  std::map<std::string, int64_t> demand_since_;     // pending demand -> since when (micros)
  autoscale::IdleGapRecorder idle_gaps_;            // for types that learn_idle_timeout
  std::map<std::string, int> in_flight_launches_;   // type -> nodes being asked for
  std::map<std::string, int64_t> in_flight_since_;  // type -> when the oldest was asked
  std::set<std::string> terminating_;               // instance ids with a call in flight
  std::set<std::string> alive_;                     // node hexes alive last round
  int64_t capacity_changed_ = 0;                    // when a node last joined (micros; 0: not yet)
  std::set<std::string> listing_;                   // providers with a List() in flight
  bool down_asked_ = false;                         // the head's KV said "down"
  bool gave_up_calls_ = false;  // FinishLateCalls gave up on calls (providers_ went with them)

  // The provider calls still running when Run returned and the actor system they run in
  // (monitor_loop.cc; type-erased: no CAF type in this header).
  std::shared_ptr<void> late_calls_;

  // Set by MonitorLoop while Run runs: starts a provider call (Spawn).
  std::function<void(ProviderCall, Duration, std::function<void()>)> start_call_;
};

}  // namespace cumulus
