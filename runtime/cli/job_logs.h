// What `cumulus logs` shares between a job's output (job_commands.cc) and one tuning trial's
// output (trial_logs.cc): whether the job has ended, and `logs JOB --trial T`.
#pragma once

#include <string>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/head/control_client.h"

namespace cumulus::cli {

// Whether the job has ended (`*state` its state in words): a submitted job in a final state, or
// a driver that went away. NotFound, naming the job, if the cluster never had it.
Result<bool> JobOver(ControlClient& head, const JobId& job, std::string* state);

// `cumulus logs JOB --trial T`: `trial` is TRIAL (any experiment the job ran) or
// EXPERIMENT/TRIAL; with `follow`, until the job ends or Ctrl-C (kInterruptedExit). A trial
// that exists but printed nothing is no error: nothing on stdout, one line saying so on stderr.
int TrialLogs(ControlClient& head, const JobId& job, const std::string& trial, bool follow);

}  // namespace cumulus::cli
