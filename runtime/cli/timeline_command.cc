// `cumulus timeline [JOB] -o FILE`: every alive node's timeline ring (runtime/core/timeline.h),
// fetched over its core TCP port with the cluster token, merged into one Chrome trace.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runtime/base/numeric.h"
#include "runtime/cli/chrome_trace.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/head_connection.h"
#include "runtime/cli/local_state.h"
#include "runtime/core/caller_connection.h"
#include "runtime/core/messages.h"
#include "runtime/net/frame.h"
#include "runtime/net/tcp.h"

namespace cumulus::cli {

namespace {

constexpr const char* kTimelineHelp = R"(Usage: cumulus timeline [JOB] -o FILE [options]

Writes a Chrome trace (JSON) of the tasks and actor calls that ran on the cluster's workers:
one process per node, one thread per worker; each run named by its function or method, with its
argument fetch, execution and result store inside it, and its scheduling (from its arrival at the
node until a worker started it, queueing included) on the node's "scheduling N" threads. Open it
in https://ui.perfetto.dev or chrome://tracing.

Each node keeps its last events in a bounded ring (CUMULUS_TIMELINE_EVENTS, default 65536
events, ~8 MiB; the oldest go first and the trace says how many went); CUMULUS_TIMELINE=0 in a
node's environment turns it off there. Times are each machine's wall clock: keep the machines'
clocks in sync (NTP) to compare nodes.

Arguments:
  JOB                  only this job's tasks (a job id from 'cumulus jobs'); default: all jobs

Options:
  -o, --output FILE    where to write the trace (required; '-': stdout, the summary line then
                       goes to stderr)
  --address HOST:PORT  the head (default: CUMULUS_ADDRESS, or the cluster started here)
  --token-file FILE    the cluster token (default: the one of the cluster started here)
  --timeout SECONDS    how long to wait for each node's answer (default 10)
  -h, --help           show this help

A node that does not answer is named on one line; the others' events are still written.
)";

struct Answer {
  Status status;
  NodeTimeline timeline;
};

// Asks the node at `address` for its ring (of `job`, or every job's if nil).
Answer AskNode(const std::string& address, const std::string& token, const JobId& job,
               Duration timeout) {
  Answer a;
  auto hp = ParseHostPort(address);
  if (!hp.ok()) {
    a.status = hp.status();
    return a;
  }
  TimePoint deadline = SystemClock::Get().Now() + timeout;
  auto run = [&]() -> Status {
    CUMULUS_ASSIGN_OR_RETURN(auto node_conn, CallerConnection::Open(*hp, token, deadline));
    capnp::MallocMessageBuilder request;
    auto r = request.initRoot<proto::CoreMessage>().initTimelineRequest();
    if (!job.IsNil()) r.setJobId(DataOf(job));
    CUMULUS_RETURN_IF_ERROR(node_conn.Send(request, deadline));
    CUMULUS_ASSIGN_OR_RETURN(auto words, node_conn.Next(deadline));
    capnp::FlatArrayMessageReader reader(words, CoreReaderOptions(words.size() * 8));
    auto msg = reader.getRoot<proto::CoreMessage>();
    if (!msg.isTimelineEvents()) {
      return Status::Internal("it answered with another message (an older version of Cumulus?)");
    }
    auto t = msg.getTimelineEvents();
    a.timeline.node = IdFrom<NodeId>(t.getNodeId());
    a.timeline.hostname = t.getHostname();
    a.timeline.dropped = t.getDropped();
    a.timeline.capacity = t.getCapacity();
    TimelineRecord rec;
    for (auto e : t.getEvents()) {
      if (FromProto(e, &rec)) a.timeline.events.push_back(rec);
    }
    return Status();
  };
  try {
    a.status = run();
  } catch (const kj::Exception& e) {
    a.status =
        Status::Internal(std::string("its answer is malformed: ") + e.getDescription().cStr());
  }
  if (!a.status.ok() && a.status.code() == StatusCode::kUnavailable) {
    a.status = Status::Unavailable(a.status.message() +
                                   " (a node refuses a wrong token: check --token-file)");
  }
  return a;
}

// `-o FILE` as `--output FILE` for the flag parser.
std::vector<std::string> LongFlags(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& a : args) out.push_back(a == "-o" ? "--output" : a);
  return out;
}

Status WriteFileAtomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return Status::Unavailable("cannot write " + tmp + " (does its directory exist?)");
    f << text;
    if (!f.flush()) {
      f.close();
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);  // a partial file (a full disk) is not left behind
      return Status::Unavailable("cannot write " + tmp + " (is the disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);  // nothing is left behind
    return Status::Unavailable("cannot write " + path + ": " + ec.message());
  }
  return Status();
}

}  // namespace

