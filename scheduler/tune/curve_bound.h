// The `bound` trial scheduler (see trial_scheduler.h). Internal: make it with MakeTrialScheduler.
#pragma once

#include <memory>

#include "scheduler/tune/trial_scheduler.h"

namespace cumulus::tune {

Result<std::unique_ptr<TrialScheduler>> MakeCurveBoundScheduler(const SchedulerOptions& options);

}  // namespace cumulus::tune
