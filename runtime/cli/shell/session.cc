// One shell session: see session.h.
#include "runtime/cli/shell/session.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "runtime/base/numeric.h"
#include "runtime/cli/interrupt.h"
#include "runtime/cli/local_state.h"
#include "runtime/cli/shell/live_view.h"
#include "runtime/cli/shell/tokenizer.h"
#include "runtime/head/control_client.h"

namespace cumulus::cli::shell {

namespace {

// The command `top` shows live. 'cumulus top' (per node CPU, memory, GPUs, store, tasks) is its
// own command once it is in the table; until then `top` is a live view of 'cumulus status'.
constexpr const char* kTopCommand = "top";
constexpr const char* kTopFallback = "status";

bool Has(const std::vector<std::string>& args, const std::string& flag) {
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == flag || a.rfind(flag + "=", 0) == 0) return true;
  }
  return false;
}

bool WantsHelp(const std::vector<std::string>& args) {
  return Has(args, "--help") || Has(args, "-h");
}

// Runs `cumulus ARGS...` as a child process of this binary and waits for it. Ctrl-C reaches it
// (it is in the terminal's foreground process group) and not the shell, which waits on.
int RunChild(const std::vector<std::string>& words) {
  std::vector<std::string> argv = {"cumulus"};
  argv.insert(argv.end(), words.begin(), words.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    Complain("cannot start '" + words[0] + "': fork failed");
    return 1;
  }
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    execv("/proc/self/exe", raw.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

}  // namespace

void Complain(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "cumulus: %s\n", message.c_str());
  std::fflush(stderr);
}

int Session::Execute(const std::string& line) {
  auto words = Tokenize(line);
  if (!words.ok()) {
    Complain(words.status().message());
    return 2;
  }
  if (!words->empty() && (*words)[0] == "cumulus") words->erase(words->begin());
  if (words->empty()) return 0;
  const std::string& name = (*words)[0];
  if (name == "exit" || name == "quit") {
    done_ = true;
    return 0;
  }
  if (name == "help" && words->size() == 1) return Help();
  if (name == "watch" || name == "top") return Watch(*words, name);
  return Run(*words, /*confirm=*/true);
}

int Session::Run(const std::vector<std::string>& words, bool confirm) {
  const std::string& name = words[0];
  if (name == "help") {
    if (words[1] == "watch" || words[1] == "top") return Watch({words[1], "--help"}, words[1]);
    return Run({words[1], "--help"}, false);
  }
  // A sub-form ("stop trial ...") has its own row: stopping a trial needs the head and asks
  // first, while plain "stop" stops this machine's processes.
  size_t used = 1;
  const Command* command =
      FindCommand(name, std::vector<std::string>(words.begin() + 1, words.end()), &used);
  if (!command) {
    Complain("unknown command '" + name + "' (type 'help' for the commands)");
    return 2;
  }
  if (name == "shell") {
    Complain("this is the shell already ('exit' leaves it)");
    return 2;
  }
  std::vector<std::string> args(words.begin() + static_cast<long>(used), words.end());
  if (command->changes_state && options_.read_only && !WantsHelp(args)) {
    Complain("'" + std::string(command->name) +
             "' changes the cluster and this shell is read-only (--read-only)");
    return 1;
  }
  if (command->destructive && !WantsHelp(args)) {
    if (options_.read_only) {
      Complain("'" + std::string(command->name) +
               "' changes the cluster and this shell is read-only (--read-only)");
      return 1;
    }
    if (confirm && options_.confirm && !Confirm(words)) {
      std::printf("Not done.\n");
      std::fflush(stdout);
      return 1;
    }
  }
  return RunCommand(*command, std::move(args));
}

