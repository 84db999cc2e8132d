// The tuner with real processes (`cumulus start` head and nodes on loopback, tune_driver.cc): an
// ASHA experiment over a head and two nodes, the driver SIGKILLed and the experiment restored
// from its journal, a node SIGKILLed under a running trial, a function trainable,
// a trial stopped with `cumulus stop trial`, and bad input (docs/tune.md). Gang trials and
// trials waiting as pending demand: tune_gang_test.cc; the command line: tune_cli_test.cc.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/tune/experiment_state.h"
#include "runtime/tune/journal.h"
#include "runtime/tune/stop_requests.h"
#include "scheduler/tune/trial_scheduler.h"
#include "tune_fixture.h"

namespace cumulus {
namespace {

using tune::JournalEntry;

TEST_F(TuneTest, AshaExperimentOnAHeadAndTwoNodes) {
  auto head = StartHead({"--resources", "CPU=2"});
  std::string b, c;
  auto node_b = StartNode("b", {"--resources", "CPU=2"}, &b);
  auto node_c = StartNode("c", {"--resources", "CPU=2"}, &c);
  auto driver = Driver({"--scenario=run", "--name=asha", "--samples=12", "--iters=9"});
  std::string out = Finish(*driver);
  ASSERT_NE(out.find("RESULT trials=12 "), std::string::npos) << out;
  EXPECT_NE(out.find(" failed=0 "), std::string::npos) << out;
  auto trials = Trials(out);
  ASSERT_EQ(trials.size(), 12u) << out;
  size_t stopped = 0, finished = 0;
  std::set<std::string> nodes;
  for (auto& [id, line] : trials) {
    stopped += line.find("state=STOPPED") != std::string::npos;
    finished += line.find("state=FINISHED") != std::string::npos;
    if (line.find("state=FINISHED") != std::string::npos) {
      EXPECT_NE(line.find("iterations=9 "), std::string::npos) << line;
    }
    nodes.insert(Field(line, "node"));
  }
  // ASHA with rf 3 over 12 trials stops most of them at the rungs and lets a few finish.
  EXPECT_GT(stopped, 0u) << out;
  EXPECT_GT(finished, 0u) << out;
  EXPECT_EQ(stopped + finished, 12u) << out;
  EXPECT_GE(nodes.size(), 2u) << "every trial ran on one node:\n" << out;

  // The journal in the head says the same as the driver's result.
  auto j = Load("asha");
  ASSERT_TRUE(j.ok()) << j.status();
  tune::ExperimentState state(j->spec);
  for (auto& e : j->entries) ASSERT_TRUE(state.Apply(e).ok());
  EXPECT_TRUE(state.ended());
  for (auto& [id, t] : state.trials()) {
    const std::string& line = trials[tune::TrialName(id)];
    EXPECT_NE(line.find(std::string("state=") + tune::TrialStateName(t.state)), std::string::npos)
        << line;
    EXPECT_NE(line.find("iterations=" + std::to_string(t.history.size()) + " "), std::string::npos)
        << line;
  }
}

}  // namespace

// The fixture (tune_fixture.h) is shared with tune_gang_test.cc: its member is defined outside
// this file's anonymous namespace.
void TuneTest::KillAndRestore(const std::string& name, std::vector<std::string> flags,
                              std::string* result, tune::Journal::Loaded* journal) {
  auto head = StartHead({"--resources", "CPU=3"});
  std::vector<std::string> args = {"--scenario=run", "--name=" + name, "--step-ms=150",
                                   "--concurrent=3"};
  args.insert(args.end(), flags.begin(), flags.end());
  auto driver = Driver(args);
  ASSERT_TRUE(WaitForReports(name, 8, 120s)) << driver->ReadAll(1s);
  driver->Kill(SIGKILL);
  (void)driver->Wait(10s);
  auto before = Load(name);
  ASSERT_TRUE(before.ok()) << before.status();
  tune::ExperimentState at_kill(before->spec);
  for (auto& e : before->entries) ASSERT_TRUE(at_kill.Apply(e).ok());
  ASSERT_FALSE(at_kill.ended());

  // The same program and space (options come from the journal).
  auto restored = Driver({"--scenario=restore", "--name=" + name, "--step-ms=150"});
  std::string out = Finish(*restored);
  ASSERT_NE(out.find("RESULT trials=" + std::to_string(at_kill.spec().num_samples) + " "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(" failed=0 "), std::string::npos) << out;
  if (result != nullptr) *result = out;

  auto after = Load(name);
  ASSERT_TRUE(after.ok()) << after.status();
  if (journal != nullptr) *journal = *after;
  // What was journaled before the kill is untouched; the rest was appended.
  ASSERT_GE(after->entries.size(), before->entries.size());
  for (size_t i = 0; i < before->entries.size(); ++i) {
    EXPECT_EQ(tune::EncodeEntry(after->entries[i]), tune::EncodeEntry(before->entries[i]))
        << "entry " << i + 1 << " changed";
  }
  std::map<uint64_t, int64_t> last_iteration;
  std::set<uint64_t> added;
  for (size_t i = 0; i < after->entries.size(); ++i) {
    const JournalEntry& e = after->entries[i];
    if (e.kind == JournalEntry::Kind::kTrialAdded) {
      EXPECT_TRUE(added.insert(e.trial).second) << "trial " << e.trial << " added twice";
    }
    if (e.kind != JournalEntry::Kind::kReport) continue;
    // Every trial's reports go up one iteration at a time: nothing reported twice, no gap.
    EXPECT_EQ(e.iteration, last_iteration[e.trial] + 1) << "trial " << e.trial;
    last_iteration[e.trial] = e.iteration;
    if (i >= before->entries.size()) {
      auto& t = at_kill.trials();
      auto it = t.find(e.trial);
      if (it == t.end()) continue;
      tune::TrialState s = it->second.state;
      EXPECT_TRUE(s != tune::TrialState::kFinished && s != tune::TrialState::kStoppedEarly &&
                  s != tune::TrialState::kFailed)
          << "trial " << e.trial << " ended before the kill and ran again";
    }
  }
  tune::ExperimentState final_state(after->spec);
  for (auto& e : after->entries) ASSERT_TRUE(final_state.Apply(e).ok());
  EXPECT_TRUE(final_state.ended());
  for (auto& [id, t] : at_kill.trials()) {
    EXPECT_EQ(final_state.trials().at(id).config, t.config) << "trial " << id;
  }
}

namespace {

TEST_F(TuneTest, DriverKilledAndRestoredLosesAndRepeatsNothing) {
  KillAndRestore("crash", {"--samples=10", "--iters=8"});  // asha (the driver's default)
}

// The default scheduler pauses, resumes and stops paused trials from ChooseTrialToRun: its
// restore replays those choices too. Its budget is the user's (budget_fraction 0.15 of 20 trials
// of 10 iterations: 30 iterations, where the default 0.24 would spend up to 48), journaled and
// restored with the experiment.
TEST_F(TuneTest, DriverKilledAndRestoredWithTheBudgetScheduler) {
  std::string out;
  tune::Journal::Loaded journal;
  KillAndRestore("crash-budget",
                 {"--samples=20", "--iters=10", "--scheduler=budget", "--budget-fraction=0.15"},
                 &out, &journal);
  if (HasFatalFailure()) return;
  // The budget binds: trials were stopped early, and none was left paused.
  EXPECT_EQ(out.find(" stopped=0 "), std::string::npos) << out;
  EXPECT_NE(out.find(" paused=0"), std::string::npos) << out;
  EXPECT_EQ(journal.spec.budget_fraction, 0.15);
  // The scheduler, before the kill and after the restore, spent the user's budget, not the default.
  int64_t iterations = 0;
  for (auto& e : journal.entries) iterations += e.kind == JournalEntry::Kind::kReport;
  EXPECT_LE(iterations, 30) << out;
  EXPECT_GE(iterations, 20) << out;  // every trial ran its prefix (1 iteration)
}

// The time budget is the experiment's, not a run's: a driver SIGKILLed after spending part of it,
// the restored run has only what is left (it does not start a fresh budget); an experiment that
// ended on its budget, restored again, starts no trial.
TEST_F(TuneTest, TimeBudgetCarriesAcrossRestore) {
  const int64_t budget_s = 8;
  auto head = StartHead({"--resources", "CPU=3"});
  // Trials far longer than the budget, and more samples than run at once: the searcher is not
  // done when the budget ends the experiment.
  auto driver =
      Driver({"--scenario=run", "--name=tbudget", "--samples=6", "--iters=1000", "--step-ms=150",
              "--concurrent=3", "--scheduler=fifo", "--time-budget=" + std::to_string(budget_s)});
  // The first run's time, as the journal says (its kRun entry to its last entry).
  auto run_seconds = [](const std::vector<JournalEntry>& entries, size_t from, size_t to) {
    return (entries[to - 1].micros - entries[from].micros) / 1e6;
  };
  double first_run = 0;
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto j = Load("tbudget");
        if (!j.ok() || j->entries.empty()) return false;
        first_run = run_seconds(j->entries, 0, j->entries.size());
        if (first_run >= budget_s / 2.0) return true;
        std::this_thread::sleep_for(100ms);  // polling the head's state, not synchronising
        return false;
      },
      20000ms))
      << driver->ReadAll(1s);
  driver->Kill(SIGKILL);
  (void)driver->Wait(10s);
  auto before = Load("tbudget");
  ASSERT_TRUE(before.ok()) << before.status();
  first_run = run_seconds(before->entries, 0, before->entries.size());
  ASSERT_LT(first_run, budget_s) << "the first run ended on its budget before it was killed";

