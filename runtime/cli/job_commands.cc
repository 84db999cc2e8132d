// cumulus submit | jobs | logs | cancel (`jobs` is `list jobs`, in list_state_command.cc).
//
// A submitted job is a record in the head's control store (kSubmissionsNamespace) plus its files
// (kPackagesNamespace). The CLI picks a node that can hold the driver and asks that node's job
// supervisor (runtime/node/job_supervisor.h) to run it, through the head; it never connects to a
// node. Logs are read back from the head (kJobLogsNamespace).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/base/numeric.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/head_connection.h"
#include "runtime/cli/interrupt.h"
#include "runtime/cli/job_logs.h"
#include "runtime/core/messages.h"
#include "runtime/head/control_client.h"

namespace cumulus::cli {

namespace {

constexpr const char* kSubmitHelp = R"(Usage:
  cumulus submit [--address A] [--token-file F] [--name N] [--resources CPU=1]
                 [--working-dir DIR] [--wait] -- PROGRAM [ARGS...]

Runs PROGRAM (a Cumulus driver: it calls cumulus::Init) on a node of the cluster. PROGRAM and,
with --working-dir, every file under DIR are shipped through the head (at most 256 MiB); the
driver starts in a directory holding them (PROGRAM may be a path inside DIR). Its output, and
that of its workers on every node, is kept per job: read it with 'cumulus logs JOB'.

  --name N          a name to recognise the job by in 'cumulus jobs'
  --resources LIST  the driver runs on a node that has these (default: any alive node); they
                    choose the node and are not held from tasks
  --working-dir DIR files the driver needs, shipped with it
  --wait            follow the job's output until it ends; exit 0 only if it succeeded
Prints the job id. Exit status: 0 submitted (or succeeded, with --wait), 1 failed, 2 bad usage.
)";

constexpr const char* kJobsHelp = R"(Usage:
  cumulus jobs [--address A] [--token-file F] [--filter KEY=VALUE]... [--limit N] [--after JOB]
               [--json]
  cumulus logs JOB [--address A] [--token-file F] [--follow]
  cumulus logs JOB --trial [EXPERIMENT/]TRIAL [--address A] [--token-file F] [--follow]
  cumulus cancel JOB [--address A] [--token-file F] [--grace SECONDS]

jobs    Lists jobs, newest first: those run by 'cumulus submit' (PENDING, RUNNING, SUCCEEDED,
        FAILED, STOPPED) and programs that attached a driver themselves (RUNNING, FINISHED).
        --filter keeps rows whose field equals VALUE (fields: job, name, state, node);
        --limit shows at most N (default 100), after every record is filtered; --after JOB
        continues after that job (the last line says which, when more matched).
logs    Prints the output of the job's driver and of its workers, in the order it was written.
        --follow keeps printing until the job ends (Ctrl-C stops following). --trial prints
        only that tuning trial's stdout and stderr (kept apart from every other trial's; see
        'cumulus trials'), with --follow as it comes. A trial that printed nothing is no
        error (stderr says so); a trial or experiment the job did not run is.
cancel  Stops a submitted job: its driver gets SIGTERM, then SIGKILL if it has not ended after
        --grace seconds (default 5, at most 3600); everything it started (tasks, actors,
        objects) goes with it. Prints which signal ended it.
)";

// ---- submit ---------------------------------------------------------------------------------

// What Ctrl-C (or SIGTERM) on `submit --wait` says: the job goes on without us.
void SayWhatInterruptingLeft(const JobId& job) {
  std::string id = job.Hex();
  std::fprintf(stderr,
               "\ncumulus: stopped following job %s; it is still running ('cumulus cancel %s' "
               "stops it, 'cumulus logs %s --follow' follows it again)\n",
               id.c_str(), id.c_str(), id.c_str());
}

Status AddFile(const std::filesystem::path& file, const std::string& as, JobPackage* package,
               uint64_t* bytes) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + file.string());
  std::ostringstream data;
  data << in.rdbuf();
  PackageFile f;
  f.path = as;
  struct stat st {};
  f.mode = stat(file.c_str(), &st) == 0 ? (st.st_mode & 0755) : 0644;
  f.bytes = data.str();
  *bytes += f.bytes.size();
  if (*bytes > kMaxJobFilesBytes) {
    return Status::ResourceExhausted(
        "the job's files are over 256 MiB; ship large data as "
        "objects (cumulus::Put) or put it where the nodes can read");
  }
  package->files.push_back(std::move(f));
  return Status();
}

