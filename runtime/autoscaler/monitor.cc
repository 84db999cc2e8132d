#include "runtime/autoscaler/monitor.h"

#include <unistd.h>

#include <algorithm>

#include "runtime/autoscaler/monitor_status.h"
#include "runtime/autoscaler/snapshot_builder.h"
#include "runtime/base/logging.h"

namespace cumulus {

namespace {

int64_t WallNow() { return SystemClock::Get().WallMicros(); }
TimePoint In(Duration d) { return SystemClock::Get().Now() + d; }

}  // namespace

Result<std::unique_ptr<Monitor>> Monitor::Create(
    MonitorOptions options, std::unique_ptr<ControlClient> head,
    std::map<std::string, std::unique_ptr<NodeProvider>> providers) {
  if (!head) return Status::InvalidArgument("the autoscaler's monitor needs a head connection");
  for (auto& t : options.config.node_types) {
    if (!providers.count(t.provider))
      return Status::InvalidArgument("node type '" + t.name + "' names provider '" + t.provider +
                                     "', which the monitor was not given");
  }
  return std::unique_ptr<Monitor>(
      new Monitor(std::move(options), std::move(head), std::move(providers)));
}

Monitor::Monitor(MonitorOptions options, std::unique_ptr<ControlClient> head,
                 std::map<std::string, std::unique_ptr<NodeProvider>> providers)
    : options_(std::move(options)), head_(std::move(head)), providers_(std::move(providers)) {}

Monitor::~Monitor() { (void)FinishLateCalls(options_.destroy_wait); }

void Monitor::ApplyLate(const std::function<void()>& apply) {
  std::set<std::string> before;
  for (auto& [id, in] : books_.instances) before.insert(id);
  apply();
  if (!down_asked_) return;
  for (auto it = books_.instances.begin(); it != books_.instances.end();) {
    if (before.count(it->first)) {
      ++it;
      continue;
    }
    // Made by a launch that answered after `cumulus down`: not left running.
    auto p = providers_.find(it->second.provider);
    if (p != providers_.end()) {
      Status st = p->second->Terminate(it->first, In(options_.terminate_timeout));
      CUMULUS_LOG(INFO) << "autoscaler: terminated " << it->first
                        << ", launched by a call that answered after 'cumulus down'"
                        << (st.ok() ? std::string() : ": " + st.message());
    }
    it = books_.instances.erase(it);
  }
}

void Monitor::Spawn(ProviderCall call, Duration deadline, std::function<void()> timed_out) {
  // Outside Run there is no actor to answer to: the call runs here (TerminateAll's case).
  if (!start_call_) {
    call()();
    return;
  }
  start_call_(std::move(call), deadline, std::move(timed_out));
}

NodeProvider* Monitor::ProviderOf(const std::string& type) {
  const NodeTypeConfig* t = options_.config.FindType(type);
  if (!t) return nullptr;
  auto p = providers_.find(t->provider);
  return p == providers_.end() ? nullptr : p->second.get();
}

Status Monitor::Recover() {
  auto text = head_->KvGet(kAutoscalerNamespace, kBooksKey);
  if (!text.ok()) return text.status().code() == StatusCode::kNotFound ? Status() : text.status();
  CUMULUS_ASSIGN_OR_RETURN(books_, DecodeBooks(*text));
  saved_books_ = *text;
  CUMULUS_LOG(INFO) << "autoscaler: recovered " << books_.instances.size()
                    << " launched instance(s), spend " << books_.TotalSpend();
  return Status();
}

Status Monitor::SaveBooks() {
  std::string text = EncodeBooks(books_);
  if (text == saved_books_) return Status();
  CUMULUS_RETURN_IF_ERROR(head_->KvPut(kAutoscalerNamespace, kBooksKey, text).status());
  saved_books_ = text;
  return Status();
}

void Monitor::RecordFailure(const std::string& type, int count, int64_t launch_micros,
                            const std::string& error) {
  books_.types[type].CountFailure(count, launch_micros, WallNow(), error);
  CUMULUS_LOG(WARN) << "autoscaler: launch of " << count << " node(s) of type " << type
                    << " failed: " << error;
}

void Monitor::Launch(const std::string& type, int count, const std::string& why) {
  const NodeTypeConfig* config = options_.config.FindType(type);
  NodeProvider* provider = ProviderOf(type);
  if (!config || !provider) return;
  int64_t asked = WallNow();
  if (in_flight_launches_[type] == 0) in_flight_since_[type] = asked;
  in_flight_launches_[type] += count;
  CUMULUS_LOG(INFO) << "autoscaler: launching " << count << " x " << type << " (" << why << ")";
  Duration timeout = std::max<Duration>(
      options_.min_launch_timeout,
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(2 * config->boot_time_s)));
  NodeTypeConfig type_config = *config;
  LaunchSpec spec = options_.launch;
  // Once per call, whether its answer or its timeout comes first (a late answer is applied too).
  auto settled = std::make_shared<bool>(false);
  auto launched = [this, type, count, settled] {
    if (*settled) return;
    *settled = true;
    if ((in_flight_launches_[type] -= count) <= 0) {
      in_flight_launches_.erase(type);
      in_flight_since_.erase(type);
    }
  };
  Spawn(
      [this, provider, type_config, spec, count, timeout, asked, launched,
       settled]() -> std::function<void()> {
        auto ids = provider->Launch(type_config, count, spec, In(timeout));
        return [this, ids, type_config, provider, count, asked, launched, settled] {
          bool late = *settled;  // already counted failed when its timer went off
          launched();
          if (!ids.ok()) {
            if (!late) RecordFailure(type_config.name, count, asked, ids.status().message());
            return;
          }
          int64_t booked = WallNow();
          for (auto& id : *ids) {
            // A node that registered before its slow launch answered was adopted (its round
            // booked it, registered, maybe draining): the answer keeps that entry and its
            // flags, and only dates its launch from when it was asked for.
            auto [in, fresh] = books_.instances.try_emplace(
                id, LaunchedInstance{id, type_config.name, provider->name(), asked, false});
            if (!fresh) in->second.launched_micros = std::min(in->second.launched_micros, asked);
            booked_at_.try_emplace(id, booked);
          }
        };
      },
      timeout,
      [this, type, count, asked, launched] {
        // Counted failed now; if it answers later, the instances it made go in the books then.
        launched();
        RecordFailure(type, count, asked,
                      "the provider's launch call did not return by its deadline");
      });
}

