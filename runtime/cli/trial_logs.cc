// cumulus logs JOB --trial [EXPERIMENT/]TRIAL: one tuning trial's stdout and stderr, which the
// trial's host ships to the head's control store apart from every other trial's
// (kTrialLogsNamespace: JOB/EXPERIMENT/TRIAL/MICROS-RANK-SEQ, runtime/tune/journal.h). When a
// trial has no output, the experiments' journals say whether the trial exists and which job ran
// it, so a silent trial is told apart from a wrong id.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/numeric.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/head_connection.h"
#include "runtime/cli/interrupt.h"
#include "runtime/cli/job_logs.h"
#include "runtime/tune/experiment_state.h"
#include "runtime/tune/journal.h"
#include "runtime/tune/stop_requests.h"

namespace cumulus::cli {

namespace {

// What `logs --trial` printed so far (as LogCursor, per experiment): a trial's entries are keyed
// JOB/EXPERIMENT/TRIAL/MICROS-RANK-SEQ (kTrialLogsNamespace, runtime/tune/journal.h).
struct TrialLogCursor {
  std::set<std::string> printed;
  std::map<std::string, int64_t> newest_micros;  // per experiment
  std::string printing;                          // the experiment whose output is being printed
};

// The experiments of `job` that have trial output: one KvList of one key per experiment, each
// skipping past the one before (experiment names are letters, digits, '-', '_', '.').
Status TrialLogExperiments(ControlClient& head, const JobId& job, std::set<std::string>* out) {
  const std::string prefix = job.Hex() + "/";
  std::string after;
  while (true) {
    CUMULUS_ASSIGN_OR_RETURN(auto page, head.KvList(tune::kTrialLogsNamespace, prefix, after, 1));
    if (page.entries.empty()) return Status();
    const std::string& k = page.entries[0].first;
    size_t slash = k.find('/', prefix.size());
    if (slash == std::string::npos) {
      after = k;
      continue;
    }
    out->insert(k.substr(prefix.size(), slash - prefix.size()));
    after = k.substr(0, slash + 1) + "\xff";
  }
}

// Prints the entries of trial `trial` of `job` not printed yet (of `experiment`, or of each
// experiment with a header naming it); returns how many. Each experiment is read from a minute
// before its newest entry printed (entries are keyed by their node's clock, and may come late).
Result<size_t> PrintTrialLogs(ControlClient& head, const JobId& job, const std::string& experiment,
                              const std::string& trial, TrialLogCursor* cursor,
                              std::set<std::string>* experiments) {
  if (experiment.empty()) {
    CUMULUS_RETURN_IF_ERROR(TrialLogExperiments(head, job, experiments));
  } else {
    experiments->insert(experiment);
  }
  size_t n = 0;
  for (const std::string& e : *experiments) {
    const std::string prefix = job.Hex() + "/" + e + "/" + trial + "/";
    std::string after;
    if (int64_t newest = cursor->newest_micros[e]; newest > 60000000) {
      char key[32];
      std::snprintf(key, sizeof(key), "%016lld", static_cast<long long>(newest - 60000000));
      after = prefix + key;
    }
    while (true) {
      CUMULUS_ASSIGN_OR_RETURN(auto page,
                               head.KvList(tune::kTrialLogsNamespace, prefix, after, 200));
      for (auto& [k, v] : page.entries) {
        after = k;
        if (!cursor->printed.insert(k).second) continue;
        // Without EXPERIMENT/ given, each experiment's part of the output is headed by its
        // name, so two experiments' trials of one id are never mixed.
        if (experiment.empty() && cursor->printing != e) {
          std::printf("==> %s/%s <==\n", e.c_str(), trial.c_str());
          cursor->printing = e;
        }
        std::fwrite(v.data(), 1, v.size(), stdout);
        ++n;
        std::string_view micros = std::string_view(k).substr(prefix.size());
        auto at = ParseInteger("a trial log entry's time", micros.substr(0, micros.find('-')),
                               {0, INT64_MAX, "microseconds"});
        if (at.ok()) cursor->newest_micros[e] = std::max(cursor->newest_micros[e], *at);
      }
      std::fflush(stdout);
      if (!page.more || page.entries.empty()) break;
    }
  }
  return n;
}

// Whether an experiment's journal `entries` has a run by `job`; `*runs`: the jobs that ran it.
bool RunBy(const std::vector<tune::JournalEntry>& entries, const JobId& job,
           std::set<std::string>* runs) {
  for (const auto& e : entries) {
    if (e.kind == tune::JournalEntry::Kind::kRun) runs->insert(e.job);
  }
  return runs->count(job.Hex()) > 0;
}

// For a trial with no output: "trial T of experiment E (STATE, N reports)" if an experiment that
// `job` ran (`experiment`, or any) has trial `trial`; otherwise an error naming what the job ran,
// so a wrong id or job is told apart from a trial that printed nothing. Without `experiment`, an
// experiment whose journal cannot be read is passed over (`cumulus trials` names it).
Result<std::string> FindTrial(ControlClient& head, const JobId& job, const std::string& experiment,
                              const std::string& trial) {
  std::vector<std::string> names;
  if (!experiment.empty()) {
    names.push_back(experiment);
  } else {
    CUMULUS_RETURN_IF_ERROR(
        ForEachKv(head, tune::kExperimentsNamespace, "",
                  [&](const std::string& k, const std::string&) { names.push_back(k); }));
  }
  std::vector<std::string> ran;  // the experiments `job` ran
  for (const std::string& name : names) {
    auto j = tune::Journal::Load(head, name);
    if (!j.ok() && experiment.empty()) continue;
    if (!j.ok()) return j.status();
    std::set<std::string> runs;
    if (!RunBy(j->entries, job, &runs)) {
      if (!experiment.empty()) {
        std::string by;
        for (const std::string& r : runs) by += (by.empty() ? "" : ", ") + r;
        return Status::NotFound("job " + job.Hex() + " did not run experiment " + name +
                                (by.empty() ? "" : " (job " + by + " did)"));
      }
      continue;
    }
    ran.push_back(name);
    tune::ExperimentState state(j->spec);
    for (auto& e : j->entries) CUMULUS_RETURN_IF_ERROR(state.Apply(e));
    for (const auto& row : state.ToTable().trials) {
      if (row.id != trial) continue;
      return "trial " + trial + " of experiment " + name + " (" + tune::TrialStateName(row.state) +
             ", " + std::to_string(row.history.size()) +
             (row.history.size() == 1 ? " report)" : " reports)");
    }
  }
  if (ran.empty()) {
    return Status::NotFound("job " + job.Hex() +
                            " ran no tuning experiment (see 'cumulus trials' for the experiments)");
  }
  std::string list;
  for (const std::string& name : ran) list += (list.empty() ? "" : ", ") + name;
  return Status::NotFound("job " + job.Hex() + " ran no trial " + trial + " (its experiments: " +
                          list + "; see 'cumulus trials " + ran.front() + "')");
}

}  // namespace

int TrialLogs(ControlClient& head, const JobId& job, const std::string& trial, bool follow) {
  std::string want_experiment, want_trial = trial;
  if (auto slash = trial.find('/'); slash != std::string::npos) {
    want_experiment = trial.substr(0, slash);
    want_trial = trial.substr(slash + 1);
  }
  auto id = tune::ParseTrialId(want_trial);
  if (want_trial.find('/') != std::string::npos || !id.ok()) {
    return UsageError("--trial needs a trial id such as t0003, t3 or 3 (or EXPERIMENT/t0003)",
                      "cumulus logs --help");
  }
  want_trial = tune::TrialName(*id);
  std::string state;  // the job must exist: "no output" would hide a wrong job id
  if (auto known = JobOver(head, job, &state); !known.ok()) return Fail(known.status());
  TrialLogCursor cursor;
  std::set<std::string> experiments;
  size_t chunks = 0;
  while (true) {
    if (follow && Interrupted()) return kInterruptedExit;
    Result<bool> over = false;
    if (follow) over = JobOver(head, job, &state);  // before reading, as FollowLogs
    if (!over.ok()) return Fail(over.status());
    auto n = PrintTrialLogs(head, job, want_experiment, want_trial, &cursor, &experiments);
    if (!n.ok()) return Fail(n.status());
    chunks += *n;
    if (!follow) break;
    if (*over) {
      // Trials ship their output every half second: take what was still on its way.
      if (!SleepUnlessInterrupted(std::chrono::milliseconds(1200))) return kInterruptedExit;
      n = PrintTrialLogs(head, job, want_experiment, want_trial, &cursor, &experiments);
      if (!n.ok()) return Fail(n.status());
      std::fprintf(stderr, "cumulus: job %s %s\n", job.Hex().c_str(), state.c_str());
      return state == "SUCCEEDED" || state == "FINISHED" ? 0 : 1;
    }
    if (!SleepUnlessInterrupted(std::chrono::milliseconds(250))) return kInterruptedExit;
  }
  if (chunks > 0) return 0;
  auto found = FindTrial(head, job, want_experiment, want_trial);
  if (!found.ok()) return Fail(found.status());
  std::fprintf(stderr, "cumulus: %s has printed nothing\n", found->c_str());
  return 0;
}

}  // namespace cumulus::cli
