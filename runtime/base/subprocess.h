// Subprocess: runs a program (tests, demos, later the node daemon's workers) with pipes to its
// stdin and stdout, and bounded waits on what it prints. Used by tests that start, kill and restart
// real processes.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/spawn.h"

namespace cumulus {

class Subprocess {
 public:
  // With `merge_stderr`, the process's stderr goes to the same pipe as its stdout.
  explicit Subprocess(std::vector<std::string> argv, bool merge_stderr = false) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      ResetSignalsInChild();
      dup2(in[0], STDIN_FILENO);
      dup2(out[1], STDOUT_FILENO);
      if (merge_stderr) dup2(out[1], STDERR_FILENO);
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    stdout_ = out[0];
  }
  ~Subprocess() {
    if (stdin_ >= 0) close(stdin_);
    if (running()) {
      Kill(SIGKILL);
      Wait(std::chrono::seconds(10));
    }
    if (stdout_ >= 0) close(stdout_);
  }
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  // True while the process has not exited (checks now, without waiting).
  bool running() {
    if (pid_ <= 0 || exit_status_) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_status_ = status;
      return false;
    }
    return true;
  }

  // Returns the next line the process prints that starts with `prefix`, or nullopt if the process
  // closed its stdout or `timeout` passed first. The lines passed over are kept for Skipped().
  std::optional<std::string> WaitForLine(const std::string& prefix,
                                         std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      size_t nl;
      while ((nl = buffered_.find('\n')) != std::string::npos) {
        std::string line = buffered_.substr(0, nl);
        buffered_.erase(0, nl + 1);
        if (line.rfind(prefix, 0) == 0) return line;
        skipped_ += line + "\n";
        if (skipped_.size() > kSkippedKept) skipped_.erase(0, skipped_.size() - kSkippedKept);
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{stdout_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      ssize_t n = read(stdout_, buf, sizeof(buf));
      if (n <= 0) return std::nullopt;
      buffered_.append(buf, static_cast<size_t>(n));
    }
  }

  // Everything the process prints until it closes its output, or `timeout` passes.
  std::string ReadAll(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{stdout_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      ssize_t n = read(stdout_, buf, sizeof(buf));
      if (n <= 0) break;
      buffered_.append(buf, static_cast<size_t>(n));
    }
    std::string out;
    out.swap(buffered_);
    return out;
  }

  // The last lines WaitForLine passed over (up to 8 KiB): what a process printed before it died
  // without the line a test waited for.
  const std::string& Skipped() const { return skipped_; }

  void CloseStdin() {
    if (stdin_ >= 0) close(stdin_);
    stdin_ = -1;
  }
  void Kill(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }
  // Waits for the process to exit; returns its wait status, or nullopt on timeout.
  std::optional<int> Wait(std::chrono::milliseconds timeout) {
    if (exit_status_) return exit_status_;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      int status = 0;
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) return exit_status_ = status;
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      // A child's exit has no pollable descriptor here; re-check every millisecond.
      usleep(1000);
    }
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1, stdout_ = -1;
  static constexpr size_t kSkippedKept = 8192;
  std::string buffered_;
  std::string skipped_;
  std::optional<int> exit_status_;
};

// The directory of the running executable (build/bin for our programs).
inline std::string ExecutableDir() {
  char self[4096] = {0};
  if (readlink("/proc/self/exe", self, sizeof(self) - 1) <= 0) return ".";
  std::string s(self);
  return s.substr(0, s.rfind('/'));
}

// Calls `condition` until it returns true or `timeout` passes; returns its last value.
template <typename F>
bool WaitUntil(F condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    usleep(2000);
  }
  return true;
}

}  // namespace cumulus
