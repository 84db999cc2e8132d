// The tuner's gang trials and waiting trials with real processes (`cumulus start` head and nodes
// on loopback, tune_driver.cc): a gang averaging over its collective group, a paused gang
// resumed, a gang rank's own error failing its trial, trials that wait for resources named in
// the pending demand, and the budget scheduler's trials that wait at a rung for those on their
// way there (docs/tune.md). The fixture: tune_fixture.h.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
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

TEST_F(TuneTest, GangTrialAveragesOverItsCollectiveGroup) {
  auto head = StartHead({"--resources", "CPU=0"});
  std::string b, c;
  auto node_b = StartNode("b", {"--resources", "CPU=2"}, &b);
  auto node_c = StartNode("c", {"--resources", "CPU=2"}, &c);
  auto driver = Driver({"--scenario=gang", "--name=gang", "--samples=2", "--iters=3", "--gang=2",
                        "--scheduler=fifo", "--step-ms=10"});
  std::string out = Finish(*driver);
  auto trials = Trials(out);
  ASSERT_EQ(trials.size(), 2u) << out;
  for (auto& [id, line] : trials) {
    EXPECT_NE(line.find("state=FINISHED"), std::string::npos) << line;
    EXPECT_NE(line.find("iterations=3 "), std::string::npos) << line;
    EXPECT_NE(line.find("world=2 "), std::string::npos) << line;
  }
}

// A gang under a scheduler that pauses (budget): a paused gang resumed later forms its collective
// group anew, under a name its earlier start did not use (a reused name meets the old start's
// rendezvous entries, and the resumed ranks fail to join: "could not join group").
TEST_F(TuneTest, PausedGangTrialResumesAndFormsItsGroupAgain) {
  auto head = StartHead({"--resources", "CPU=2"});
  // One gang at a time; with the whole budget (1.0) the paused trials are resumed once the
  // searcher has no more configs.
  auto driver =
      Driver({"--scenario=gang", "--name=gpause", "--samples=4", "--iters=4", "--gang=2",
              "--scheduler=budget", "--budget-fraction=1", "--step-ms=10", "--concurrent=1"});
  std::string out = Finish(*driver, 25s);
  auto trials = Trials(out);
  ASSERT_EQ(trials.size(), 4u) << out;
  EXPECT_NE(out.find(" failed=0 "), std::string::npos) << out;
  auto j = Load("gpause");
  ASSERT_TRUE(j.ok()) << j.status();
  // A trial paused, resumed, and reported after its resume.
  std::set<uint64_t> paused;
  std::set<uint64_t> resumed_and_reported;
  int64_t resumed = -1;
  for (auto& e : j->entries) {
    if (e.kind == JournalEntry::Kind::kReport && e.action == uint8_t(tune::Action::kPause))
      paused.insert(e.trial);
    if (e.kind == JournalEntry::Kind::kChoose && e.resume >= 0 && paused.count(uint64_t(e.resume)))
      resumed = e.resume;
    if (e.kind == JournalEntry::Kind::kReport && resumed >= 0 && e.trial == uint64_t(resumed))
      resumed_and_reported.insert(e.trial);
  }
  ASSERT_FALSE(paused.empty()) << "no gang trial was paused:\n" << out;
  EXPECT_FALSE(resumed_and_reported.empty()) << "no paused gang trial ran again:\n" << out;
  for (auto& [id, line] : trials) {
    EXPECT_EQ(line.find("state=FAILED"), std::string::npos) << line;
    EXPECT_NE(line.find("world=2 "), std::string::npos) << line;
  }
}

// A gang whose rank 1 throws while rank 0 waits in an allreduce with it: the trial fails with
// rank 1's own error, and without waiting for rank 0's collective operation to time out (60 s).
// Two gangs whose rank 1 throws at iteration 2 (rank 0 is then blocked in its allreduce): each
// trial fails with rank 1's own error, and the two looks at the other ranks (up to 10 s each)
// run side by side on the controller, not one after the other (it used to block in the first).
TEST_F(TuneTest, GangRanksOwnErrorIsTheTrialsFailure) {
  auto head = StartHead({"--resources", "CPU=4"});
  auto driver = Driver({"--scenario=gang", "--name=grank", "--samples=2", "--iters=5", "--gang=2",
                        "--scheduler=fifo", "--step-ms=10", "--fail-rank=1", "--concurrent=2"});
  std::string out = Finish(*driver, 40s);
  auto trials = Trials(out);
  ASSERT_EQ(trials.size(), 2u) << out;
  for (auto& [id, line] : trials) {
    EXPECT_NE(line.find("state=FAILED"), std::string::npos) << line;
    EXPECT_NE(line.find("rank 1: "), std::string::npos) << line;
    EXPECT_NE(line.find("rank 1 fails on purpose"), std::string::npos) << line;
  }
  auto j = Load("grank");
  ASSERT_TRUE(j.ok()) << j.status();
  std::vector<int64_t> ended;
  for (const JournalEntry& e : j->entries)
    if (e.kind == JournalEntry::Kind::kTrialEnded) ended.push_back(e.micros);
  ASSERT_EQ(ended.size(), 2u) << out;
  // (Side by side: as far apart as the two rank 1s failed. One after the other: 10 s apart.)
  EXPECT_LT(std::llabs(ended[1] - ended[0]), 8'000'000)
      << "the second gang's failure waited out the first one's look at its ranks";
}