// Alive nodes that have `demand` in total, the most free first.
std::vector<const NodeRecord*> Candidates(const ClusterView& view, const ResourceSet& demand) {
  std::vector<const NodeRecord*> out;
  for (auto& n : view.nodes) {
    if (n.state == NodeState::kAlive && n.total.Contains(demand)) out.push_back(&n);
  }
  std::stable_sort(out.begin(), out.end(), [&](const NodeRecord* a, const NodeRecord* b) {
    bool fa = a->available.Contains(demand), fb = b->available.Contains(demand);
    if (fa != fb) return fa;
    return a->available.GetUnits("CPU") > b->available.GetUnits("CPU");
  });
  return out;
}

Status Ring(ControlClient& head, const std::string& node, const JobId& job,
            const std::string& what) {
  CUMULUS_RETURN_IF_ERROR(head.KvPut(kJobQueueNamespace, node + "/" + job.Hex(), what).status());
  return head.KvPut(kJobQueueNamespace, node + "/bell", "1").status();
}

Result<SubmissionRecord> LoadSubmission(ControlClient& head, const JobId& job) {
  CUMULUS_ASSIGN_OR_RETURN(std::string raw, head.KvGet(kSubmissionsNamespace, job.Hex()));
  return DecodeRecord<SubmissionRecord>(raw);
}

// What `logs` printed so far. Entries are keyed by the time their node shipped them, by that
// node's clock: one that arrives late (or from a node whose clock is behind) sorts before the
// last one printed, so each pass reads again from a minute before it, skipping what it printed.
struct LogCursor {
  std::set<std::string> printed;
  int64_t newest_micros = 0;
};

// Prints the job's log entries not printed yet; returns how many.
Result<size_t> PrintLogs(ControlClient& head, const JobId& job, LogCursor* cursor) {
  std::string prefix = job.Hex() + "/";
  std::string after;
  if (cursor->newest_micros > 60000000) {
    char key[64];
    std::snprintf(key, sizeof(key), "%s%016lld", prefix.c_str(),
                  static_cast<long long>(cursor->newest_micros - 60000000));
    after = key;
  }
  size_t n = 0;
  while (true) {
    CUMULUS_ASSIGN_OR_RETURN(auto page, head.KvList(kJobLogsNamespace, prefix, after, 200));
    for (auto& [k, v] : page.entries) {
      after = k;
      if (!cursor->printed.insert(k).second) continue;
      std::fwrite(v.data(), 1, v.size(), stdout);
      // Keys are JOB/MICROS-NODE-SEQ; one whose time is not a number moves no cursor.
      std::string_view micros = std::string_view(k).substr(prefix.size());
      auto at = ParseInteger("a log entry's time", micros.substr(0, micros.find('-')),
                             {0, INT64_MAX, "microseconds"});
      if (at.ok()) cursor->newest_micros = std::max(cursor->newest_micros, *at);
      ++n;
    }
    std::fflush(stdout);
    if (!page.more || page.entries.empty()) return n;
  }
}

}  // namespace

Result<bool> JobOver(ControlClient& head, const JobId& job, std::string* state) {
  auto sub = LoadSubmission(head, job);
  if (sub.ok()) {
    *state = sub->state;
    if (IsTerminalJobState(sub->state)) return true;
    // A driver whose node died ends with it.
    CUMULUS_ASSIGN_OR_RETURN(ClusterView view, head.GetClusterStatus());
    for (auto& n : view.nodes) {
      if (n.id.Hex() == sub->node && n.state == NodeState::kDead) {
        *state = "FAILED";
        return true;
      }
    }
    return false;
  }
  if (sub.status().code() != StatusCode::kNotFound) return sub.status();
  auto end = head.KvGet(kJobEndsNamespace, job.Hex());
  if (end.ok()) {
    *state = "FINISHED";
    return true;
  }
  if (end.status().code() != StatusCode::kNotFound) return end.status();
  auto rec = head.KvGet(kJobsNamespace, job.Hex());
  if (!rec.ok()) {
    return rec.status().code() == StatusCode::kNotFound
               ? Status::NotFound("no job " + job.Hex() + " in this cluster (see 'cumulus jobs')")
               : rec.status();
  }
  *state = "RUNNING";
  return false;
}

