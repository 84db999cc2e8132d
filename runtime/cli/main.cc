// cumulus: the command line of the Cumulus runtime.
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/cli/commands.h"

namespace {

constexpr const char* kHelp = R"(cumulus - a distributed actor runtime for C++ ML programs

Usage: cumulus <command> [options]

Commands:
  start           start a head (--head) or a node that joins one (--address HOST:PORT)
  status          show the cluster: nodes, their state, labels and resources
  list            list nodes, jobs, actors, tasks, objects or placement-groups
  submit          run a driver program on the cluster as a job
  jobs            list jobs;  logs JOB: their output;  cancel JOB: stop one
  trials          tuning experiments and their trials (--plot FILE.svg draws them)
  stop            stop what 'cumulus start' started on this machine
  up              start a cluster and its autoscaler from a cluster file (bursting)
  down            terminate the autoscaler's nodes, then stop;  drain NODE: retire a node
  object-store    run or inspect a node's object store (shared memory + RocksDB)

Options:
  -h, --help      show this help
  --version       print the version

Run 'cumulus <command> --help' for a command's options.
)";

}  // namespace

namespace cumulus::cli {
int UsageError(const std::string& message, const std::string& help_command) {
  std::fprintf(stderr, "cumulus: %s; run '%s' for usage\n", message.c_str(), help_command.c_str());
  return 2;
}
}  // namespace cumulus::cli

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  const std::string& cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (cmd == "--version" || cmd == "version") {
    std::printf("cumulus %s\n", CUMULUS_VERSION);
    return 0;
  }
  if (cmd == "object-store") return cumulus::cli::ObjectStoreCommand(rest);
  if (cmd == "start") return cumulus::cli::StartCommand(rest);
  if (cmd == "status") return cumulus::cli::StatusCommand(rest);
  if (cmd == "list") return cumulus::cli::ListCommand(rest);
  if (cmd == "stop") return cumulus::cli::StopCommand(rest);
  if (cmd == "up") return cumulus::cli::UpCommand(rest);
  if (cmd == "down") return cumulus::cli::DownCommand(rest);
  if (cmd == "drain") return cumulus::cli::DrainCommand(rest);
  if (cmd == "submit") return cumulus::cli::SubmitCommand(rest);
  if (cmd == "jobs") return cumulus::cli::JobsCommand(rest);
  if (cmd == "logs") return cumulus::cli::LogsCommand(rest);
  if (cmd == "cancel") return cumulus::cli::CancelCommand(rest);
  if (cmd == "trials") return cumulus::cli::TrialsCommand(rest);
  if (cmd.rfind("-", 0) == 0)
    return cumulus::cli::UsageError("unknown option '" + cmd + "'", "cumulus --help");
  return cumulus::cli::UsageError("unknown command '" + cmd + "'", "cumulus --help");
}
