// cumulus stop trial EXPERIMENT/TRIAL: asks a running experiment's tuner to stop one trial
// (runtime/tune/stop_requests.h), then waits until its journal says the trial ended.
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "runtime/base/numeric.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/head_connection.h"
#include "runtime/cli/interrupt.h"
#include "runtime/tune/experiment_state.h"
#include "runtime/tune/journal.h"
#include "runtime/tune/stop_requests.h"
#include "scheduler/tune/trial_scheduler.h"

namespace cumulus::cli {
namespace {

constexpr const char* kHelp = "cumulus stop --help";

// user@host of whoever runs this command, for the journal's reason.
std::string Who() {
  const char* user = std::getenv("USER");
  if (!user || !*user) {
    if (const passwd* pw = getpwuid(getuid())) user = pw->pw_name;
  }
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = 0;
  return std::string(user && *user ? user : "someone") + (host[0] ? "@" + std::string(host) : "");
}

// Whether `e` ends `trial`: its end, a report that stopped or finished it, the experiment's end.
bool Ends(const tune::JournalEntry& e, uint64_t trial) {
  using Kind = tune::JournalEntry::Kind;
  if (e.kind == Kind::kExperimentEnded) return true;
  if (e.kind == Kind::kTrialEnded) return e.trial == trial;
  if (e.kind == Kind::kChoose) {
    for (auto& [id, why] : e.stops)
      if (id == trial) return true;
  }
  return e.kind == Kind::kReport && e.trial == trial &&
         (e.action == static_cast<uint8_t>(tune::Action::kStop) ||
          e.action == tune::kActionFinished || e.action == tune::kActionBudgetStop);
}

}  // namespace

int StopTrialCommand(const std::vector<std::string>& args) {
  std::vector<std::string> positional, rest;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].rfind("-", 0) != 0 && rest.empty()) {
      positional.push_back(args[i]);
    } else {
      rest.push_back(args[i]);
    }
  }
  Flags flags({"address", "token-file", "timeout"}, {"no-wait", "help"});
  Status st = flags.Parse(rest);
  if (!st.ok()) return UsageError(st.message(), kHelp);
  if (flags.Has("help")) return StopCommand({"--help"});
  std::string experiment, trial_text;
  if (positional.size() == 1 && positional[0].find('/') != std::string::npos) {
    size_t slash = positional[0].find('/');
    experiment = positional[0].substr(0, slash);
    trial_text = positional[0].substr(slash + 1);
  } else if (positional.size() == 2) {
    experiment = positional[0];
    trial_text = positional[1];
  } else {
    std::string got;
    for (auto& p : positional) got += (got.empty() ? "" : " ") + p;
    return UsageError(
        positional.empty()
            ? "stop trial needs EXPERIMENT/TRIAL (e.g. asha/t0003)"
            : "stop trial takes EXPERIMENT/TRIAL (or EXPERIMENT TRIAL), got '" + got + "'",
        kHelp);
  }
  if (Status name = tune::CheckExperimentName(experiment); !name.ok())
    return UsageError(name.message(), kHelp);
  auto trial = tune::ParseTrialId(trial_text);
  if (!trial.ok()) return UsageError(trial.status().message(), kHelp);
  double timeout_s = 10;
  if (flags.Has("timeout")) {
    auto t = ParseReal("--timeout", flags.Get("timeout"), {0, 3600, "seconds"});
    if (!t.ok()) return UsageError(t.status().message(), kHelp);
    timeout_s = *t;
  }
  std::string name = experiment + "/" + tune::TrialName(*trial);

  auto head = ConnectHead(flags);
  if (!head.ok()) return Fail(head.status());
  auto journal = tune::Journal::Load(**head, experiment);
  if (!journal.ok()) return Fail(journal.status());
  tune::ExperimentState state(journal->spec);
  for (auto& e : journal->entries) {
    if (Status a = state.Apply(e); !a.ok()) return Fail(a);
  }
  auto it = state.trials().find(*trial);
  if (it == state.trials().end()) {
    std::fprintf(stderr, "cumulus: experiment %s has no trial %s (%s; see 'cumulus trials %s')\n",
                 experiment.c_str(), tune::TrialName(*trial).c_str(),
                 state.trials().empty()
                     ? "it has no trials yet"
                     : ("its trials: t0001 to " + tune::TrialName(state.next_trial() - 1)).c_str(),
                 experiment.c_str());
    return 1;
  }
  const tune::TrialStatus& t = it->second;
  if (t.state == tune::TrialState::kStoppedEarly || t.state == tune::TrialState::kFinished ||
      t.state == tune::TrialState::kFailed) {
    std::fprintf(stderr, "cumulus: trial %s has already ended: %s%s\n", name.c_str(),
                 tune::TrialStateName(t.state),
                 t.reason.empty() ? "" : (" (" + t.reason + ")").c_str());
    return 1;
  }
  if (state.ended()) {
    std::fprintf(stderr, "cumulus: experiment %s has ended (%s): nothing of it runs to stop\n",
                 experiment.c_str(), state.end_reason().c_str());
    return 1;
  }
  auto asked = std::chrono::steady_clock::now();
  st = tune::RequestStop(**head, experiment, *trial, Who());
  if (!st.ok()) return Fail(st);
  if (flags.Has("no-wait") || timeout_s <= 0) {
    std::printf(
        "Asked experiment %s's tuner to stop %s (%s); it acts within %lld ms while its driver "
        "runs, or when Tuner::Restore continues it.\n",
        experiment.c_str(), tune::TrialName(*trial).c_str(), tune::TrialStateName(t.state),
        static_cast<long long>(tune::kStopPollInterval.count()));
    return 0;
  }
  // The journal's next entries, as they are appended, until one ends the trial.
  InterruptScope interrupts(/*terminate_too=*/false);
  auto deadline = asked + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  uint64_t next = journal->entries.size() + 1;
  while (!Interrupted()) {
    auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::milliseconds(0)) break;
    auto step = std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(500));
    auto raw = (*head)->KvWait(tune::kJournalNamespace, tune::JournalEntryKey(experiment, next),
                               std::chrono::duration_cast<std::chrono::milliseconds>(step));
    if (!raw.ok()) {
      if (raw.status().code() == StatusCode::kTimedOut) continue;
      return Fail(raw.status());
    }
    ++next;
    auto e = tune::DecodeEntry(*raw);
    if (!e.ok()) return Fail(e.status());
    if (!Ends(*e, *trial)) continue;
    (void)state.Apply(*e);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
    const tune::TrialStatus& now = state.trials().at(*trial);
    if (e->kind == tune::JournalEntry::Kind::kTrialEnded &&
        e->reason.rfind(tune::kStoppedByUserReason, 0) == 0) {
      std::printf("Stopped %s in %.2f s (%s, %s).\n", name.c_str(), took,
                  tune::TrialStateName(now.state), e->reason.c_str());
      return 0;
    }
    // It ended by itself (or with the experiment) before the tuner saw the request.
    std::printf("%s ended before the tuner stopped it: %s%s\n", name.c_str(),
                tune::TrialStateName(now.state),
                now.reason.empty() ? "" : (" (" + now.reason + ")").c_str());
    return 0;
  }
  if (Interrupted()) {
    std::printf(
        "\nNot waiting any longer: the request stands, and the tuner stops %s when it "
        "next looks.\n",
        name.c_str());
    return kInterruptedExit;
  }
  std::fprintf(stderr,
               "cumulus: %s was not stopped within %.0f s: is the experiment's driver running? The "
               "request stands: its tuner stops the trial when it runs again (Tuner::Restore)\n",
               name.c_str(), timeout_s);
  return 1;
}

}  // namespace cumulus::cli