namespace {

// Prints the job's output; with `follow`, until the job ends or Ctrl-C (kInterruptedExit).
int FollowLogs(ControlClient& head, const JobId& job, bool follow) {
  std::string state;
  LogCursor cursor;
  while (true) {
    if (follow && Interrupted()) return kInterruptedExit;
    auto over = JobOver(head, job, &state);  // before reading: what it wrote before ending shows
    if (!over.ok()) return Fail(over.status());
    auto n = PrintLogs(head, job, &cursor);
    if (!n.ok()) return Fail(n.status());
    if (!follow) return 0;
    if (*over) {
      // Its node ships output every half second: take what was still on its way.
      if (!SleepUnlessInterrupted(std::chrono::milliseconds(1200))) return kInterruptedExit;
      auto last = PrintLogs(head, job, &cursor);
      if (!last.ok()) return Fail(last.status());
      std::fprintf(stderr, "cumulus: job %s %s\n", job.Hex().c_str(), state.c_str());
      return state == "SUCCEEDED" || state == "FINISHED" ? 0 : 1;
    }
    if (!SleepUnlessInterrupted(std::chrono::milliseconds(250))) return kInterruptedExit;
  }
}

bool WantsHelp(const std::vector<std::string>& args) {
  for (auto& a : args) {
    if (a == "--") return false;
    if (a == "-h" || a == "--help") return true;
  }
  return false;
}

// Prints `help` if the arguments ask for it.
bool PrintedHelp(const std::vector<std::string>& args, const char* help) {
  bool wanted = WantsHelp(args);
  if (wanted) std::fputs(help, stdout);
  return wanted;
}

}  // namespace

