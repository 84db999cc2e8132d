// The `budget` trial scheduler (see trial_scheduler.h). Internal: make it with MakeTrialScheduler.
#pragma once

#include <cstddef>
#include <map>
#include <memory>

#include "scheduler/tune/trial_scheduler.h"

namespace cumulus::tune {

Result<std::unique_ptr<TrialScheduler>> MakeBudgetPromotionScheduler(
    const SchedulerOptions& options);

// How many trials are ahead of one whose score is `score` at its own rung: of `rung_scores` (the
// scores recorded at that rung), those that beat it. A trial that is not at a rung (null) counts
// as behind every one that is: SIZE_MAX. Used to rank paused trials nearest the leaders.
size_t TrialsAhead(const std::map<TrialId, double>* rung_scores, double score);

}  // namespace cumulus::tune
