// The tuner's controller (the driver side of cumulus/tune.h). One thread: it starts trials as
// actors (or gangs in placement groups), waits for their reports, asks the trial scheduler what
// to do with each, journals the report with the decision, and only then applies it, so that a
// restored controller replays the journal into fresh policies and continues where it stopped.
//
// The loop's events all come from one place, the runtime's Wait over the trials' outstanding
// calls (plus the placement groups of gangs being reserved, on threads of their own, and the
// stop requests of `cumulus stop trial`, looked for in the head's control store at least every
// kStopPollInterval), so it is a plain loop rather than a set of CAF actors: see docs/tune.md,
// "How it runs".
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cumulus/cumulus.h"
#include "cumulus/tune.h"
#include "runtime/tune/experiment_state.h"
#include "runtime/tune/journal.h"
#include "runtime/tune/refusal_checks.h"
#include "runtime/tune/stop_requests.h"
#include "runtime/tune/trial_host.h"
#include "scheduler/tune/searcher.h"
#include "scheduler/tune/trial_scheduler.h"

namespace cumulus::tune {

// A connection to the head of the cluster this process runs in (the journal's, the CLI's), and
// this process's job (hex) when `job` is given.
Result<std::unique_ptr<ControlClient>> ConnectTunerHead(std::string* job = nullptr);

// Checks the options and turns them into the spec the journal keeps.
Result<ExperimentSpec> SpecFromOptions(const TunerOptions& o, const SearchSpace& space,
                                       const std::string& trainable, bool is_function);

class Tuner::Impl {
 public:
  Impl(ExperimentSpec spec, SearchSpace space, TunerOptions progress);
  // A new experiment: the journal is created, the policies are fresh.
  Status Begin();
  // An experiment from its journal: the entries are replayed into the policies.
  Status Resume(Journal::Loaded loaded);
  Result<ExperimentResult> Run();

 private:
  Result<ExperimentResult> RunLoop();
  using Clock = std::chrono::steady_clock;
  struct Live {
    std::vector<ActorHandle<TrialHost>> actors;
    std::optional<PlacementGroup> group;
    std::optional<std::future<Result<PlacementGroup>>> reserving;
    PlacementGroupId reserving_id;                // the group being reserved (Kill cancels it)
    std::optional<ObjectRef<std::string>> where;  // rank 0's Where(): answered once placed
    std::vector<ObjectRef<StepResult>> steps;     // in flight, one per rank
    std::vector<bool> step_done;  // which ranks' steps returned (or, while failing, failed)
    bool placed = false;
    // Since when it waits for resources; not counted while the experiment's own placed trials
    // fill what the current nodes hold (CheckPendingTimeouts).
    Clock::time_point since;
    int64_t host_iteration = 0;  // iterations the actors have done (from their checkpoint)
    // A gang rank's step failed with its own error: the other ranks' steps are looked at, as
    // they return, until `deadline` for an actor that died (a restart, not the trial's failure);
    // the controller goes on with other trials meanwhile (HandleStepFailure, FinishFailure).
    struct Failing {
      Status why;
      Clock::time_point deadline;
    };
    std::optional<Failing> failing;
  };

  Status MakePolicies();
  Status Replay(const JournalEntry& e);
  Status Journal(JournalEntry e);
  // Policy effects shared by the live path and the replay.
  void EndInPolicies(uint64_t id, bool completed);

