// The subcommands of the `cumulus` command line. Each takes the arguments after its name and
// returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace cumulus::cli {

int ObjectStoreCommand(const std::vector<std::string>& args);
int StartCommand(const std::vector<std::string>& args);
int StatusCommand(const std::vector<std::string>& args);
int ListCommand(const std::vector<std::string>& args);
int StopCommand(const std::vector<std::string>& args);

// Prints "cumulus: <message>" and the hint to stderr; returns 2 (usage error).
int UsageError(const std::string& message, const std::string& help_command);

}  // namespace cumulus::cli