int SubmitCommand(const std::vector<std::string>& args) {
  if (WantsHelp(args)) {
    std::fputs(kSubmitHelp, stdout);
    return 0;
  }
  auto dash = std::find(args.begin(), args.end(), "--");
  if (dash == args.end() || dash + 1 == args.end()) {
    return UsageError("submit needs the program after '--', e.g. cumulus submit -- ./train",
                      "cumulus submit --help");
  }
  std::vector<std::string> entrypoint(dash + 1, args.end());
  Flags flags({"address", "token-file", "name", "resources", "working-dir"}, {"wait"});
  Status st = flags.Parse(std::vector<std::string>(args.begin(), dash));
  if (!st.ok()) return UsageError(st.message(), "cumulus submit --help");
  ResourceSet demand;
  if (flags.Has("resources")) {
    auto r = ResourceSet::Parse(flags.Get("resources"));
    if (!r.ok()) return UsageError("--resources: " + r.status().message(), "cumulus submit --help");
    demand = *r;
  }

  // The files: the working dir, and the program if it is not in it.
  JobPackage package;
  uint64_t bytes = 0;
  std::string program = entrypoint[0];
  bool program_in_dir = false;
  if (flags.Has("working-dir")) {
    std::filesystem::path dir = flags.Get("working-dir");
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
      return UsageError("--working-dir " + dir.string() + " is not a directory",
                        "cumulus submit --help");
    }
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_regular_file()) continue;
      std::string rel = std::filesystem::relative(it->path(), dir).string();
      st = AddFile(it->path(), rel, &package, &bytes);
      if (!st.ok()) return Fail(st);
      if (std::filesystem::path(program).lexically_normal() ==
          std::filesystem::path(rel).lexically_normal()) {
        program_in_dir = true;
      }
    }
    if (ec) return Fail(Status::Unavailable("cannot read " + dir.string() + ": " + ec.message()));
  }
  if (!program_in_dir) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(program, ec) || access(program.c_str(), X_OK) != 0) {
      return UsageError(program +
                            " is not an executable file (give the program's path, or a "
                            "path inside --working-dir)",
                        "cumulus submit --help");
    }
    std::string base = std::filesystem::path(program).filename().string();
    st = AddFile(program, base, &package, &bytes);
    if (!st.ok()) return Fail(st);
    entrypoint[0] = "./" + base;
  } else if (program.find('/') == std::string::npos) {
    entrypoint[0] = "./" + program;
  }

  auto head = ConnectHead(flags);
  if (!head.ok()) return Fail(head.status());
  auto view = (*head)->GetClusterStatus();
  if (!view.ok()) return Fail(view.status());
  auto nodes = Candidates(*view, demand);
  if (nodes.empty()) {
    return Fail(Status::Infeasible(
        "no alive node has " + (demand.units().empty() ? std::string("room") : demand.ToString()) +
        " for the driver (see 'cumulus status')"));
  }
  const NodeRecord& node = *nodes.front();

  std::string packed = EncodeRecord(package);
  if (packed.size() > kMaxPackageBytes) {
    return Fail(Status::ResourceExhausted(
        "the job's files take " + std::to_string(packed.size() >> 20) + " MiB packed, more than " +
        std::to_string(kMaxPackageBytes >> 20) + " MiB (so many files?); ship fewer"));
  }
  SubmissionRecord record;
  record.name = flags.Get("name");
  record.entrypoint = entrypoint;
  record.resources = demand.ToString();
  record.node = node.id.Hex();
  record.state = "PENDING";
  record.submit_micros = NowMicros();
  record.package_bytes = packed.size();
  record.package_chunks =
      static_cast<uint32_t>((packed.size() + kPackageChunkBytes - 1) / kPackageChunkBytes);
  // Claim an id nobody has (submissions and attached drivers share the job id space).
  std::random_device rd;
  JobId job;
  for (int attempt = 0;; ++attempt) {
    job = JobId::FromInt((rd() & 0x7fffffffu) | 1u);
    auto existed = (*head)->KvPut(kSubmissionsNamespace, job.Hex(), EncodeRecord(record), false);
    if (!existed.ok()) return Fail(existed.status());
    auto taken = (*head)->KvGet(kJobsNamespace, job.Hex());
    if (!*existed && !taken.ok()) break;
    if (!*existed) (void)(*head)->KvDelete(kSubmissionsNamespace, job.Hex());
    if (attempt > 8) return Fail(Status::Internal("could not find a free job id"));
  }
  for (uint32_t i = 0; i < record.package_chunks; ++i) {
    std::string chunk = packed.substr(i * kPackageChunkBytes, kPackageChunkBytes);
    auto put = (*head)->KvPut(kPackagesNamespace, job.Hex() + "/" + std::to_string(i), chunk);
    if (!put.ok()) return Fail(put.status());
  }
  st = Ring(**head, node.id.Hex(), job, "run");
  if (!st.ok()) return Fail(st);
  std::printf("Submitted job %s%s to node %s (%s).\n", job.Hex().c_str(),
              record.name.empty() ? "" : (" (" + record.name + ")").c_str(),
              node.id.Hex().substr(0, 12).c_str(), node.address.c_str());
  std::fflush(stdout);
  if (!flags.Has("wait")) {
    std::printf("Its output:  cumulus logs %s --follow\nTo stop it:  cumulus cancel %s\n",
                job.Hex().c_str(), job.Hex().c_str());
    return 0;
  }
  InterruptScope interrupts(/*terminate_too=*/true);
  // Its node should take it at once; a node that does not is named.
  for (int i = 0; i < 120; ++i) {
    if (Interrupted()) {
      SayWhatInterruptingLeft(job);
      return kInterruptedExit;
    }
    auto r = LoadSubmission(**head, job);
    if (!r.ok()) return Fail(r.status());
    if (r->state != "PENDING") break;
    if (i == 119) {
      return Fail(Status::Unavailable("node " + node.id.Hex() +
                                      " did not start the job within 30 s (is it alive? see "
                                      "'cumulus status'); it stays queued there"));
    }
    (void)SleepUnlessInterrupted(std::chrono::milliseconds(250));
  }
  int rc = FollowLogs(**head, job, /*follow=*/true);
  if (rc == kInterruptedExit) {
    SayWhatInterruptingLeft(job);
    return rc;
  }
  auto r = LoadSubmission(**head, job);
  if (rc != 0 && r.ok() && !r->message.empty()) {
    std::fprintf(stderr, "cumulus: %s\n", r->message.c_str());
  }
  return rc;
}

int JobsCommand(const std::vector<std::string>& args) {
  if (PrintedHelp(args, kJobsHelp)) return 0;
  return ListStateCommand("jobs", args);
}

