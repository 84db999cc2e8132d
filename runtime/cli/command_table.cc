// The table of `cumulus` subcommands: see command_table.h.
#include "runtime/cli/command_table.h"

#include <cstdio>

#include "runtime/cli/commands.h"

namespace cumulus::cli {
namespace {

int List(const std::vector<std::string>& args) { return ListCommand(args); }

int ObjectStoreServe(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"serve"};
  all.insert(all.end(), args.begin(), args.end());
  return ObjectStoreCommand(all);
}

}  // namespace

const std::vector<Command>& Commands() {
  static const auto* commands = new std::vector<Command>{
      {"start", "start a head (--head) or a node that joins one (--address HOST:PORT)",
       StartCommand, false, false, true,
       "--head --address --token-file --port --bind --block --resources --labels --data-dir "
       "--object-store-memory --program-cache-size --no-node --wait-for-nodes --metrics-port "
       "--metrics-host --metrics-sd-file "
       "--heartbeat-interval-ms --heartbeat-timeout-ms --disconnect-grace-ms --help",
       "", /*changes_state=*/true},
      {"status", "show the cluster: nodes, their state, labels and resources", StatusCommand, false,
       true, false, "--address --token-file --json --help"},
      {"list", "list nodes, jobs, actors, tasks, objects, workers or placement-groups", List, false,
       true, false, "--address --token-file --filter --limit --after --json --help", "list"},
      {"describe", "one node, actor, task, job or object in detail (why a task is pending)",
       DescribeCommand, false, true, false, "--address --token-file --json --help", "describe"},
      {"top", "a row per node: CPU, memory, GPU, object store, running tasks and actors",
       TopCommand, false, true, false, "--address --token-file --sort --filter --json --help"},
      {"submit", "run a driver program on the cluster as a job", SubmitCommand, false, true, false,
       "--address --token-file --name --resources --working-dir --wait --help", "", true},
      {"jobs", "list jobs;  logs JOB: their output;  cancel JOB: stop one", JobsCommand, false,
       true, false, "--address --token-file --filter --limit --json --help"},
      {"logs", nullptr, LogsCommand, false, true, false,
       "--address --token-file --follow --trial --help", "job"},
      {"cancel", nullptr, CancelCommand, true, true, false, "--address --token-file --grace --help",
       "job"},
      {"trials", "tuning experiments and their trials (--plot FILE.svg draws them)", TrialsCommand,
       false, true, false, "--address --token-file --json --csv --plot --log-x --width --help",
       "experiment"},
      {"call", "run a function of a running job, or an actor's method, with JSON arguments",
       CallCommand, false, true, false,
       "--address --token-file --timeout --resources --max-retries --help", "job", true},
      {"timeline", "a Chrome trace of tasks and actor calls per worker, for Perfetto (-o FILE)",
       TimelineCommand, false, true, false, "--address --token-file --output --timeout --help",
       "job"},
      {"kill", "kill an actor by name or id (its worker exits; one with restarts left comes back)",
       KillCommand, true, true, false, "--address --token-file --help", "actor"},
      {"stop", "stop what 'cumulus start' started here;  stop trial EXP/T: stop one trial",
       StopCommand, true, false, false, "--help", "stop"},
      // Stops one trial, never the cluster: needs the head (the shell passes its address).
      {"stop trial", nullptr, StopTrialCommand, true, true, false,
       "--address --token-file --no-wait --timeout --help", "experiment"},
      {"up", "start a cluster and its autoscaler from a cluster file (bursting)", UpCommand, false,
       false, true,
       "--address --token-file --round-ms --insecure --block --metrics-port --metrics-sd-file "
       "--help",
       "", /*changes_state=*/true},
      {"down", "terminate the autoscaler's nodes, then stop;  drain NODE: retire a node",
       DownCommand, true, true, true, "--address --token-file --help"},
      {"drain", nullptr, DrainCommand, true, true, false,
       "--address --token-file --wait --timeout --help", "node"},
      {"object-store", "run or inspect a node's object store (shared memory + RocksDB)",
       ObjectStoreCommand, false, false, true, "--dir --socket --memory --prefault --json --help",
       "store"},
      // Serving a store starts one (refused by a read-only shell); `object-store stats` reads.
      {"object-store serve", nullptr, ObjectStoreServe, false, false, true,
       "--dir --socket --memory --prefault --help", "", /*changes_state=*/true},
      {"shell", "an interactive shell: history, completion, live views (watch, top)", ShellCommand,
       false, true, false, "--address --token-file --read-only --help"},
  };
  return *commands;
}

const Command* FindCommand(const std::string& name) {
  for (const Command& c : Commands()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

const Command* FindCommand(const std::string& name, const std::vector<std::string>& args,
                           size_t* used) {
  if (!args.empty()) {
    if (const Command* sub = FindCommand(name + " " + args[0])) {
      *used = 2;
      return sub;
    }
  }
  *used = 1;
  return FindCommand(name);
}

std::string MainHelp() {
  std::string out = R"(cumulus - a distributed actor runtime for C++ ML programs

Usage: cumulus <command> [options]

Commands:
)";
  for (const Command& c : Commands()) {
    if (!c.help) continue;
    char line[256];
    std::snprintf(line, sizeof(line), "  %-15s %s\n", c.name, c.help);
    out += line;
  }
  out += R"(
Options:
  -h, --help      show this help
  --version       print the version

Run 'cumulus <command> --help' for a command's options.
)";
  return out;
}

}  // namespace cumulus::cli