int Session::RunCommand(const Command& command, std::vector<std::string> args) {
  bool help = WantsHelp(args);
  if (command.takes_address && !help) {
    // The shell's --address and --token-file, unless the line gives its own (before a submit's
    // "--", after which the words are the program's).
    std::vector<std::string> add;
    if (!options_.address.empty() && !Has(args, "--address")) {
      add.insert(add.end(), {"--address", options_.address});
    }
    if (!options_.token_file.empty() && !Has(args, "--token-file")) {
      add.insert(add.end(), {"--token-file", options_.token_file});
    }
    args.insert(std::find(args.begin(), args.end(), "--"), add.begin(), add.end());
    CheckHeadBefore();
  }
  ClearInterrupt();
  int rc;
  if (command.own_process) {
    // A sub-form's name is two words ("object-store serve"): each is an argument.
    auto words = Tokenize(command.name).value();
    words.insert(words.end(), args.begin(), args.end());
    rc = RunChild(words);
  } else {
    rc = command.run(args);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  if (command.takes_address && !help) CheckHeadAfter(rc);
  return rc;
}

// A command that failed may have lost the head: it is asked once (briefly) whether it answers;
// the next command that needs it says when it answers again.
void Session::CheckHeadAfter(int rc) {
  if (rc == 0 || rc == 2 || rc == kInterruptedExit) return;
  auto address = ResolveAddress(options_.address);
  auto token = ResolveToken(options_.token_file);
  if (!address.ok() || !token.ok()) return;
  ControlClientOptions o;
  o.connect_timeout = std::chrono::seconds(1);
  o.request_timeout = std::chrono::seconds(1);
  head_lost_ = !ControlClient::Connect(*address, *token, o).ok();
}

void Session::CheckHeadBefore() {
  if (!head_lost_) return;
  auto address = ResolveAddress(options_.address);
  auto token = ResolveToken(options_.token_file);
  if (!address.ok() || !token.ok()) return;
  ControlClientOptions o;
  o.connect_timeout = std::chrono::seconds(2);
  o.request_timeout = std::chrono::seconds(2);
  if (ControlClient::Connect(*address, *token, o).ok()) {
    head_lost_ = false;
    Complain("reconnected to the head at " + address->ToString());
  }
}

bool Session::Confirm(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& w : words) line += (line.empty() ? "" : " ") + Quote(w);
  // Asked where the person sees it: stdout on a terminal, else stderr (`shell > session.log`),
  // else the terminal the answer is read from (`shell &> session.log`: stdin is that terminal).
  std::FILE* ask = options_.interactive ? stdout : stderr;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> tty(nullptr, &std::fclose);
  if (!isatty(fileno(ask))) {
    tty.reset(std::fopen("/dev/tty", "w"));
    if (tty) ask = tty.get();
  }
  std::fflush(stdout);
  std::fprintf(ask, "Run '%s'? [y/N] ", line.c_str());
  std::fflush(ask);
  std::string answer;
  char c;
  ClearInterrupt();
  while (!Interrupted()) {
    // The wake pipe beside stdin: a Ctrl-C delivered to another thread still ends the question.
    pollfd p[2] = {{STDIN_FILENO, POLLIN, 0}, {InterruptWakeFd(), POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (Interrupted()) break;
    if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t n = read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') break;
    answer += c;
  }
  if (Interrupted()) std::fprintf(ask, "\n");
  return !Interrupted() && !answer.empty() && (answer[0] == 'y' || answer[0] == 'Y');
}

int Session::Watch(std::vector<std::string> words, const std::string& builtin) {
  std::chrono::milliseconds interval = options_.default_interval;
  size_t i = 1;
  for (; i < words.size() && words[i].rfind("-", 0) == 0; ++i) {
    std::string flag = words[i], value;
    if (flag == "--help" || flag == "-h") {
      std::printf(
          "Usage:\n  watch [--interval SECONDS] COMMAND [ARGS...]   redraws COMMAND's output\n"
          "  top [--interval SECONDS] [ARGS...]               live view of 'cumulus %s'\n"
          "Any key (or Ctrl-C) returns to the prompt. Not on a terminal, the command runs once.\n",
          FindCommand(kTopCommand) ? kTopCommand : kTopFallback);
      // top's ARGS are its command's own flags: show them too.
      const Command* shown = builtin == "top" ? FindCommand(kTopCommand) : nullptr;
      if (!shown) return 0;
      std::printf("\n");
      return RunCommand(*shown, {"--help"});
    }
    if (size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (flag == "--interval" || flag == "-n") {
      if (i + 1 >= words.size()) {
        Complain(builtin + ": --interval needs a number of seconds");
        return 2;
      }
      value = words[++i];
    }
    if (flag != "--interval" && flag != "-n") {
      if (builtin == "top") break;  // the rest are top's own flags
      Complain(builtin + ": unknown flag '" + flag + "' (watch [--interval S] COMMAND ...)");
      return 2;
    }
    auto seconds = ParseReal("--interval", value, {0.2, 3600, "seconds"});
    if (!seconds.ok()) {
      Complain(builtin + ": " + seconds.status().message());
      return 2;
    }
    interval = std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000));
  }
  std::vector<std::string> command_words(words.begin() + static_cast<long>(i), words.end());
  if (builtin == "top") {
    command_words.insert(command_words.begin(),
                         FindCommand(kTopCommand) ? kTopCommand : kTopFallback);
  }
  if (command_words.empty()) {
    Complain("watch needs a command, e.g. 'watch status' or 'watch trials EXPERIMENT'");
    return 2;
  }
  if (command_words[0] == "cumulus") command_words.erase(command_words.begin());
  const Command* command = command_words.empty() ? nullptr : FindCommand(command_words[0]);
  if (!command) {
    Complain("unknown command '" + (command_words.empty() ? "" : command_words[0]) +
             "' (type 'help' for the commands)");
    return 2;
  }
  if (command->destructive || command->changes_state || command->own_process ||
      command->name == std::string("shell")) {
    Complain(std::string("'") + command->name + "' cannot be watched: watch shows listings");
    return 2;
  }
  std::vector<std::string> args(command_words.begin() + 1, command_words.end());
  if (!options_.interactive) return RunCommand(*command, args);  // a pipe: once, plainly
  LiveViewOptions view;
  for (const std::string& w : command_words) view.title += (view.title.empty() ? "" : " ") + w;
  view.interval = interval;
  ClearInterrupt();
  int rc = RunLiveView([&] { return RunCommand(*command, args); }, view);
  ClearInterrupt();
  return rc == kInterruptedExit ? 0 : rc;
}

int Session::Help() {
  std::string text = MainHelp();
  // The command list of `cumulus --help`, then the shell's own commands.
  size_t from = text.find("Commands:"), to = text.find("\nOptions:");
  std::printf("%s", text.substr(from, to - from).c_str());
  std::printf(
      "  watch           watch [--interval S] COMMAND ...: redraw a listing until a key\n"
      "  top             a live view of the nodes (any key returns)\n"
      "  help CMD        a command's options;  exit, quit, Ctrl-D: leave\n"
      "Tab completes commands, flags and ids; Ctrl-C stops the running command.\n");
  std::fflush(stdout);
  return 0;
}

}  // namespace cumulus::cli::shell