  auto restored = Driver({"--scenario=restore", "--name=tbudget", "--step-ms=150"});
  std::string out = Finish(*restored, 30s);
  EXPECT_NE(out.find(" failed=0 "), std::string::npos) << out;
  auto after = Load("tbudget");
  ASSERT_TRUE(after.ok()) << after.status();
  size_t begun = before->entries.size();  // the restored run's kRun entry
  ASSERT_EQ(after->entries[begun].kind, JournalEntry::Kind::kRun);
  // When the restored run saw the budget spent: its first trial stopped for it.
  double second_run = -1;
  for (size_t i = begun; i < after->entries.size() && second_run < 0; ++i) {
    const JournalEntry& e = after->entries[i];
    if (e.kind == JournalEntry::Kind::kReport && e.action == tune::kActionBudgetStop)
      second_run = run_seconds(after->entries, begun, i + 1);
  }
  ASSERT_GE(second_run, 0) << "no trial was stopped by the time budget:\n" << out;
  // What was left of the budget, and a margin for restarting the trials (a fresh budget would
  // be all of it).
  double left = budget_s - first_run;
  EXPECT_LT(second_run, left + 2.0)
      << "the restored run spent " << second_run << " s of a budget that had " << left
      << " s left (the first run spent " << first_run << " s)";
  ASSERT_EQ(after->entries.back().kind, JournalEntry::Kind::kExperimentEnded);
  EXPECT_EQ(after->entries.back().reason, tune::kTimeBudgetSpentReason);

