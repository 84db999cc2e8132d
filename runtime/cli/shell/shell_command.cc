// cumulus shell: the interactive cluster shell. On a terminal: a prompt with line editing, a
// history kept across sessions and Tab completion (runtime/cli/shell/line_editor.h); otherwise
// (a pipe, a file) it reads lines and prints plain output, for scripts.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "runtime/cli/command_table.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/head_connection.h"
#include "runtime/cli/interrupt.h"
#include "runtime/cli/local_state.h"
#include "runtime/cli/shell/completion.h"
#include "runtime/cli/shell/line_editor.h"
#include "runtime/cli/shell/live_names.h"
#include "runtime/cli/shell/session.h"

namespace cumulus::cli {

namespace {

constexpr const char* kShellHelp = R"(Usage:
  cumulus shell [--address HOST:PORT] [--token-file FILE] [--read-only]

An interactive shell over the cluster. Each line is a cumulus command, its leading 'cumulus'
optional ('status', 'list tasks --filter state=RUNNING', 'logs JOB --follow', 'cancel JOB'),
its words split as a shell splits them ('quotes', "quotes", backslash; # starts a comment).
--address and --token-file apply to every command that does not give its own.

  watch [--interval S] COMMAND ...   COMMAND's output redrawn every S seconds (default 2)
                                     until a key is pressed: 'watch status', 'watch trials EXP'
  top [--interval S]                 a live view of the nodes
  help [COMMAND]                     the commands, or one command's options
  exit, quit, Ctrl-D                 leave
Ctrl-C stops the running command or view and returns to the prompt; it never leaves the shell.

On a terminal: line editing (emacs keys), a history kept across sessions in $CUMULUS_HISTORY
(default ~/.cumulus_history, at most 1000 lines), Tab completion of commands, subcommands, flags
and of live ids from the cluster (nodes, jobs, named actors and every actor's id, tasks, objects,
placement groups, experiments). Commands that stop or retire something (cancel, drain, down,
stop, kill) ask y/N first, whenever stdin is a terminal (with stdout redirected, on stderr).

  --read-only       refuse, with one line, the commands that stop or retire something, change
                    the cluster (submit, call) or start servers (start, up, object-store
                    serve)
Not a terminal (a pipe, a file): lines are read one by one, the output is plain, nothing is
asked (unless stdin is a terminal), 'watch' and 'top' run their command once; the exit status
is that of the last command that failed (0 if none did). A line that cannot run (unknown
command, bad quoting, a head that does not answer) is one line on stderr and the shell goes on;
when the head answers again the next command says so.
)";

}  // namespace

int ShellCommand(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kShellHelp, stdout);
      return 0;
    }
  }
  Flags flags({"address", "token-file"}, {"read-only"});
  Status st = flags.Parse(args);
  if (!st.ok()) return UsageError(st.message(), "cumulus shell --help");

  shell::SessionOptions options;
  options.address = flags.Get("address");
  options.token_file = flags.Get("token-file");
  options.read_only = flags.Has("read-only");
  options.interactive = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
  options.confirm = isatty(STDIN_FILENO);
  // Ctrl-C stops the running command, not the shell; a reader that went away is an error on
  // the write, not a death.
  CatchInterrupts(/*terminate_too=*/false);
  signal(SIGPIPE, SIG_IGN);
  shell::Session session(options);
  int last_failure = 0;
  auto run = [&](const std::string& line) {
    int rc = session.Execute(line);
    if (rc != 0) last_failure = rc;
  };

  if (!options.interactive) {
    for (std::string line; !session.done();) {
      if (std::getline(std::cin, line)) {
        run(line);
        continue;
      }
      // Ctrl-C between commands (stdin a terminal, stdout a file) interrupts the read (EINTR):
      // not the end of the input, the shell reads on.
      if (Interrupted() && std::ferror(stdin)) {
        std::clearerr(stdin);
        std::cin.clear();
        ClearInterrupt();
        continue;
      }
      break;
    }
    return last_failure;
  }

  shell::LiveNames live({options.address, options.token_file});
  shell::Completer completer(&live);
  shell::LineEditorOptions editor_options;
  editor_options.history_file = shell::DefaultHistoryFile();
  auto editor = shell::LineEditor::Create(editor_options, &completer);
  if (!editor.ok()) return Fail(editor.status());
  auto address = ResolveAddress(options.address);
  std::printf("cumulus shell%s%s. Tab completes, 'help' lists the commands, Ctrl-D leaves.\n",
              address.ok() ? " on " : "", address.ok() ? address->ToString().c_str() : "");
  if (options.read_only) {
    std::printf("Read-only: what changes the cluster or starts servers is refused.\n");
  }
  std::fflush(stdout);
  while (!session.done()) {
    std::string line;
    auto outcome = (*editor)->ReadLine(&line);
    if (outcome == shell::LineEditor::Outcome::kEnd) {
      std::printf("\n");
      break;
    }
    if (outcome == shell::LineEditor::Outcome::kInterrupted) continue;
    std::string trimmed = line.substr(0, line.find_last_not_of(" \t") + 1);
    if (trimmed != "exit" && trimmed != "quit") (*editor)->Remember(line);
    run(line);
  }
  return last_failure;
}

}  // namespace cumulus::cli