void Monitor::Terminate(const std::string& instance, bool launch_timed_out) {
  if (instance.rfind("asking/", 0) == 0 || terminating_.count(instance)) return;
  auto in = books_.instances.find(instance);
  if (in == books_.instances.end()) return;
  NodeProvider* provider = ProviderOf(in->second.type);
  if (!provider) return;
  if (launch_timed_out)
    RecordFailure(in->second.type, 1, in->second.launched_micros, "launch timed out");
  terminating_.insert(instance);
  Duration timeout = options_.terminate_timeout;
  Spawn(
      [this, provider, instance, timeout]() -> std::function<void()> {
        Status st = provider->Terminate(instance, In(timeout));
        return [this, st, instance] {
          terminating_.erase(instance);
          if (st.ok()) {
            CUMULUS_LOG(INFO) << "autoscaler: terminated " << instance;
            books_.instances.erase(instance);
          } else {
            CUMULUS_LOG(WARN) << "autoscaler: terminating " << instance << " failed: " << st;
          }
        };
      },
      timeout,
      [instance] {
        // Not started again while this call still runs: its answer ends it.
        CUMULUS_LOG(WARN) << "autoscaler: terminating " << instance
                          << " did not return by its deadline; waiting for it";
      });
}

Status Monitor::RunRound() {
  CUMULUS_ASSIGN_OR_RETURN(ClusterView view, head_->GetClusterStatus());
  int64_t now = WallNow();

  // Ask every provider for its instances; the answer is used from the next round on.
  for (auto& [name, provider] : providers_) {
    if (listing_.count(name)) continue;
    listing_.insert(name);
    NodeProvider* p = provider.get();
    Duration timeout = options_.list_timeout;
    std::string provider_name = name;
    // No later than the call begins: what it says ended is trusted only for instances whose
    // launch began before this (TrustedListing).
    int64_t started = WallNow();
    Spawn(
        [this, p, provider_name, timeout, started]() -> std::function<void()> {
          auto listed = p->List(In(timeout));
          return [this, listed, provider_name, started] {
            listing_.erase(provider_name);
            if (listed.ok()) {
              listed_[provider_name] = *listed;
              listed_started_[provider_name] = started;
            } else {
              CUMULUS_LOG(WARN) << "autoscaler: " << listed.status();
            }
          };
        },
        timeout,
        [provider_name] {
          // Not started again while this call still runs: its answer ends it.
          CUMULUS_LOG(WARN) << "autoscaler: listing provider " << provider_name
                            << " did not return by its deadline; waiting for it";
        });
  }

  // Nodes that are alive: adopt launched ones the books lost; note the ones registered.
  std::set<std::string> alive_instances;
  for (auto& n : view.nodes) {
    if (n.state != NodeState::kAlive) continue;
    auto type = n.labels.find(kNodeTypeLabel);
    auto id = n.labels.find(kInstanceIdLabel);
    if (type == n.labels.end() || id == n.labels.end()) continue;
    const NodeTypeConfig* t = options_.config.FindType(type->second);
    if (!t) continue;
    alive_instances.insert(id->second);
    if (!books_.instances.count(id->second)) {
      books_.instances[id->second] = LaunchedInstance{id->second, t->name, t->provider, now, false};
    }
    // Registered (kept in the books, so a restarted monitor knows too): its type launches.
    LaunchedInstance& in = books_.instances[id->second];
    if (!in.registered) {
      in.registered = true;
      books_.types[t->name].history = {};
    }
  }

  // What the providers' last List() may say (not that an instance launched after it began has
  // ended: TrustedListing).
  for (auto it = booked_at_.begin(); it != booked_at_.end();) {
    it = books_.instances.count(it->first) ? std::next(it) : booked_at_.erase(it);
  }
  std::map<std::string, std::vector<Instance>> listed;
  for (auto& [provider, instances] : listed_) {
    listed[provider] = TrustedListing(instances, listed_started_[provider], books_, booked_at_);
  }
  // Instances the providers list as ended leave the books; one that never came up is a failure.
  for (auto& [provider, instances] : listed) {
    for (auto& in : instances) {
      auto it = books_.instances.find(in.id);
      if (it == books_.instances.end() || alive_instances.count(in.id)) continue;
      if (in.state == InstanceState::kFailed) {
        if (!it->second.registered)
          RecordFailure(it->second.type, 1, it->second.launched_micros, in.detail);
        CUMULUS_LOG(INFO) << "autoscaler: instance " << in.id << " ended: " << in.detail;
        books_.instances.erase(it);
      } else if (in.state == InstanceState::kTerminated) {
        books_.instances.erase(it);
      }
    }
  }

  // `cumulus drain NODE`: drain the launched node whose id starts with NODE.
  auto drains = head_->KvList(kAutoscalerNamespace, kDrainPrefix);
  if (drains.ok()) {
    for (auto& [key, value] : drains->entries) {
      std::string prefix = key.substr(std::string(kDrainPrefix).size());
      for (auto& n : view.nodes) {
        auto id = n.labels.find(kInstanceIdLabel);
        if (n.id.Hex().rfind(prefix, 0) != 0 || id == n.labels.end()) continue;
        auto it = books_.instances.find(id->second);
        if (it != books_.instances.end()) it->second.draining = true;
      }
      (void)head_->KvDelete(kAutoscalerNamespace, key);
    }
  }
  // A node marked DRAINING on the head (`cumulus drain`, or this monitor) is draining in the
  // books too.
  for (auto& n : view.nodes) {
    auto id = n.labels.find(kInstanceIdLabel);
    if (!n.draining || n.state != NodeState::kAlive || id == n.labels.end()) continue;
    auto it = books_.instances.find(id->second);
    if (it != books_.instances.end()) it->second.draining = true;
  }

  std::map<std::string, double> prices;
  for (auto& t : options_.config.node_types) prices[t.name] = t.price_per_hour;
  books_.Accrue(now, prices);

  std::set<std::string> alive;
  for (auto& n : view.nodes) {
    if (n.state == NodeState::kAlive) alive.insert(n.id.Hex());
  }
  bool joined = capacity_changed_ == 0;
  for (auto& hex : alive) joined = joined || !alive_.count(hex);
  if (joined) capacity_changed_ = now;
  alive_ = std::move(alive);

  MonitorView mv;
  mv.demand_settled =
      now - capacity_changed_ >=
      std::chrono::duration_cast<std::chrono::microseconds>(options_.demand_settle).count();
  mv.nodes = view.nodes;
  mv.listed = std::move(listed);
  mv.in_flight_launches = in_flight_launches_;
  mv.in_flight_since = in_flight_since_;
  mv.now = now;
  mv.dead_grace_micros =
      std::chrono::duration_cast<std::chrono::microseconds>(options_.dead_node_grace).count();
  BuiltSnapshot built = BuildSnapshot(options_.config, books_, mv, &idle_since_, &demand_since_);
  built.snapshot.idle_gaps = idle_gaps_.Gaps();
  auto decision = autoscale::Decide(built.snapshot, options_.policy);
  if (!decision.ok()) return decision.status();
  decision_ = *decision;
  idle_gaps_.Observe(built.snapshot, decision_);

  for (auto& l : decision_.launches) Launch(l.type, l.count, l.why);
  for (auto& d : decision_.drains) {
    auto in = built.instance_of.find(d.node);
    if (in == built.instance_of.end()) continue;
    auto it = books_.instances.find(in->second);
    if (it == books_.instances.end() || it->second.draining) continue;
    // The head marks it, so placement gives it no new work and the node drains itself; it is
    // terminated only once it has left. Booked as draining only once the head has marked it: a
    // node the head was never told about would never leave (the policy asks again next round).
    auto id = NodeId::FromHex(d.node);
    if (!id.ok()) continue;
    Status marked = head_->DrainNode(*id, "autoscaler: " + d.why);
    if (!marked.ok()) {
      CUMULUS_LOG(WARN) << "autoscaler: cannot mark " << d.node << " draining (asked again next "
                        << "round): " << marked;
      continue;
    }
    CUMULUS_LOG(INFO) << "autoscaler: draining " << d.node << " (" << d.why << ")";
    it->second.draining = true;
  }
  for (auto& t : decision_.terminations) {
    auto in = built.instance_of.find(t.node);
    if (in == built.instance_of.end()) continue;
    bool launching = !built.registered.count(in->second);
    auto gone = built.gone.find(in->second);
    CUMULUS_LOG(INFO) << "autoscaler: terminating " << in->second << " ("
                      << (gone == built.gone.end()
                              ? t.why
                              : "its node is gone without a drain: " + gone->second)
                      << ")";
    Terminate(in->second, launching);
  }
  CUMULUS_RETURN_IF_ERROR(SaveBooks());
  MonitorStatusInput status{&options_.config, &books_, &decision_, &built.snapshot, now};
  (void)head_->KvPut(kAutoscalerNamespace, kStatusTextKey, StatusText(status));
  (void)head_->KvPut(kAutoscalerNamespace, kStatusJsonKey, StatusJson(status));
  (void)head_->KvPut(
      kAutoscalerNamespace, kOwnerKey,
      OwnerRecord(getpid(),
                  std::chrono::duration_cast<std::chrono::milliseconds>(options_.round).count(),
                  WallNow()));
  return Status();
}