// A trial that fits the cluster but not what is free now waits, and `cumulus status` names it
// (EXP/TRIAL) in the pending demand, with why it waits; the autoscaler reads the same records.
TEST_F(TuneTest, PendingTrialIsNamedInThePendingDemand) {
  auto head = StartHead({"--resources", "CPU=2"});
  // Two trials of CPU=2 at once on a cluster of CPU=2: one runs (~5 s), the other waits for it.
  // (Without --concurrent the second would wait too, as one of max_pending_trials.)
  auto driver = Driver({"--scenario=run", "--name=pend", "--samples=2", "--iters=100",
                        "--scheduler=fifo", "--step-ms=50", "--cpus=2", "--concurrent=2"});
  // The trial that waits for the other's CPUs, named with its shape and why it waits. (Both
  // may first show for a moment waiting for the job's program to reach the node, with that
  // reason: the loop waits for the wait this test is about.)
  auto waiting = [](const std::string& id) {
    return "{\"resources\":\"CPU=2\",\"count\":1,\"purpose\":\"trial " + id +
           "\",\"pinned_to\":\"\",\"reason\":\"waiting for CPU=2: 1 node(s) could run it, none "
           "has it free now\"}";
  };
  std::string json, seen;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (seen.empty() && std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ(Cli({"status", "--json"}, &json), 0) << json;
    for (const char* id : {"pend/t0001", "pend/t0002"}) {
      if (json.find(waiting(id)) != std::string::npos) seen = id;
    }
    // Every pending demand says why it waits.
    EXPECT_EQ(json.find("\"reason\":\"\""), std::string::npos) << json;
    if (seen.empty()) std::this_thread::sleep_for(100ms);  // polling the head's view
  }
  if (seen.empty()) driver->Kill(SIGKILL);
  ASSERT_FALSE(seen.empty()) << "no pending demand named a trial waiting for CPU=2; last status:\n"
                             << json << "\nthe driver's output:\n"
                             << driver->ReadAll(5s);
  std::string text;
  ASSERT_EQ(Cli({"status"}, &text), 0) << text;
  // (The trial may have started meanwhile: the text is checked only while it still waits.)
  if (text.find("Pending demand: none") == std::string::npos) {
    EXPECT_NE(text.find("1 x {CPU=2} for trial " + seen + " (waiting for CPU=2"), std::string::npos)
        << text;
  }
  std::string out = Finish(*driver, 60s);
  auto trials = Trials(out);
  ASSERT_EQ(trials.size(), 2u) << out;
  for (auto& [id, line] : trials) EXPECT_NE(line.find("state=FINISHED"), std::string::npos) << line;
  // The tuner's own progress lines said which trial waited (one line a second, ~5 s of wait).
  EXPECT_NE(out.find("not placed yet: " + seen.substr(5)), std::string::npos) << out;
}