  // Ended on its budget: restored again, it adds, starts and runs nothing.
  auto again = Driver({"--scenario=restore", "--name=tbudget", "--step-ms=150"});
  out = Finish(*again, 30s);
  auto last = Load("tbudget");
  ASSERT_TRUE(last.ok()) << last.status();
  for (size_t i = after->entries.size(); i < last->entries.size(); ++i) {
    const JournalEntry& e = last->entries[i];
    bool ran = e.kind == JournalEntry::Kind::kTrialAdded ||
               e.kind == JournalEntry::Kind::kTrialStarted || e.kind == JournalEntry::Kind::kReport;
    ASSERT_FALSE(ran) << "entry " << i + 1 << " (kind " << int(e.kind) << ", trial " << e.trial
                      << ") after restoring an experiment whose budget was spent:\n"
                      << out;
  }
  EXPECT_EQ(last->entries.back().reason, tune::kTimeBudgetSpentReason) << out;
}

// `cumulus stop trial`: one trial of a running experiment stopped from the command line (within
// a bounded time, the others going on), the journal and `cumulus trials` saying so, bad input
// one line each; then a stop asked while the driver is dead, applied by Tuner::Restore, which
// runs neither stopped trial again.
TEST_F(TuneTest, StopTrialFromTheCommandLine) {
  auto head = StartHead({"--resources", "CPU=3"});
  auto driver = Driver({"--scenario=run", "--name=stopper", "--samples=3", "--iters=80",
                        "--step-ms=100", "--concurrent=3", "--scheduler=fifo"});
  std::vector<std::string> conn = {"--address", address_, "--token-file", token_file_};
  auto cli = [&](std::vector<std::string> args, std::string* text) {
    args.insert(args.end(), conn.begin(), conn.end());
    return Cli(args, text);
  };
  auto reports_of = [](const tune::Journal::Loaded& j, uint64_t trial, size_t from = 0) {
    size_t n = 0;
    for (size_t i = from; i < j.entries.size(); ++i)
      n += j.entries[i].kind == JournalEntry::Kind::kReport && j.entries[i].trial == trial;
    return n;
  };
  ASSERT_TRUE(WaitForReports("stopper", 6, 60s)) << driver->ReadAll(1s);
  auto j = Load("stopper");
  ASSERT_TRUE(j.ok()) << j.status();
  int victim_pid = 0;  // t0001's worker (the trainable reports its pid)
  for (auto& e : j->entries) {
    auto pid = e.metrics.find("pid");
    if (e.kind == JournalEntry::Kind::kReport && e.trial == 1 && pid != e.metrics.end())
      victim_pid = int(pid->second);
  }
  ASSERT_GT(victim_pid, 0);

  std::string text;
  auto asked = std::chrono::steady_clock::now();
  ASSERT_EQ(cli({"stop", "trial", "stopper/t0001"}, &text), 0) << text;
  auto returned = std::chrono::steady_clock::now();
  EXPECT_NE(text.find("Stopped stopper/t0001 in "), std::string::npos) << text;
  // Its worker process goes with it: the actor was killed, not left to train unseen.
  auto gone = [](int pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(in, line);
    size_t paren = line.rfind(')');
    return line.empty() ||
           (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z');
  };
  auto deadline = returned + 10s;
  while (!gone(victim_pid) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);  // a process's exit has no descriptor to wait on
  auto exited = std::chrono::steady_clock::now();
  EXPECT_TRUE(gone(victim_pid)) << "t0001's worker (pid " << victim_pid << ") still runs";
  std::printf(
      "LATENCY stop trial: command %.0f ms (asked to journaled: %s), worker exit %.0f ms "
      "after the command returned\n",
      std::chrono::duration<double, std::milli>(returned - asked).count(),
      text.substr(0, text.find('\n')).c_str(),
      std::chrono::duration<double, std::milli>(exited - returned).count());

  j = Load("stopper");
  ASSERT_TRUE(j.ok()) << j.status();
  size_t ended_at = 0;
  for (size_t i = 0; i < j->entries.size(); ++i) {
    const JournalEntry& e = j->entries[i];
    if (e.kind == JournalEntry::Kind::kTrialEnded && e.trial == 1) ended_at = i;
  }
  ASSERT_GT(ended_at, 0u) << "no end of t0001 in the journal";
  EXPECT_EQ(j->entries[ended_at].state, uint8_t(tune::TrialState::kStoppedEarly));
  EXPECT_EQ(j->entries[ended_at].reason.rfind(tune::kStoppedByUserReason, 0), 0u)
      << j->entries[ended_at].reason;
  EXPECT_EQ(reports_of(*j, 1, ended_at), 0u) << "t0001 reported after it was stopped";

  ASSERT_EQ(cli({"trials", "stopper", "--json"}, &text), 0) << text;
  EXPECT_NE(text.find("\"STOPPED\""), std::string::npos) << text;
  EXPECT_NE(text.find("stopped by user"), std::string::npos) << text;

  // Bad input: one line each; usage errors exit 2, and none of them stops the cluster.
  EXPECT_EQ(cli({"stop", "trial", "stopper", "t1"}, &text), 1) << text;  // EXP TRIAL, ended
  EXPECT_NE(text.find("trial stopper/t0001 has already ended: STOPPED (stopped by user"),
            std::string::npos)
      << text;
  EXPECT_EQ(cli({"stop", "trial", "nope/t0001"}, &text), 1) << text;
  EXPECT_NE(text.find("no experiment named 'nope'"), std::string::npos) << text;
  EXPECT_EQ(cli({"stop", "trial", "stopper/t0099"}, &text), 1) << text;
  EXPECT_NE(text.find("experiment stopper has no trial t0099"), std::string::npos) << text;
  const std::vector<std::vector<std::string>> usage_errors = {
      {"stop", "trial"},
      {"stop", "trial", "stopper"},
      {"stop", "trial", "stopper/x7"},
      {"stop", "trial", "bad!name/t0001"},
      {"stop", "trial", "stopper/t0002", "--timeout", "soon"},
      {"stop", "trials"},
      {"stop", "stopper/t0002"}};
  for (const std::vector<std::string>& bad : usage_errors) {
    std::string line;
    for (auto& w : bad) line += w + " ";
    EXPECT_EQ(cli(bad, &text), 2) << line << ": " << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << line << ": " << text;
  }
  ASSERT_EQ(cli({"stop", "--help"}, &text), 0);
  EXPECT_NE(text.find("cumulus stop trial EXPERIMENT/TRIAL"), std::string::npos) << text;
  ASSERT_EQ(cli({"status"}, &text), 0) << "the cluster did not survive: " << text;

  // The driver dies with t0002 and t0003 running; a stop asked now stands until the restore.
  j = Load("stopper");
  ASSERT_TRUE(j.ok()) << j.status();
  {
    tune::ExperimentState at(j->spec);
    for (auto& e : j->entries) ASSERT_TRUE(at.Apply(e).ok());
    ASSERT_EQ(at.trials().at(2).state, tune::TrialState::kRunning) << "too slow a machine?";
  }
  driver->Kill(SIGKILL);
  (void)driver->Wait(10s);
  EXPECT_EQ(cli({"stop", "trial", "stopper/t0002", "--timeout", "0.5"}, &text), 1) << text;
  EXPECT_NE(text.find("was not stopped within"), std::string::npos) << text;
  auto killed_at = Load("stopper");
  ASSERT_TRUE(killed_at.ok());
  size_t before = killed_at->entries.size();
  size_t t1_reports = reports_of(*killed_at, 1);

  auto restored = Driver({"--scenario=restore", "--name=stopper", "--step-ms=100"});
  std::string out = Finish(*restored);
  auto trials = Trials(out);
  ASSERT_EQ(trials.size(), 3u) << out;
  EXPECT_NE(trials["t0001"].find("state=STOPPED"), std::string::npos) << out;
  EXPECT_NE(trials["t0001"].find("reason=stopped by user"), std::string::npos) << out;
  EXPECT_NE(trials["t0002"].find("state=STOPPED"), std::string::npos) << out;
  EXPECT_NE(trials["t0002"].find("reason=stopped by user"), std::string::npos) << out;
  EXPECT_NE(trials["t0003"].find("state=FINISHED"), std::string::npos) << out;
  EXPECT_NE(trials["t0003"].find("iterations=80 "), std::string::npos) << out;
  // The progress view says so, and counts them.
  EXPECT_NE(out.find("[stopper] t0002 stopped by user"), std::string::npos) << out;
  EXPECT_NE(out.find("2 stopped early (2 by user)"), std::string::npos) << out;
  auto after = Load("stopper");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(reports_of(*after, 1), t1_reports) << "t0001 ran again after the restore";
  EXPECT_EQ(reports_of(*after, 2, before), 0u) << "t0002 ran again after the restore";
  // No request is left behind.
  auto c = Client();
  ASSERT_TRUE(c);
  auto left = c->KvList(tune::kStopRequestsNamespace, "stopper/");
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_TRUE(left->entries.empty());
}

TEST_F(TuneTest, NodeKilledUnderARunningTrialResumesItElsewhere) {
  auto head = StartHead({"--resources", "CPU=0"});
  std::string b, c;
  auto node_b = StartNode("b", {"--resources", "CPU=1"}, &b);
  auto node_c = StartNode("c", {"--resources", "CPU=1"}, &c);
  auto driver = Driver({"--scenario=run", "--name=nodekill", "--samples=1", "--iters=12",
                        "--step-ms=200", "--scheduler=fifo"});
  ASSERT_TRUE(WaitForReports("nodekill", 3, 120s)) << driver->ReadAll(1s);
  auto j = Load("nodekill");
  ASSERT_TRUE(j.ok());
  std::string where;
  for (auto& e : j->entries)
    if (e.kind == JournalEntry::Kind::kTrialStarted) where = e.node;
  ASSERT_TRUE(where == b || where == c) << where;
  auto& victim = where == b ? node_b : node_c;
  victim->Kill(SIGKILL);
  (void)victim->Wait(10s);
  EXPECT_TRUE(WaitForState(where, NodeState::kDead, 30s)) << "the head never saw the node die";
  std::string out = Finish(*driver);
  auto trials = Trials(out);
  ASSERT_EQ(trials.size(), 1u) << out;
  const std::string& line = trials.begin()->second;
  EXPECT_NE(line.find("state=FINISHED"), std::string::npos) << out;
  EXPECT_NE(line.find("iterations=12 "), std::string::npos) << out;
  EXPECT_NE(line.find("restarts=1 "), std::string::npos) << out;
  EXPECT_EQ(Field(line, "node"), where == b ? c : b) << out;
}

// PBT: the bottom trials take over a top trial's checkpoint and config, and go on to the end.
// The copy of the donor's checkpoint is made before the exploit is journaled, and the report
// names it (one append: a restore never sees the new config without its checkpoint). With
// `checkpoint_every` 0 every trial still checkpoints at its perturbation boundaries, so the copy
// is the donor's weights of its last boundary, not those of its own earlier exploit (once
// copied, many steps older).
void ExpectExploitsCopyTheDonorsCheckpoint(const tune::Journal::Loaded& j, const std::string& out) {
  size_t exploits = 0, checked = 0;
  // The trainable's own step count ("state") of each trial's weights as of its last
  // perturbation boundary (every pbt_interval iterations, where PBT ranks and copies; or its
  // exploit), and, for a trial that has just exploited, its donor's then: the copy it restored is
  // at least that far along (checkpoint_every 0 once copied the donor's weights of its own earlier
  // exploit instead, many steps older).
  std::map<uint64_t, double> state;
  std::map<uint64_t, std::pair<uint64_t, double>> copied_from;
  for (const JournalEntry& e : j.entries) {
    if (e.kind != JournalEntry::Kind::kReport) continue;
    auto s = e.metrics.find("state");
    if (s != e.metrics.end()) {
      auto c = copied_from.find(e.trial);
      if (c != copied_from.end()) {
        ++checked;
        // (Restore took the copy's step count; one Step later it reports that plus one.)
        EXPECT_GE(s->second - 1, c->second.second)
            << "trial " << e.trial << " exploited " << c->second.first
            << " and restored weights older than the donor's last boundary (its next report, at "
            << e.iteration << ", has state " << s->second << "; the donor's was "
            << c->second.second << ")";
        copied_from.erase(c);
      }
      if (e.iteration % j.spec.pbt_interval == 0) state[e.trial] = s->second;
    }
    if (e.action != uint8_t(tune::Action::kExploit)) continue;
    ++exploits;
    if (state.count(e.exploit_from)) {
      // From now on the trial holds the donor's weights (and the scheduler gives it the donor's
      // score): a trial that copies from it next gets those.
      copied_from[e.trial] = {e.exploit_from, state[e.exploit_from]};
      state[e.trial] = state[e.exploit_from];
    } else {
      state.erase(e.trial);  // a donor before its first boundary: what it gave is not known here
    }
    EXPECT_NE(e.exploit_from, e.trial);
    EXPECT_FALSE(tune::IsSkippedExploit(e)) << e.reason;
    // (The copy's key: EXP/TRIAL/ITERATION-fromDONOR.)
    EXPECT_NE(e.checkpoint_key.find("-from" + std::to_string(e.exploit_from)), std::string::npos)
        << "trial " << e.trial << " exploited " << e.exploit_from
        << " and its report names no copy of the donor's checkpoint: '" << e.checkpoint_key << "'";
  }
  EXPECT_GT(exploits, 0u) << out;
  EXPECT_GT(checked, 0u) << "no exploit was followed by a report of the trial that made it";
}

TEST_F(TuneTest, PbtExploitsATopTrialsCheckpoint) {
  auto head = StartHead({"--resources", "CPU=8"});
  for (const char* every : {"1", "0"}) {
    std::string name = std::string("pbt") + every;
    // (8 trials over 6 perturbation intervals: trials that exploited become donors in turn.)
    auto driver =
        Driver({"--scenario=run", "--name=" + name, "--samples=8", "--iters=24", "--scheduler=pbt",
                "--concurrent=8", "--step-ms=20", std::string("--checkpoint-every=") + every});
    std::string out = Finish(*driver);
    ASSERT_NE(out.find("RESULT trials=8 finished=8 "), std::string::npos) << out;
    auto j = Load(name);
    ASSERT_TRUE(j.ok()) << j.status();
    SCOPED_TRACE("checkpoint_every " + std::string(every));
    ExpectExploitsCopyTheDonorsCheckpoint(*j, out);
    for (auto& [id, line] : Trials(out)) EXPECT_NE(line.find("iterations=24 "), std::string::npos);
    // `cumulus trials EXP TRIAL` shows each exploit: from which trial, at which iteration.
    const JournalEntry* first = nullptr;
    for (const JournalEntry& e : j->entries)
      if (!first && e.kind == JournalEntry::Kind::kReport &&
          e.action == uint8_t(tune::Action::kExploit) && !tune::IsSkippedExploit(e))
        first = &e;
    ASSERT_NE(first, nullptr);
    std::vector<std::string> args = {"trials",    name,     std::to_string(first->trial),
                                     "--address", address_, "--token-file",
                                     token_file_};
    std::string text;
    ASSERT_EQ(Cli(args, &text), 0) << text;
    const std::string donor = tune::TrialName(first->exploit_from);
    const std::string at = std::to_string(first->iteration);
    EXPECT_NE(text.find("exploited " + donor + " at iteration " + at + ": "), std::string::npos)
        << text;
    args.push_back("--json");
    ASSERT_EQ(Cli(args, &text), 0) << text;
    EXPECT_NE(text.find("\"exploits\": [{\"iteration\": " + at + ", \"from\": \"" + donor + "\""),
              std::string::npos)
        << text;
  }
}

// PBT over a train function that reports no checkpoint: there is nothing to copy, so each
// exploit is skipped with its reason and the trial goes on with its own config; the journal
// says so, and a restore of the ended experiment replays those skips as the live run made them
// (the scheduler's undo, OnExploitSkipped) instead of refusing the journal.
TEST_F(TuneTest, PbtWithNothingToCopySkipsEachExploitAndRestoresIt) {
  auto head = StartHead({"--resources", "CPU=8"});
  auto driver = Driver({"--scenario=function-pbt", "--name=skips", "--samples=8", "--iters=6",
                        "--concurrent=8", "--step-ms=20"});
  std::string out = Finish(*driver);
  ASSERT_NE(out.find("RESULT trials=8 finished=8 "), std::string::npos) << out;
  auto j = Load("skips");
  ASSERT_TRUE(j.ok()) << j.status();
  std::map<uint64_t, std::string> config;
  size_t skipped = 0;
  for (const JournalEntry& e : j->entries) {
    if (e.kind == JournalEntry::Kind::kTrialAdded) config[e.trial] = e.config;
    if (e.kind != JournalEntry::Kind::kReport || e.action != uint8_t(tune::Action::kExploit))
      continue;
    ++skipped;
    EXPECT_TRUE(tune::IsSkippedExploit(e)) << e.reason;
    EXPECT_NE(e.reason.find("reported none"), std::string::npos) << e.reason;
    EXPECT_EQ(e.config, config[e.trial]) << "trial " << e.trial << " took a config it had no "
                                         << "checkpoint for";
    EXPECT_TRUE(e.checkpoint_key.empty()) << e.checkpoint_key;
  }
  EXPECT_GT(skipped, 0u) << out;
  auto restored = Driver({"--scenario=function-pbt-restore", "--name=skips", "--step-ms=20"});
  std::string again = Finish(*restored);
  EXPECT_EQ(again.find("ERROR"), std::string::npos) << again;
  EXPECT_NE(again.find("RESULT trials=8 finished=8 "), std::string::npos) << again;
}

TEST_F(TuneTest, FunctionTrainableAndBadInput) {
  auto head = StartHead({"--resources", "CPU=2"});
  auto driver = Driver({"--scenario=function", "--name=fn", "--samples=2", "--iters=9"});
  std::string out = Finish(*driver);
  auto trials = Trials(out);
  ASSERT_EQ(trials.size(), 2u) << out;
  for (auto& [id, line] : trials) {
    EXPECT_NE(line.find("state=FINISHED"), std::string::npos) << line;
    EXPECT_NE(line.find("iterations=6 "), std::string::npos) << line;  // it returned at 6
  }
  auto bad = Driver({"--scenario=bad", "--name=bad"});
  out = Finish(*bad);
  EXPECT_NE(out.find("BAD empty-space InvalidArgument"), std::string::npos) << out;
  EXPECT_NE(out.find("BAD mode InvalidArgument: tuner: mode 'up' is neither max nor min"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("BAD restore NotFound: the cluster has no experiment named "
                     "'no-such-experiment'"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("without the experiment's metric 'loss'"), std::string::npos) << out;
  EXPECT_NE(out.find("BAD exists AlreadyExists"), std::string::npos) << out;
  EXPECT_NE(out.find("BAD budget InvalidArgument: tuner: scheduler: budget_fraction (of full "
                     "compute) must be in (0, 1], not 1.5\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("BAD infeasible its resources can never be had"), std::string::npos) << out;
  EXPECT_EQ(out.find("MakeTrialHost"), std::string::npos) << "an internal name:\n" << out;
}

}  // namespace
}  // namespace cumulus