  Status FillSlots();
  Status StartTrial(uint64_t id);
  // "trial EXP/TRIAL": the purpose a trial's actors and placement group carry, so that their
  // pending demand (`cumulus status`, the autoscaler's reasons) names the trial.
  std::string TrialPurpose(uint64_t id) const {
    return "trial " + spec_.name + "/" + TrialName(id);
  }
  Status CreateActors(uint64_t id, Live& live, const PlacementGroup* group);
  void SubmitStep(uint64_t id, Live& live);
  // A failing gang (Live::failing) ends once every other rank's step has returned or its
  // deadline has passed: with a death seen meanwhile, else with the first rank's own error.
  Status FinishFailure(uint64_t id, Live& live);
  bool IsPbt() const { return scheduler_ && scheduler_->name() == "pbt"; }
  Status HandleWhere(uint64_t id, Live& live);
  // Rank `rank`'s step is ready: a failure ends or restarts the trial at once (a gang's other
  // ranks may be blocked in a collective operation with it); the report is handled once every
  // rank's step returned.
  Status HandleStep(uint64_t id, Live& live, size_t rank);
  Status HandleStepFailure(uint64_t id, Live& live, size_t rank, const Status& error);
  Status HandleFailure(uint64_t id, const Status& why);
  Status EndTrial(uint64_t id, TrialState state, const std::string& reason);
  Status ApplyDecision(uint64_t id, const JournalEntry& report);
  // A PBT exploit of `donor_id` by `id` at `iteration`: stores a copy of the donor's latest
  // checkpoint (or, for a class trainable whose running donor has none yet, one it saves now)
  // under `id`'s key and names it in `report`. Returns "" when copied, else why the exploit is
  // skipped (the donor has no checkpoint, or it could not be read); an error only when the copy
  // could not be stored.
  Result<std::string> CopyDonorCheckpoint(uint64_t id, int64_t iteration, uint64_t donor_id,
                                          JournalEntry* report);
  void Kill(uint64_t id);
  Status CheckPendingTimeouts();
  // Ends the trials that `cumulus stop trial` asked to stop (stop_requests.h): looks at most
  // every kStopPollInterval, and at once on the loop's first turn (a restored experiment).
  Status ApplyStopRequests();
  // Ends as FAILED the trials waiting for resources that no node of the cluster has (its totals)
  // and that the cluster's autoscaler, in its latest verdicts (`cumulus status`), can launch no
  // node type for: on a cluster whose nodes let such work wait for an autoscaler
  // (`--wait-for-nodes`) they would wait forever. Looks every kRefusalCheckInterval while a trial
  // waits; without an autoscaler (or with one that stopped publishing) it does nothing, and the
  // nodes refuse what none of them can run.
  Status RefuseTrialsNoNodeCanHold();
  bool AnyNodeCouldHoldABundle(const ClusterView& view) const;
  static constexpr std::chrono::seconds kRefusalCheckInterval{1};
  // Trials the current nodes hold at once (or max_concurrent_trials), looked at every 5 s.
  size_t Capacity();
  // Trials to keep started (running or waiting for resources): Capacity(), plus up to
  // max_pending_trials more that wait as pending demand when max_concurrent_trials is 0.
  size_t Slots();
  void Progress(bool final);
  std::vector<std::pair<int64_t, double>> ReplayableCutoffs() const;

  ExperimentSpec spec_;
  SearchSpace space_;
  TunerOptions progress_options_;
  std::unique_ptr<Searcher> searcher_;
  std::unique_ptr<TrialScheduler> scheduler_;
  std::unique_ptr<tune::Journal> journal_;
  ExperimentState state_;
  Mode mode_ = Mode::kMax;

  std::map<uint64_t, Live> live_;
  std::deque<uint64_t> fresh_;  // added by the searcher, not started yet
  // To start again from their checkpoints (no scheduler call), not before the time given: a
  // trial whose actor could not be placed (its node died and the head does not know yet) waits
  // 1, 2, 4 ... 10 s between tries.
  std::deque<std::pair<uint64_t, Clock::time_point>> restart_;
  // Failed tries to place each trial since it was last placed (HandleFailure gives up after 20).
  std::map<uint64_t, int> placement_failures_;
  std::set<uint64_t> budget_stopped_;
  bool budget_spent_ = false;
  // From the journal (Resume): the wall time the experiment's earlier runs spent, each from its
  // kRun entry to its last entry (a dead driver's time after its last entry is not counted), and
  // whether one of them spent the time budget. The time budget is the experiment's, not a run's.
  Clock::duration earlier_runs_{};
  bool budget_spent_before_ = false;
  uint64_t appended_ = 0;  // journal entries this run appended
  // Trials' actors created by this run (CreateActors): with the run's number, names each gang's
  // collective group uniquely.
  uint64_t actor_starts_ = 0;
  // appended_ when the scheduler last had nothing to run (no call again until something changes)
  uint64_t idle_choose_at_ = UINT64_MAX;
  Clock::time_point started_;
  size_t capacity_ = 1;
  Clock::time_point capacity_checked_;
  Clock::time_point stops_checked_;  // the last look for stop requests (epoch: never)
  // The autoscaler's verdicts count while their stamp changed within the last 30 s here.
  VerdictFreshness verdict_freshness_{std::chrono::seconds(30)};
  Clock::time_point refusals_checked_;  // the last RefuseTrialsNoNodeCanHold look (epoch: never)
  Clock::time_point last_progress_;
  std::string last_progress_line_;           // the last line without its time and compute
  Clock::time_point last_progress_printed_;  // when a plain line was last printed
  size_t progress_lines_ = 0;
  std::string job_;
};

}  // namespace cumulus::tune