int TimelineCommand(const std::vector<std::string>& given) {
  const char* help = "cumulus timeline --help";
  for (const std::string& a : given) {
    if (a == "-h" || a == "--help") {
      std::fputs(kTimelineHelp, stdout);
      return 0;
    }
  }
  std::vector<std::string> args = LongFlags(given);
  JobId job;
  if (!args.empty() && args[0].rfind("-", 0) != 0) {
    auto parsed = JobId::FromHex(args[0]);
    if (!parsed.ok()) {
      return UsageError("'" + args[0] + "' is not a job id (see 'cumulus jobs')", help);
    }
    job = *parsed;
    args.erase(args.begin());
  }
  Flags flags({"output", "address", "token-file", "timeout"}, {});
  if (Status st = flags.Parse(args); !st.ok()) return UsageError(st.message(), help);
  if (!flags.Has("output") || flags.Get("output").empty()) {
    return UsageError("timeline needs -o FILE (where to write the trace)", help);
  }
  const std::string out = flags.Get("output");
  const bool to_stdout = out == "-";
  if (std::error_code ec; !to_stdout && std::filesystem::is_directory(out, ec)) {
    return UsageError("-o " + out + " is a directory: give a file name, e.g. " +
                          (std::filesystem::path(out) / "trace.json").string(),
                      help);
  }
  Duration timeout = std::chrono::seconds(10);
  if (flags.Has("timeout")) {
    auto s = ParseReal("--timeout", flags.Get("timeout"), {0.1, 3600, "seconds"});
    if (!s.ok()) return UsageError(s.status().message(), help);
    timeout = std::chrono::milliseconds(static_cast<int64_t>(*s * 1000));
  }
  auto token = ResolveToken(flags.Get("token-file"));
  if (!token.ok()) return Fail(token.status());
  auto head = ConnectHead(flags);
  if (!head.ok()) return Fail(head.status());
  if (!job.IsNil()) {
    auto rec = (*head)->KvGet(kJobsNamespace, job.Hex());
    if (!rec.ok()) {
      return Fail(
          rec.status().code() == StatusCode::kNotFound
              ? Status::NotFound("no job " + job.Hex() + " in this cluster (see 'cumulus jobs')")
              : rec.status());
    }
  }
  auto view = (*head)->GetClusterStatus();
  if (!view.ok()) return Fail(view.status());
  std::vector<const NodeRecord*> alive;
  for (const NodeRecord& n : view->nodes) {
    if (n.state == NodeState::kAlive && !n.core_address.empty()) alive.push_back(&n);
  }
  // Every node at once: a slow one costs the timeout once, not once per node.
  std::vector<Answer> answers(alive.size());
  std::vector<std::thread> askers;
  for (size_t i = 0; i < alive.size(); ++i) {
    askers.emplace_back(
        [&, i] { answers[i] = AskNode(alive[i]->core_address, *token, job, timeout); });
  }
  for (auto& t : askers) t.join();
  std::vector<NodeTimeline> timelines;
  for (size_t i = 0; i < alive.size(); ++i) {
    const std::string name = alive[i]->id.Hex();
    if (!answers[i].status.ok()) {
      std::fprintf(stderr, "cumulus: node %s at %s did not answer (%s); its events are left out\n",
                   name.c_str(), alive[i]->core_address.c_str(),
                   answers[i].status.message().c_str());
      continue;
    }
    NodeTimeline& t = answers[i].timeline;
    if (t.capacity == 0) {
      std::fprintf(stderr, "cumulus: node %s keeps no timeline (started with CUMULUS_TIMELINE=0)\n",
                   name.c_str());
    } else if (t.dropped > 0) {
      std::fprintf(stderr,
                   "cumulus: node %s dropped its %llu oldest events (its ring holds %llu; raise "
                   "CUMULUS_TIMELINE_EVENTS to keep more)\n",
                   name.c_str(), static_cast<unsigned long long>(t.dropped),
                   static_cast<unsigned long long>(t.capacity));
    }
    timelines.push_back(std::move(t));
  }
  ChromeTraceSummary summary;
  std::string trace = ChromeTrace(timelines, &summary);
  if (to_stdout) {
    bool written = std::fwrite(trace.data(), 1, trace.size(), stdout) == trace.size();
    if (std::fflush(stdout) != 0 || !written) {
      return Fail(Status::Unavailable(std::string("cannot write the trace to stdout: ") +
                                      std::strerror(errno)));
    }
  } else if (Status st = WriteFileAtomically(out, trace); !st.ok()) {
    return Fail(st);
  }
  std::fprintf(to_stdout ? stderr : stdout,
               "Wrote %zu run(s) and %zu scheduling span(s) from %zu of %zu node(s)%s to %s "
               "(open it in https://ui.perfetto.dev).\n",
               summary.runs, summary.scheduled, timelines.size(), alive.size(),
               job.IsNil() ? "" : (" for job " + job.Hex()).c_str(),
               to_stdout ? "stdout" : out.c_str());
  return 0;
}

}  // namespace cumulus::cli