// A gang trial whose placement group cannot be placed yet (the other gang holds the only node)
// is pending demand named by its trial (the group's purpose) in `cumulus status` and `--json`.
// `cumulus stop trial` on it does not wait for the reservation (which would last as long as the
// other trial runs): the reservation is withdrawn, the trial journaled STOPPED, its demand gone.
TEST_F(TuneTest, WaitingGangIsPendingDemandAndStopsWithoutWaitingForItsGroup) {
  auto head = StartHead({"--resources", "CPU=2"});
  auto driver = Driver({"--scenario=gang", "--name=gpend", "--samples=2", "--iters=400", "--gang=2",
                        "--scheduler=fifo", "--step-ms=50", "--concurrent=2"});
  std::vector<std::string> conn = {"--address", address_, "--token-file", token_file_};
  auto cli = [&](std::vector<std::string> args, std::string* text) {
    args.insert(args.end(), conn.begin(), conn.end());
    return Cli(args, text);
  };
  auto purpose = [](const std::string& id) { return "\"purpose\":\"trial gpend/" + id + "\""; };
  std::string json, waiting;
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (waiting.empty() && std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ(cli({"status", "--json"}, &json), 0) << json;
    for (const char* id : {"t0001", "t0002"})
      if (json.find(purpose(id)) != std::string::npos) waiting = id;
    if (waiting.empty()) std::this_thread::sleep_for(100ms);  // polling the head's view
  }
  if (waiting.empty()) driver->Kill(SIGKILL);
  ASSERT_FALSE(waiting.empty()) << "no pending demand named a gang trial; last status:\n"
                                << json << "\nthe driver's output:\n"
                                << driver->ReadAll(5s);
  std::string running = waiting == "t0001" ? "t0002" : "t0001";
  // Its group's bundles, with why they wait; the running trial's are not pending.
  EXPECT_NE(json.find("{\"resources\":\"CPU=1\",\"count\":2," + purpose(waiting) +
                      ",\"pinned_to\":\"\",\"reason\":\"waiting for room for 2 bundle(s) PACK: it "
                      "fits the cluster, not what is free now\"}"),
            std::string::npos)
      << json;
  EXPECT_EQ(json.find(purpose(running)), std::string::npos) << json;
  std::string text;
  ASSERT_EQ(cli({"status"}, &text), 0) << text;
  EXPECT_NE(text.find("for trial gpend/" + waiting), std::string::npos) << text;

  auto asked = std::chrono::steady_clock::now();
  ASSERT_EQ(cli({"stop", "trial", "gpend/" + waiting, "--timeout", "5"}, &text), 0) << text;
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  EXPECT_NE(text.find("Stopped gpend/" + waiting + " in "), std::string::npos) << text;
  EXPECT_LT(took, 5.0) << text;
  std::printf("LATENCY stop of a gang being reserved: %.0f ms (%s)\n", took * 1000,
              text.substr(0, text.find('\n')).c_str());
  // Its demand goes with the reservation (the node's next heartbeat).
  EXPECT_TRUE(WaitUntil(
      [&] {
        return cli({"status", "--json"}, &json) == 0 &&
               json.find(purpose(waiting)) == std::string::npos;
      },
      10000ms))
      << json;
  auto j = Load("gpend");
  ASSERT_TRUE(j.ok()) << j.status();
  {
    tune::ExperimentState at(j->spec);
    for (auto& e : j->entries) ASSERT_TRUE(at.Apply(e).ok());
    auto ended = at.trials().at(*tune::ParseTrialId(waiting));
    EXPECT_EQ(ended.state, tune::TrialState::kStoppedEarly);
    EXPECT_EQ(ended.reason.rfind(tune::kStoppedByUserReason, 0), 0u) << ended.reason;
    EXPECT_TRUE(ended.history.empty()) << "it never ran";
    EXPECT_EQ(at.trials().at(*tune::ParseTrialId(running)).state, tune::TrialState::kRunning)
        << "the other trial must go on";
  }
  // The other one, stopped too, ends the run.
  ASSERT_EQ(cli({"stop", "trial", "gpend/" + running}, &text), 0) << text;
  std::string out = Finish(*driver, 60s);
  auto trials = Trials(out);
  ASSERT_EQ(trials.size(), 2u) << out;
  EXPECT_NE(trials[waiting].find("iterations=0 "), std::string::npos) << out;
  EXPECT_NE(trials[running].find("state=STOPPED"), std::string::npos) << out;
}

// The default scheduler with every trial at once on a real cluster (12 trials, 12 at once): a
// trial that reaches a rung while others are on their way there waits for them (the journal has
// the reason), nothing is left paused, the budget holds, and the trial whose curve ends highest
// (the driver's curves never cross: ceiling by lr) runs to the end.
TEST_F(TuneTest, TheBudgetSchedulerWithEveryTrialAtOnceFinishesTheBest) {
  auto head = StartHead({"--resources", "CPU=12"});
  auto driver = Driver({"--scenario=run", "--name=allatonce", "--samples=12", "--iters=20",
                        "--scheduler=budget", "--concurrent=12", "--step-ms=20"});
  std::string out = Finish(*driver);
  ASSERT_NE(out.find("RESULT trials=12 "), std::string::npos) << out;
  EXPECT_NE(out.find(" paused=0"), std::string::npos) << out;
  auto j = Load("allatonce");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_FALSE(j->spec.budget_eager);
  std::map<uint64_t, double> ceiling;
  int64_t reports = 0;
  bool waited = false;
  for (const JournalEntry& e : j->entries) {
    if (e.kind == JournalEntry::Kind::kTrialAdded) {
      auto c = tune::Config::Decode(e.config);
      ASSERT_TRUE(c.ok()) << c.status();
      ceiling[e.trial] = 1.0 - std::fabs(std::log10(c->Get<double>("lr")) + 2.0) / 3.0;
    }
    if (e.kind != JournalEntry::Kind::kReport) continue;
    ++reports;
    waited |= e.reason.find("on their way there") != std::string::npos;
  }
  EXPECT_TRUE(waited) << "no trial waited for the trials on their way to its rung";
  EXPECT_LE(reports, static_cast<int64_t>(0.24 * 12 * 20)) << out;
  uint64_t best = 0;
  for (auto& [id, c] : ceiling)
    if (best == 0 || c > ceiling[best]) best = id;
  const std::string line = Trials(out)[tune::TrialName(best)];
  EXPECT_NE(line.find("state=FINISHED iterations=20 "), std::string::npos) << line << "\n" << out;
}

}  // namespace
}  // namespace cumulus