int LogsCommand(const std::vector<std::string>& args) {
  if (PrintedHelp(args, kJobsHelp)) return 0;
  Flags flags({"address", "token-file", "trial"}, {"follow"});
  std::vector<std::string> positional;
  Status st = flags.Parse(args, &positional);
  if (!st.ok()) return UsageError(st.message(), "cumulus logs --help");
  if (positional.size() != 1) {
    return UsageError(positional.empty() ? "logs needs a job id (see 'cumulus jobs')"
                                         : "logs takes one job id, got '" + positional[1] + "' too",
                      "cumulus logs --help");
  }
  auto job = JobId::FromHex(positional[0]);
  if (!job.ok())
    return UsageError("'" + positional[0] + "' is not a job id", "cumulus logs --help");
  auto head = ConnectHead(flags);
  if (!head.ok()) return Fail(head.status());
  if (flags.Has("trial")) return TrialLogs(**head, *job, flags.Get("trial"), flags.Has("follow"));
  return FollowLogs(**head, *job, flags.Has("follow"));
}

int CancelCommand(const std::vector<std::string>& args) {
  if (PrintedHelp(args, kJobsHelp)) return 0;
  if (args.empty() || args[0].rfind("--", 0) == 0) {
    return UsageError("cancel needs a job id (see 'cumulus jobs')", "cumulus cancel --help");
  }
  auto job = JobId::FromHex(args[0]);
  if (!job.ok()) return UsageError("'" + args[0] + "' is not a job id", "cumulus cancel --help");
  Flags flags({"address", "token-file", "grace"}, {});
  Status st = flags.Parse(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!st.ok()) return UsageError(st.message(), "cumulus cancel --help");
  int64_t grace_ms = 5000;
  if (flags.Has("grace")) {
    auto grace_s = ParseReal("--grace", flags.Get("grace"), {0, 3600, "seconds"});
    if (!grace_s.ok()) return UsageError(grace_s.status().message(), "cumulus cancel --help");
    auto ms = SecondsToMilliseconds("--grace", *grace_s);
    if (!ms.ok()) return UsageError(ms.status().message(), "cumulus cancel --help");
    grace_ms = *ms;
  }
  auto head = ConnectHead(flags);
  if (!head.ok()) return Fail(head.status());
  auto record = LoadSubmission(**head, *job);
  if (!record.ok()) {
    if (record.status().code() == StatusCode::kNotFound &&
        (*head)->KvGet(kJobsNamespace, job->Hex()).ok()) {
      return Fail(Status::InvalidArgument(
          "job " + job->Hex() +
          " was not started by 'cumulus submit': stop its driver process instead"));
    }
    return Fail(record.status().code() == StatusCode::kNotFound
                    ? Status::NotFound("no job " + job->Hex() + " (see 'cumulus jobs')")
                    : record.status());
  }
  if (IsTerminalJobState(record->state)) {
    std::printf("Job %s already ended: %s.\n", job->Hex().c_str(), record->state.c_str());
    return 0;
  }
  st = Ring(**head, record->node, *job, "stop:" + std::to_string(grace_ms));
  if (!st.ok()) return Fail(st);
  // It ends within the grace (and the node's next pass); its node records how.
  int64_t wait_ms = grace_ms + 10'000;
  for (int64_t waited = 0; waited <= wait_ms; waited += 250) {
    std::string state;
    auto over = JobOver(**head, *job, &state);
    if (!over.ok()) return Fail(over.status());
    if (*over) {
      auto ended = LoadSubmission(**head, *job);
      std::string how = ended.ok() && !ended->message.empty() ? ": " + ended->message : "";
      std::printf("Job %s %s%s.\n", job->Hex().c_str(), state.c_str(), how.c_str());
      return 0;
    }
    if (!SleepUnlessInterrupted(std::chrono::milliseconds(250))) {
      std::fprintf(stderr,
                   "cumulus: stopped waiting; job %s was asked to stop and ends within its "
                   "grace ('cumulus jobs' shows when)\n",
                   job->Hex().c_str());
      return kInterruptedExit;
    }
  }
  return Fail(Status::TimedOut("job " + job->Hex() + " did not stop within " +
                               std::to_string(wait_ms / 1000) + " s (node " + record->node +
                               " may be down; see 'cumulus status')"));
}

}  // namespace cumulus::cli
