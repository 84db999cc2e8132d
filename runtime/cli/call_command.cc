// cumulus call: runs a function of a running job, or a method of a named actor, with arguments
// written as JSON, and prints the result as JSON. The job's function catalog (types of each
// parameter and result; runtime/call/function_catalog.h) says how to write the arguments' bytes
// and read the result's; the call itself is a real task of the job (through a node) or a real
// call of the actor (straight to its worker), made as a `caller` with the cluster token
// (runtime/call/call_client.h).
//
// cumulus kill ACTOR: the same lookup of a named actor, then a `killActor` to its worker, which
// exits at once.
#include <capnp/message.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/numeric.h"
#include "runtime/call/call_client.h"
#include "runtime/call/function_catalog.h"
#include "runtime/call/json_codec.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/head_connection.h"
#include "runtime/cli/interrupt.h"
#include "runtime/cli/local_state.h"
#include "runtime/cli/node_query.h"
#include "runtime/core/caller_connection.h"
#include "runtime/core/messages.h"
#include "scheduler/resources.h"

namespace cumulus::cli {

namespace {

constexpr const char* kCallHelp = R"(Usage:
  cumulus call JOB [FUNCTION [ARG...]] [--address A] [--token-file F] [--timeout SECONDS]
               [--resources LIST] [--max-retries N]
  cumulus call ACTOR [METHOD [ARG...]] [--address A] [--token-file F] [--timeout SECONDS]

Runs FUNCTION, a remote function (CUMULUS_REMOTE) of the running job JOB, as a task of that job
on the cluster's workers; or METHOD (e.g. Increment or Counter::Increment) of ACTOR, a named
actor (its name, or a prefix of its id as 'cumulus list actors' or 'cumulus list workers'
prints it; an actor without a name is found by its id on the nodes), on the actor's worker.
Each ARG is one argument written as JSON, of the parameter's type: 7, -2.5, true, "text",
[1,2], {"lr":0.1,"epochs":3} for a CUMULUS_SERIALIZE struct (every field, by name), null for an
empty optional. Prints the result as one line of JSON. Without FUNCTION (METHOD), lists what
can be called, with the types.

