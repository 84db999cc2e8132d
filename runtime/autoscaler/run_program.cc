#include "runtime/autoscaler/run_program.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <sstream>

#include "runtime/base/spawn.h"

extern char** environ;

namespace cumulus {

namespace {

int MillisUntil(TimePoint deadline) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SystemClock::Get().Now())
          .count();
  if (left <= 0) return 0;
  return left > 60'000 ? 60'000 : static_cast<int>(left);
}

// Reads what is there (non-blocking descriptors); false once the pipe is closed.
bool Drain(int fd, std::string* into, size_t max) {
  char buf[8192];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      size_t room = into->size() < max ? max - into->size() : 0;
      into->append(buf, std::min(room, static_cast<size_t>(n)));
      continue;
    }
    if (n == 0) return false;
    return errno == EAGAIN || errno == EINTR;
  }
}

}  // namespace

Result<ProgramResult> RunProgram(const std::vector<std::string>& argv, TimePoint deadline,
                                 const RunProgramOptions& options) {
  if (argv.empty() || argv[0].empty()) return Status::InvalidArgument("no program to run");
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
  }
  if (pipe2(err, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(out[0]);
    close(out[1]);
    return Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);

  // The environment: ours, with the additions replacing variables of the same name.
  std::map<std::string, std::string> added(options.env.begin(), options.env.end());
  std::vector<std::string> env_items;
  for (char** e = environ; e && *e; ++e) {
    std::string item(*e);
    if (!added.count(item.substr(0, item.find('=')))) env_items.push_back(item);
  }
  for (auto& [k, v] : added) env_items.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& item : env_items) envp.push_back(item.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);

  CleanSpawnAttributes attributes(/*own_process_group=*/true);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argp[0], &actions, attributes.get(), argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(out[0]);
    close(err[0]);
    return Status::NotFound("cannot run " + argv[0] + ": " + std::strerror(rc));
  }

  // A descriptor that becomes readable when the child exits (Linux 5.3+); without it, check
  // every 20 ms.
  int exit_fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  ProgramResult result;
  bool out_open = true, err_open = true, exited = false;
  int status = 0;
  while (!exited) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    int wait_ms = MillisUntil(deadline);
    if (wait_ms == 0) break;
    pollfd fds[3];
    int n = 0;
    if (out_open) fds[n++] = {out[0], POLLIN, 0};
    if (err_open) fds[n++] = {err[0], POLLIN, 0};
    if (exit_fd >= 0) fds[n++] = {exit_fd, POLLIN, 0};
    if (exit_fd < 0) wait_ms = std::min(wait_ms, 20);
    if (n == 0) wait_ms = std::min(wait_ms, 20);  // unreachable with a pidfd
    poll(fds, n, wait_ms);
    if (out_open) out_open = Drain(out[0], &result.out, options.max_output);
    if (err_open) err_open = Drain(err[0], &result.err, options.max_output);
  }
  if (!exited) {
    result.timed_out = true;
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
  } else {
    // What it wrote before it exited (children it left behind are not waited for).
    if (out_open) Drain(out[0], &result.out, options.max_output);
    if (err_open) Drain(err[0], &result.err, options.max_output);
  }
  if (exit_fd >= 0) close(exit_fd);
  close(out[0]);
  close(err[0]);
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

Status ProgramFailure(const std::string& what, const ProgramResult& result, double timeout_s) {
  std::string err = result.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
  if (err.size() > 400) err = "..." + err.substr(err.size() - 400);
  for (size_t at = err.find('\n'); at != std::string::npos; at = err.find('\n', at)) {
    err.replace(at, 1, " | ");
  }
  std::string tail = err.empty() ? "" : ": " + err;
  if (result.timed_out) {
    std::ostringstream s;
    s << what << " did not finish within " << timeout_s << " s (killed)" << tail;
    return Status::TimedOut(s.str());
  }
  if (result.signal != 0) {
    return Status::Unavailable(what + " was killed by signal " + std::to_string(result.signal) +
                               tail);
  }
  return Status::Unavailable(what + " failed (exit " + std::to_string(result.exit_code) + ")" +
                             (err.empty() ? ", printing nothing on stderr" : tail));
}

std::string ShowArgv(const std::vector<std::string>& argv) {
  std::string out;
  for (auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`") == std::string::npos;
    if (plain) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

}  // namespace cumulus