Status Monitor::TerminateAll(Duration timeout) {
  // Run has returned: no provider call is in flight.
  TimePoint deadline = In(timeout);
  std::set<std::pair<std::string, std::string>> all;  // (provider, instance id)
  for (auto& [id, in] : books_.instances) all.insert({in.provider, id});
  // A provider that fails does not stop the others: each failure is named at the end.
  std::vector<std::string> failed;
  for (auto& [name, provider] : providers_) {
    auto listed = provider->List(deadline);
    if (!listed.ok()) {
      failed.push_back("provider '" + name + "' could not list its instances (" +
                       listed.status().message() + "): any not in the books may still run");
      continue;
    }
    for (auto& in : *listed) {
      if (in.state == InstanceState::kPending || in.state == InstanceState::kRunning)
        all.insert({name, in.id});
    }
  }
  for (auto& [provider, id] : all) {
    auto p = providers_.find(provider);
    if (p == providers_.end()) {
      failed.push_back("instance " + id + " is of provider '" + provider +
                       "', which the cluster file does not have");
      continue;
    }
    Status st = p->second->Terminate(id, deadline);
    if (st.ok()) {
      books_.instances.erase(id);
    } else {
      failed.push_back("instance " + id + " (provider '" + provider +
                       "') was not terminated: " + st.message());
    }
  }
  Status saved = SaveBooks();
  if (failed.empty()) return saved;
  std::string all_failed;
  for (auto& f : failed) all_failed += (all_failed.empty() ? "" : "; ") + f;
  return Status::Unavailable(all_failed);
}

}  // namespace cumulus