  --timeout SECONDS  wait at most this long for the result (default 60, at most 86400); a task
                     still running then is cancelled
  --resources LIST   what the task asks for (default CPU=1), e.g. CPU=2,GPU=1
  --max-retries N    retries of the task if its worker dies (default 0)
  --                 the arguments that follow are all JSON, even one that starts with --

Types and their JSON form: docs/call.md. Errors are one line on stderr. Exit status: 0 the
result was printed, 1 the call failed (the task threw, timed out, or the job or actor is gone),
2 bad usage (unknown function, wrong arguments, bad JSON).
)";

// Arguments of all calls together: what one task's spec carries inline (as the API's own
// limit on by-value arguments).
constexpr size_t kMaxArgumentBytes = 4u << 20;

// One line, whatever the message holds.
std::string OneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

int Failed(const Status& st) { return Fail(Status(st.code(), OneLine(st.message()))); }

int BadCall(const std::string& message) {
  std::fprintf(stderr, "cumulus: %s\n", OneLine(message).c_str());
  return 2;
}

bool IsHex(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The target of the call: a job, or an actor (and its job).
struct Target {
  JobId job;
  ActorId actor;
  std::string actor_name;
  std::string actor_class;
  std::string actor_address;
};

// An actor alive on the nodes whose id starts with `prefix` (named or not: its worker's row says
// its class and address); nullopt if none. InvalidArgument if the prefix fits several.
Result<std::optional<Target>> ActorOnNodes(ControlClient& head, const std::string& token,
                                           const std::string& prefix) {
  CUMULUS_ASSIGN_OR_RETURN(ClusterView view, head.GetClusterStatus());
  CUMULUS_ASSIGN_OR_RETURN(
      NodeAnswers answers,
      QueryNodes(view.nodes, token, StateQuerySpec{"workers", {{"actor", prefix}}, "", 50, true}));
  std::map<std::string, StateRowFields> found;  // actor id -> its newest live worker's row
  for (auto& r : answers.rows) {
    if (r["actor"].empty() || r["state"] == "EXITING") continue;
    auto& kept = found[r["actor"]];
    if (kept.empty() || std::atoi(r["life"].c_str()) > std::atoi(kept["life"].c_str())) kept = r;
  }
  if (found.empty()) return std::optional<Target>();
  if (found.size() > 1) {
    std::string all;
    for (auto& [id, r] : found) all += (all.empty() ? "" : ", ") + id;
    return Status::InvalidArgument("'" + prefix + "' is ambiguous: it may be actor " + all +
                                   "; give more of the id");
  }
  auto& [id, row] = *found.begin();
  Target t;
  CUMULUS_ASSIGN_OR_RETURN(t.actor, ActorId::FromHex(id));
  t.job = t.actor.Job();
  t.actor_name = id;
  t.actor_class = row["class"];
  t.actor_address = row["address"];
  return std::optional<Target>(t);
}

// JOB (its id or a prefix), an actor's name, or a prefix of an actor's id: of a named actor (the
// head's records), else of any actor alive on the nodes (asked of them with `token`). A whole
// job id or an actor's name wins over prefixes; prefixes must match one job or actor only.
Result<Target> Resolve(ControlClient& head, const std::string& what, const std::string& token) {
  std::vector<std::string> jobs;
  if (IsHex(what) && what.size() <= 2 * JobId::kSize) {
    CUMULUS_RETURN_IF_ERROR(
        ForEachKv(head, kJobsNamespace, what,
                  [&](const std::string& k, const std::string&) { jobs.push_back(k); }));
  }
  CUMULUS_ASSIGN_OR_RETURN(auto actors, NamedActorRecords(head));
  std::vector<std::string> actor_matches;
  bool exact_job = std::find(jobs.begin(), jobs.end(), what) != jobs.end();
  if (exact_job) {
    jobs = {what};
  } else if (actors.count(what)) {
    jobs.clear();
    actor_matches.push_back(what);
  } else if (IsHex(what)) {
    for (auto& [name, r] : actors) {
      if (r.actor_id.rfind(what, 0) == 0) actor_matches.push_back(name);
    }
  }
  if (jobs.size() + actor_matches.size() > 1) {
    std::string all;
    for (auto& j : jobs) all += (all.empty() ? "job " : ", job ") + j;
    for (auto& a : actor_matches) all += (all.empty() ? "actor " : ", actor ") + a;
    return Status::InvalidArgument("'" + what + "' is ambiguous: it may be " + all +
                                   "; give more of the id");
  }
  Target t;
  if (!jobs.empty()) {
    CUMULUS_ASSIGN_OR_RETURN(t.job, JobId::FromHex(jobs[0]));
    return t;
  }
  if (actor_matches.empty() && IsHex(what)) {
    CUMULUS_ASSIGN_OR_RETURN(std::optional<Target> unnamed, ActorOnNodes(head, token, what));
    if (unnamed) return *unnamed;
  }
  if (actor_matches.empty()) {
    std::string names;
    size_t shown = 0;
    for (auto& [name, r] : actors) {
      if (shown++ < 10) names += (names.empty() ? "" : ", ") + name;
    }
    if (actors.size() > 10) names += ", ...";
    return Status::NotFound(
        "no job and no actor '" + what + "' (jobs: 'cumulus jobs'; actors: " +
        (IsHex(what) ? std::string("no actor alive on the nodes has an id that starts so; ")
                     : std::string()) +
        (names.empty() ? std::string("there are no named actors") : "named actors: " + names) +
        ")");
  }
  const ActorNameRecord& r = actors[actor_matches[0]];
  CUMULUS_ASSIGN_OR_RETURN(t.actor, ActorId::FromHex(r.actor_id));
  t.job = t.actor.Job();
  t.actor_name = actor_matches[0];
  t.actor_class = r.class_name;
  t.actor_address = r.address;
  return t;
}

// Whether the job still runs: its functions can be called only then.
Status CheckJobRuns(ControlClient& head, const JobId& job) {
  auto sub = head.KvGet(kSubmissionsNamespace, job.Hex());
  if (sub.ok()) {
    auto r = DecodeRecord<SubmissionRecord>(*sub);
    if (r.ok() && IsTerminalJobState(r->state)) {
      return Status::NotFound("job " + job.Hex() + " is " + r->state +
                              ": its functions run only while it does");
    }
  }
  auto end = head.KvGet(kJobEndsNamespace, job.Hex());
  if (end.ok()) {
    return Status::NotFound("job " + job.Hex() +
                            " has finished: its functions run only while it does");
  }
  if (end.status().code() != StatusCode::kNotFound) return end.status();
  return Status();
}

Result<FunctionCatalog> LoadCatalog(ControlClient& head, const JobId& job) {
  auto raw = head.KvGet(kFunctionsNamespace, job.Hex());
  if (!raw.ok()) {
    if (raw.status().code() != StatusCode::kNotFound) return raw.status();
    return Status::NotFound("job " + job.Hex() +
                            " published no function catalog (its driver was built with a "
                            "Cumulus without `cumulus call`, or could not write it)");
  }
  auto catalog = DecodeCatalog(*raw);
  if (!catalog.ok()) {
    return Status::InvalidArgument("the function catalog of job " + job.Hex() +
                                   " cannot be read: " + catalog.status().message());
  }
  return catalog;
}

// The functions (or the actor's methods) of the catalog.
std::vector<const CatalogEntry*> Callable(const FunctionCatalog& c, const Target& t) {
  std::vector<const CatalogEntry*> out;
  for (auto& e : c.functions) {
    if (t.actor.IsNil() ? !e.is_method() : e.class_name == t.actor_class) out.push_back(&e);
  }
  return out;
}

std::string Names(const std::vector<const CatalogEntry*>& list) {
  std::string out;
  for (auto* e : list) out += (out.empty() ? "" : ", ") + e->name;
  return out.empty() ? "none" : out;
}

// The node to send a task of `job` to: its driver's, else any alive one.
Result<HostPort> NodeFor(ControlClient& head, const JobId& job) {
  std::string driver_node;
  auto rec = head.KvGet(kJobsNamespace, job.Hex());
  if (rec.ok()) {
    auto r = DecodeRecord<JobRecord>(*rec);
    if (r.ok()) driver_node = r->driver_node;
  }
  CUMULUS_ASSIGN_OR_RETURN(ClusterView view, head.GetClusterStatus());
  const NodeRecord* pick = nullptr;
  for (auto& n : view.nodes) {
    if (n.state != NodeState::kAlive || n.core_address.empty()) continue;
    if (!pick || n.id.Hex() == driver_node) pick = &n;
  }
  if (!pick) return Status::Unavailable("no alive node in the cluster can run the call");
  return ParseHostPort(pick->core_address);
}

int List(const Target& t, const FunctionCatalog& catalog) {
  auto list = Callable(catalog, t);
  if (t.actor.IsNil()) {
    std::printf("functions of job %s (cumulus call %s FUNCTION ARG...):\n", t.job.Hex().c_str(),
                t.job.Hex().c_str());
  } else {
    std::printf("methods of actor '%s' (cumulus call %s METHOD ARG...):\n", t.actor_name.c_str(),
                t.actor_name.c_str());
  }
  for (auto* e : list) std::printf("  %s\n", e->Signature().c_str());
  if (list.empty()) std::printf("  (none)\n");
  if (catalog.omitted > 0) {
    std::printf("  (%zu more left out of the catalog: it is bounded)\n", catalog.omitted);
  }
  return 0;
}

// The catalog entry that `name` calls on the target.
Result<const CatalogEntry*> Find(const Target& t, const FunctionCatalog& catalog,
                                 const std::string& name) {
  auto list = Callable(catalog, t);
  for (auto* e : list) {
    if (e->name == name) return e;
  }
  if (!t.actor.IsNil()) {
    for (auto* e : list) {
      size_t sep = e->name.rfind("::");
      if (sep != std::string::npos && e->name.substr(sep + 2) == name) return e;
    }
    return Status::NotFound("actor '" + t.actor_name + "' has no method " + name +
                            " (its methods: " + Names(list) + ")");
  }
  for (auto& e : catalog.functions) {
    if (e.name == name && e.is_method()) {
      return Status::NotFound(name + " is an actor method: call it on an actor (cumulus call " +
                              "ACTOR METHOD ...)");
    }
  }
  return Status::NotFound("job " + t.job.Hex() + " has no function " + name +
                          " (its functions: " + Names(list) + ")");
}

// Each JSON argument as the bytes its parameter's deserializer expects.
Result<std::vector<std::string>> EncodeArgs(const CatalogEntry& e,
                                            const std::vector<std::string>& json) {
  if (json.size() != e.params.size()) {
    return Status::InvalidArgument(e.Signature() + " takes " + std::to_string(e.params.size()) +
                                   " argument" + (e.params.size() == 1 ? "" : "s") + ", got " +
                                   std::to_string(json.size()));
  }
  std::vector<std::string> out;
  size_t total = 0;
  for (size_t i = 0; i < json.size(); ++i) {
    std::string path = "args[" + std::to_string(i) + "]";
    JsonLimits limits;
    limits.max_bytes = kMaxArgumentBytes;
    auto value = ParseJson(json[i], limits);
    if (!value.ok()) return Status::InvalidArgument(path + ": " + value.status().message());
    CUMULUS_ASSIGN_OR_RETURN(std::string bytes,
                             JsonToBytes(*value, e.params[i], e.param_fingerprints[i], path));
    total += bytes.size();
    if (total > kMaxArgumentBytes) {
      return Status::InvalidArgument("the arguments take over " +
                                     std::to_string(kMaxArgumentBytes >> 20) +
                                     " MiB serialized: pass large data as objects from a program");
    }
    out.push_back(std::move(bytes));
  }
  return out;
}

// What cannot be called from the command line, by name; OK if it can.
Status CheckJsonForm(const CatalogEntry& e) {
  for (size_t i = 0; i < e.params.size(); ++i) {
    if (const TypeNode* o = e.params[i].FirstOpaque()) {
      return Status::InvalidArgument(e.name + " cannot be called with JSON: argument " +
                                     std::to_string(i) + " is (or holds) " + o->Display());
    }
  }
  if (const TypeNode* o = e.result.FirstOpaque()) {
    return Status::InvalidArgument(
        e.name + " cannot be called with JSON: its result is (or holds) " + o->Display());
  }
  return Status();
}

}  // namespace

int CallCommand(const std::vector<std::string>& args) {
  // Flags start with "--" (a JSON value never does); after a lone "--" everything is an argument.
  std::vector<std::string> positional, flag_args;
  static const std::vector<std::string> kWithValue = {"--address", "--token-file", "--timeout",
                                                      "--resources", "--max-retries"};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      positional.insert(positional.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (a == "-h" || a == "--help") {
      std::fputs(kCallHelp, stdout);
      return 0;
    }
    if (a.rfind("--", 0) == 0) {
      flag_args.push_back(a);
      bool takes = std::find(kWithValue.begin(), kWithValue.end(), a) != kWithValue.end();
      if (takes && i + 1 < args.size()) flag_args.push_back(args[++i]);
      continue;
    }
    positional.push_back(a);
  }
  Flags flags({"address", "token-file", "timeout", "resources", "max-retries"}, {});
  Status st = flags.Parse(flag_args);
  if (!st.ok()) return UsageError(st.message(), "cumulus call --help");
  if (positional.empty()) {
    return UsageError("call needs a job or an actor, e.g. cumulus call JOB Square 7",
                      "cumulus call --help");
  }
  int64_t timeout_s = 60;
  if (flags.Has("timeout")) {
    auto t = ParseInteger("--timeout", flags.Get("timeout"), {1, 86400, "seconds"});
    if (!t.ok()) return UsageError(t.status().message(), "cumulus call --help");
    timeout_s = *t;
  }
  CallRequest request;
  if (flags.Has("max-retries")) {
    auto n = ParseInteger("--max-retries", flags.Get("max-retries"), {0, 100});
    if (!n.ok()) return UsageError(n.status().message(), "cumulus call --help");
    request.max_retries = static_cast<int>(*n);
  }
  if (flags.Has("resources")) {
    auto r = ResourceSet::Parse(flags.Get("resources"));
    if (!r.ok()) return UsageError("--resources: " + r.status().message(), "cumulus call --help");
    for (auto& [name, units] : r->units()) {
      request.resources[name] = static_cast<double>(units) / ResourceSet::kUnit;
    }
  }

  auto head = ConnectHead(flags);
  if (!head.ok()) return Failed(head.status());
  auto token = ResolveToken(flags.Get("token-file"));
  if (!token.ok()) return Failed(token.status());
  auto target = Resolve(**head, positional[0], *token);
  if (!target.ok()) {
    return target.status().code() == StatusCode::kInvalidArgument
               ? BadCall(target.status().message())
               : Failed(target.status());
  }
  if (target->actor.IsNil()) {
    if (Status runs = CheckJobRuns(**head, target->job); !runs.ok()) return Failed(runs);
  }
  auto catalog = LoadCatalog(**head, target->job);
  if (!catalog.ok()) return Failed(catalog.status());
  if (positional.size() == 1) return List(*target, *catalog);
  if (!target->actor.IsNil() && !request.resources.empty()) {
    return UsageError("--resources is for tasks: an actor's methods run in its own resources",
                      "cumulus call --help");
  }

  auto entry = Find(*target, *catalog, positional[1]);
  if (!entry.ok()) return BadCall(entry.status().message());
  const CatalogEntry& e = **entry;
  if (Status form = CheckJsonForm(e); !form.ok()) return BadCall(form.message());
  auto encoded = EncodeArgs(e, std::vector<std::string>(positional.begin() + 2, positional.end()));
  if (!encoded.ok()) return BadCall(encoded.status().message());

  request.job = target->job;
  request.actor = target->actor;
  request.function = e.name;
  request.args = std::move(*encoded);
  CallTarget where;
  where.token = *token;
  where.timeout = std::chrono::seconds(timeout_s);
  if (target->actor.IsNil()) {
    auto node = NodeFor(**head, target->job);
    if (!node.ok()) return Failed(node.status());
    where.address = *node;
  } else {
    if (target->actor_address.empty()) {
      return Failed(Status::Unavailable("actor '" + target->actor_name +
                                        "' has not started yet (no address): try again"));
    }
    auto address = ParseHostPort(target->actor_address);
    if (!address.ok()) return Failed(address.status());
    where.address = *address;
  }
  // Ctrl-C in the shell (which runs this in its own process) ends the wait; a plain `cumulus
  // call` keeps the default and dies, and its node cancels the task of the closed connection.
  where.stop = [] { return Interrupted(); };
  auto bytes = RunCall(request, where);
  if (!bytes.ok() && bytes.status().code() == StatusCode::kCancelled && Interrupted()) {
    std::fprintf(stderr, "cumulus: %s\n", OneLine(bytes.status().message()).c_str());
    return kInterruptedExit;
  }
  if (!bytes.ok()) return Failed(bytes.status());
  auto json = BytesToJson(*bytes, e.result, e.result_fingerprint);
  if (!json.ok()) return Failed(json.status().WithContext("the result of " + e.name));
  std::printf("%s\n", json->c_str());
  return 0;
}

namespace {

constexpr const char* kKillHelp = R"(Usage:
  cumulus kill ACTOR [--address HOST:PORT] [--token-file FILE]

Kills an actor (its name, or a prefix of its id as 'cumulus list actors' or 'cumulus list
workers' prints it; an actor without a name is found by its id on the nodes): its worker
process exits at once (its node records it as killed by user, for 'cumulus describe actor'), and
calls it was running fail. As with a crash, an actor created with restarts left
(SetMaxRestarts) is started again by its owner; one without is dead for good. Exit status: 0
killed, 1 it could not be reached or did not exit within 10 s, 2 bad usage or not an actor.
)";

}  // namespace

int KillCommand(const std::vector<std::string>& args) {
  for (auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kKillHelp, stdout);
      return 0;
    }
  }
  if (args.empty() || args[0].rfind("-", 0) == 0) {
    return UsageError("kill needs an actor: cumulus kill ACTOR", "cumulus kill --help");
  }
  const std::string& what = args[0];
  Flags flags({"address", "token-file"}, {});
  if (Status st = flags.Parse({args.begin() + 1, args.end()}); !st.ok()) {
    return UsageError(st.message(), "cumulus kill --help");
  }
  auto head = ConnectHead(flags);
  if (!head.ok()) return Failed(head.status());
  auto token = ResolveToken(flags.Get("token-file"));
  if (!token.ok()) return Failed(token.status());
  auto target = Resolve(**head, what, *token);
  if (!target.ok()) {
    return target.status().code() == StatusCode::kInvalidArgument
               ? BadCall(target.status().message())
               : Failed(target.status());
  }
  if (target->actor.IsNil()) {
    return BadCall("'" + what + "' is a job, not an actor: to stop a job, cumulus cancel " + what);
  }
  if (target->actor_address.empty()) {
    return Failed(Status::Unavailable("actor '" + target->actor_name +
                                      "' has not started yet (no address): try again"));
  }
  auto address = ParseHostPort(target->actor_address);
  if (!address.ok()) return Failed(address.status());
  TimePoint deadline = SystemClock::Get().Now() + std::chrono::seconds(10);
  auto conn = CallerConnection::Open(*address, *token, deadline);
  if (!conn.ok()) {
    return Failed(Status::Unavailable("actor '" + target->actor_name + "' cannot be reached at " +
                                      address->ToString() +
                                      " (it is not running?): " + conn.status().message()));
  }
  capnp::MallocMessageBuilder kill;
  kill.initRoot<proto::CoreMessage>().setKillActor(DataOf(target->actor));
  Status sent = conn->Send(kill, deadline);
  // The worker exits on it: the connection closes, and nothing else comes.
  auto after = sent.ok() ? conn->Next(deadline) : Result<kj::Array<capnp::word>>(sent);
  if (after.ok() || after.status().code() == StatusCode::kTimedOut) {
    return Failed(Status::TimedOut("actor '" + target->actor_name + "' did not exit within 10 s"));
  }
  if (after.status().code() == StatusCode::kUnauthenticated) return Failed(after.status());
  std::printf("killed actor '%s' (%s)\n", target->actor_name.c_str(), target->actor.Hex().c_str());
  return 0;
}

}  // namespace cumulus::cli
