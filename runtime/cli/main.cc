// cumulus: the command line of the Cumulus runtime. The subcommands are the rows of
// command_table.h, which the interactive shell (`cumulus shell`) runs too.
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/cli/command_table.h"
#include "runtime/cli/commands.h"

namespace cumulus::cli {
int UsageError(const std::string& message, const std::string& help_command) {
  std::fprintf(stderr, "cumulus: %s; run '%s' for usage\n", message.c_str(), help_command.c_str());
  return 2;
}
}  // namespace cumulus::cli

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(cumulus::cli::MainHelp().c_str(), stderr);
    return 2;
  }
  const std::string& cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(cumulus::cli::MainHelp().c_str(), stdout);
    return 0;
  }
  if (cmd == "--version" || cmd == "version") {
    std::printf("cumulus %s\n", CUMULUS_VERSION);
    return 0;
  }
  if (const cumulus::cli::Command* c = cumulus::cli::FindCommand(cmd)) return c->run(rest);
  if (cmd.rfind("-", 0) == 0)
    return cumulus::cli::UsageError("unknown option '" + cmd + "'", "cumulus --help");
  return cumulus::cli::UsageError("unknown command '" + cmd + "'", "cumulus --help");
}
