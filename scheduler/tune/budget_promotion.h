// The `budget` trial scheduler (see trial_scheduler.h). Internal: make it with MakeTrialScheduler.
#pragma once

#include <memory>

#include "scheduler/tune/trial_scheduler.h"

namespace cumulus::tune {

Result<std::unique_ptr<TrialScheduler>> MakeBudgetPromotionScheduler(
    const SchedulerOptions& options);

}  // namespace cumulus::tune
