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
// `cumulus stop trial EXPERIMENT/TRIAL` (StopCommand hands `stop trial ...` to it).
int StopTrialCommand(const std::vector<std::string>& args);
int UpCommand(const std::vector<std::string>& args);
int DownCommand(const std::vector<std::string>& args);
int DrainCommand(const std::vector<std::string>& args);

int SubmitCommand(const std::vector<std::string>& args);
int JobsCommand(const std::vector<std::string>& args);
int LogsCommand(const std::vector<std::string>& args);
int CancelCommand(const std::vector<std::string>& args);
int TrialsCommand(const std::vector<std::string>& args);
int DescribeCommand(const std::vector<std::string>& args);
int TopCommand(const std::vector<std::string>& args);
int CallCommand(const std::vector<std::string>& args);
int KillCommand(const std::vector<std::string>& args);
int TimelineCommand(const std::vector<std::string>& args);
// `cumulus list jobs|placement-groups|actors` (nodes: ListCommand itself).
int ListStateCommand(const std::string& what, const std::vector<std::string>& args);

// `s` as a JSON string literal.
std::string JsonString(const std::string& s);
// Prints "cumulus: <message>" and the hint to stderr; returns 2 (usage error).
int UsageError(const std::string& message, const std::string& help_command);

}  // namespace cumulus::cli
