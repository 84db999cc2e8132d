// cumulus stop: stops the heads and nodes that `cumulus start` left running on this machine;
// `cumulus stop trial ...` (stop_trial_command.cc) stops one tuning trial instead.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/cli/commands.h"
#include "runtime/cli/local_state.h"

namespace cumulus::cli {

namespace {

constexpr const char* kStopHelp = R"(Usage:
  cumulus stop
  cumulus stop trial EXPERIMENT/TRIAL [--no-wait] [--timeout S] [--address A] [--token-file F]

cumulus stop
  Stops the heads and nodes that 'cumulus start' started on this machine (SIGTERM, then SIGKILL
  after 10 s). It takes no arguments: any other word is refused, and stops nothing.

cumulus stop trial EXPERIMENT/TRIAL      (also: EXPERIMENT TRIAL; TRIAL as t0003, t3 or 3)
  Stops one trial of a running tuning experiment: its tuner kills the trial's actors (a gang's
  placement group too), frees its resources and journals it as STOPPED, "stopped by user"; the
  scheduler counts it as stopped early, and Tuner::Restore does not run it again. The other
  trials go on. The tuner looks for requests every 250 ms; the command waits until the journal
  says the trial ended (--timeout S, default 10 s, 0 as --no-wait; --no-wait: return once
  asked). A request made while the experiment's driver is not running stands until
  Tuner::Restore continues it. Flags come after EXPERIMENT/TRIAL.
  Exit status: 0 stopped (or it ended by itself meanwhile); 1 no such experiment or trial, the
  trial already ended (its state is named), or not stopped in time; 2 bad arguments; 130 Ctrl-C
  while waiting (the request stands).
  See 'cumulus trials EXPERIMENT' for the trials and their states.
)";

// Gone, or a zombie waiting to be reaped.
bool Exited(int pid) {
  if (kill(pid, 0) != 0) return true;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  size_t paren = line.rfind(')');
  return paren == std::string::npos || (paren + 2 < line.size() && line[paren + 2] == 'Z');
}

bool IsCumulusProcess(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string cmd;
  std::getline(in, cmd, '\0');
  return cmd.find("cumulus") != std::string::npos;
}

}  // namespace

int StopCommand(const std::vector<std::string>& args) {
  if (!args.empty()) {
    if (args[0] == "-h" || args[0] == "--help") {
      std::fputs(kStopHelp, stdout);
      return 0;
    }
    if (args[0] == "trial")
      return StopTrialCommand(std::vector<std::string>(args.begin() + 1, args.end()));
    // Never the cluster by accident: `stop` with words it does not know stops nothing.
    return UsageError(
        "'stop' takes no arguments, or 'trial EXPERIMENT/TRIAL' (got '" + args[0] + "')",
        "cumulus stop --help");
  }
  auto processes = StartedProcesses();
  if (processes.empty()) {
    std::printf("Nothing to stop: no cumulus process was started on this machine (state in %s).\n",
                StateDir().c_str());
    return 0;
  }
  // Nodes first, then heads, so nodes do not spend their last seconds reconnecting.
  std::stable_sort(processes.begin(), processes.end(),
                   [](const StartedProcess& a, const StartedProcess& b) {
                     return a.role == "node" && b.role != "node";
                   });
  int failures = 0;
  for (auto& p : processes) {
    if (Exited(p.pid) || !IsCumulusProcess(p.pid)) {
      ForgetProcess(p.pid);  // already gone
      continue;
    }
    if (kill(p.pid, SIGTERM) != 0) {
      std::fprintf(stderr, "cumulus: cannot stop %s (pid %d): %s\n", p.role.c_str(), p.pid,
                   std::strerror(errno));
      ++failures;
      continue;
    }
    bool gone = false;
    for (int i = 0; i < 1000 && !gone;
         ++i) {  // up to 10 s: a process exit has no descriptor to wait on
      gone = Exited(p.pid);
      if (!gone) usleep(10'000);
    }
    if (!gone) {
      kill(p.pid, SIGKILL);
      ++failures;
      std::printf("Killed %s (pid %d): it did not stop within 10 s of SIGTERM.\n", p.role.c_str(),
                  p.pid);
    } else {
      std::printf("Stopped %s (pid %d).\n", p.role.c_str(), p.pid);
    }
    ForgetProcess(p.pid);
  }
  return failures ? 1 : 0;
}

}  // namespace cumulus::cli
