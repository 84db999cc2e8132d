// The table of `cumulus` subcommands, shared by `main` (one command per process) and the
// interactive shell (many commands in one process). One row per command: its name, the line
// `cumulus --help` shows for it, the function that runs it, and what the shell must know about it.
#pragma once

#include <string>
#include <vector>

namespace cumulus::cli {

struct Command {
  const char* name;
  // The command's line in `cumulus --help` (after the name column); nullptr when another
  // command's line already names it (logs and cancel on the jobs line, drain on the down line).
  const char* help;
  int (*run)(const std::vector<std::string>& args);
  // Stops, kills or retires something: the shell asks before running it on a terminal and
  // refuses it when --read-only.
  bool destructive = false;
  // Takes --address and --token-file (the shell passes its own unless the line gives them).
  bool takes_address = true;
  // Starts servers, daemons or actors of its own, blocks signals or ends the process: the shell
  // runs it as a child process (the same binary), never in its own process.
  bool own_process = false;
  // The flags the shell completes after the command's name, space-separated.
  const char* flags = "";
  // What the first word after the name is, for completion: "job", "node", "actor", "list"
  // (nodes|jobs|...), "experiment", "store" (object-store's subcommands), "describe" (a kind, then
  // an id of that kind) or "" (nothing).
  const char* first_arg = "";
  // Changes the cluster without destroying anything (submits work, calls a function): refused
  // when the shell is --read-only, run without asking otherwise.
  bool changes_state = false;
};

// Every subcommand, in the order `cumulus --help` lists them. A row named "NAME SUB" (two
// words: "stop trial") is a sub-form of NAME with its own run, flags and shell properties;
// NAME's own run hands `NAME SUB ...` to it too, so a one-shot `cumulus` needs no lookup.
const std::vector<Command>& Commands();
// The row of `name`, or nullptr.
const Command* FindCommand(const std::string& name);
// The row a command line names: "NAME SUB" when `args` (the words after NAME) start with SUB
// and the table has that sub-form (`*used` = 2), else NAME's row (`*used` = 1), else nullptr.
const Command* FindCommand(const std::string& name, const std::vector<std::string>& args,
                           size_t* used);
// `cumulus --help`'s text.
std::string MainHelp();

// `cumulus shell` (runtime/cli/shell/shell_command.cc).
int ShellCommand(const std::vector<std::string>& args);

}  // namespace cumulus::cli
