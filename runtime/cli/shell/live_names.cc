// Names and ids from the cluster for completion: see live_names.h.
#include "runtime/cli/shell/live_names.h"

#include <condition_variable>
#include <map>
#include <set>
#include <thread>

#include "runtime/autoscaler/cluster_config.h"
#include "runtime/autoscaler/monitor_books.h"
#include "runtime/call/json_value.h"
#include "runtime/cli/head_connection.h"
#include "runtime/cli/local_state.h"
#include "runtime/cli/node_query.h"
#include "runtime/core/messages.h"
#include "runtime/head/control_client.h"
#include "runtime/tune/experiment_state.h"
#include "runtime/tune/journal.h"

namespace cumulus::cli::shell {

namespace {

using Clock = std::chrono::steady_clock;

// The trial ids of experiment `name`, from its journal in the head's control store.
Result<std::vector<std::string>> TrialIds(ControlClient& head, const std::string& name) {
  CUMULUS_ASSIGN_OR_RETURN(auto journal, tune::Journal::Load(head, name));
  tune::ExperimentState state(journal.spec);
  for (auto& e : journal.entries) CUMULUS_RETURN_IF_ERROR(state.Apply(e));
  std::vector<std::string> ids;
  for (auto& t : state.ToTable().trials) ids.push_back(t.id);
  return ids;
}

Result<std::vector<std::string>> Fetch(const LiveNames::Options& o, const std::string& kind) {
  CUMULUS_ASSIGN_OR_RETURN(HostPort address, ResolveAddress(o.address));
  CUMULUS_ASSIGN_OR_RETURN(std::string token, ResolveToken(o.token_file));
  ControlClientOptions co;
  co.role = "client";
  co.connect_timeout = o.fetch_timeout;
  co.request_timeout = o.fetch_timeout;
  CUMULUS_ASSIGN_OR_RETURN(auto head, ControlClient::Connect(address, token, co));
  std::set<std::string> names;
  auto keys = [&](const std::string& ns, bool skip_addresses = false) {
    return ForEachKv(*head, ns, "", [&](const std::string& k, const std::string&) {
      if (skip_addresses && k.size() > 8 && k.compare(k.size() - 8, 8, "/address") == 0) return;
      names.insert(k);
    });
  };
  if (kind == "node") {
    CUMULUS_ASSIGN_OR_RETURN(ClusterView view, head->GetClusterStatus());
    for (auto& n : view.nodes) {
      if (n.state != NodeState::kDead) names.insert(n.id.Hex());
    }
  } else if (kind == "job") {
    CUMULUS_RETURN_IF_ERROR(keys(kSubmissionsNamespace));
    CUMULUS_RETURN_IF_ERROR(keys(kJobsNamespace));
  } else if (kind == "actor") {
    CUMULUS_RETURN_IF_ERROR(keys(kActorsNamespace, /*skip_addresses=*/true));
  } else if (kind == "actor_id") {
    // Every actor the nodes host or recall the end of (`list actors`), anonymous ones too.
    CUMULUS_ASSIGN_OR_RETURN(ClusterView view, head->GetClusterStatus());
    cli::NodeQueryOptions qo;
    qo.deadline = o.fetch_timeout;
    CUMULUS_ASSIGN_OR_RETURN(
        auto answers,
        QueryNodes(view.nodes, token, StateQuerySpec{"actors", {}, "", 1000, false}, qo));
    for (auto& r : answers.rows) names.insert(r["actor"]);
  } else if (kind == "node_type") {
    // The types nodes run as now, and every type the autoscaler knows (its published status).
    CUMULUS_ASSIGN_OR_RETURN(ClusterView view, head->GetClusterStatus());
    for (auto& n : view.nodes) {
      if (n.state == NodeState::kDead) continue;
      auto type = n.labels.find(kNodeTypeLabel);
      if (type == n.labels.end()) type = n.labels.find("node_type");
      if (type != n.labels.end() && !type->second.empty()) names.insert(type->second);
    }
    auto status = head->KvGet(kAutoscalerNamespace, kStatusJsonKey);
    if (status.ok()) {
      auto json = ParseJson(*status);
      const JsonValue* types = json.ok() ? json->Member("types") : nullptr;
      if (types && types->kind == JsonValue::kArray) {
        for (auto& t : types->items) {
          const JsonValue* name = t.Member("type");
          if (name && name->kind == JsonValue::kString) names.insert(name->text);
        }
      }
    }
  } else if (kind == "group") {
    CUMULUS_RETURN_IF_ERROR(keys(kGroupsNamespace));
  } else if (kind == "experiment") {
    CUMULUS_RETURN_IF_ERROR(keys(tune::kExperimentsNamespace));
  } else if (kind.rfind("trial:", 0) == 0) {
    CUMULUS_ASSIGN_OR_RETURN(auto ids, TrialIds(*head, kind.substr(6)));
    names.insert(ids.begin(), ids.end());
  } else if (kind == "trial") {
    // Every experiment's: TRIAL and EXPERIMENT/TRIAL (what `logs --trial` takes).
    std::vector<std::string> experiments;
    CUMULUS_RETURN_IF_ERROR(
        ForEachKv(*head, tune::kExperimentsNamespace, "",
                  [&](const std::string& k, const std::string&) { experiments.push_back(k); }));
    for (auto& e : experiments) {
      auto ids = TrialIds(*head, e);
      if (!ids.ok()) continue;  // (one unreadable journal does not hide the others' trials)
      for (auto& id : *ids) {
        names.insert(id);
        names.insert(e + "/" + id);
      }
    }
  } else if (kind == "task" || kind == "object") {
    CUMULUS_RETURN_IF_ERROR(
        ForEachKv(*head, kNodeStateNamespace, "", [&](const std::string&, const std::string& v) {
          auto r = DecodeRecord<NodeStateReport>(v);
          if (!r.ok()) return;
          if (kind == "task") {
            for (auto& t : r->tasks) names.insert(t.task);
          } else {
            for (auto& obj : r->objects) names.insert(obj.object);
          }
        }));
  }
  return std::vector<std::string>(names.begin(), names.end());
}

}  // namespace

// What the fetch threads and the prompt share. A fetch thread holds a reference, so a fetch that
// outlives the shell's wait (or the shell) writes into this, never into freed memory.
struct LiveNames::Shared {
  std::mutex mu;
  std::condition_variable fetched;
  struct Entry {
    std::vector<std::string> names;
    Clock::time_point at{};  // when `names` were fetched; epoch: never
    bool in_flight = false;
  };
  std::map<std::string, Entry> entries;
};

LiveNames::LiveNames(Options options)
    : options_(std::move(options)), shared_(std::make_shared<Shared>()) {}

std::vector<std::string> LiveNames::Get(const std::string& kind) {
  std::unique_lock<std::mutex> lock(shared_->mu);
  Shared::Entry& e = shared_->entries[kind];
  if (Clock::now() - e.at < options_.fresh_for) return e.names;
  if (!e.in_flight) {
    e.in_flight = true;
    std::thread([shared = shared_, options = options_, kind] {
      auto names = Fetch(options, kind);
      std::lock_guard<std::mutex> g(shared->mu);
      Shared::Entry& entry = shared->entries[kind];
      entry.in_flight = false;
      if (names.ok()) {
        entry.names = std::move(*names);
        entry.at = Clock::now();
      }
      shared->fetched.notify_all();
    }).detach();
  }
  shared_->fetched.wait_for(lock, options_.wait, [&] { return !e.in_flight; });
  return e.names;
}

}  // namespace cumulus::cli::shell
