// Terminal: `cumulus shell ARGS...` on a pseudo-terminal (forkpty), typed into and read back as a
// person would see it; shared by the tests that drive the shell (shell_test, shell_session_test).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "cluster_fixture.h"

namespace cumulus {

// What a terminal would show, roughly: the output with escape sequences and carriage returns
// taken out (enough to find text in).
inline std::string Plain(const std::string& raw) {
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '\x1b' && i + 1 < raw.size()) {
      char k = raw[++i];
      if (k == '[') {  // CSI: parameters, then a final byte
        while (i + 1 < raw.size() && !(raw[i + 1] >= 0x40 && raw[i + 1] <= 0x7e)) ++i;
        ++i;
      } else if (k == ']') {  // OSC: to BEL or ESC-backslash
        while (i + 1 < raw.size() && raw[i + 1] != '\x07' && raw[i + 1] != '\x1b') ++i;
        ++i;
      }
      continue;
    }
    if (c == '\r' || c == '\x07' || c == '\b') continue;
    out += c;
  }
  return out;
}

// `cumulus shell ARGS...` on a pseudo-terminal of 120x40, with CUMULUS_HISTORY=`history`; its
// stdout goes to the file `stdout_file` instead when one is named (and its stderr too with
// `stderr_too`: `shell &> FILE`). The shell is killed when the Terminal goes, if it has not
// exited.
class Terminal {
 public:
  Terminal(const std::vector<std::string>& args, const std::string& history,
           const std::string& stdout_file = "", bool stderr_too = false) {
    winsize ws{};
    ws.ws_row = 40;
    ws.ws_col = 120;
    pid_ = forkpty(&fd_, nullptr, nullptr, &ws);
    if (pid_ == 0) {
      setenv("TERM", "xterm", 1);
      setenv("CUMULUS_HISTORY", history.c_str(), 1);
      if (!stdout_file.empty()) {
        int out = open(stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (out < 0 || dup2(out, STDOUT_FILENO) < 0) _exit(126);
        if (stderr_too && dup2(out, STDERR_FILENO) < 0) _exit(126);
        close(out);
      }
      std::vector<std::string> argv = {kCumulus, "shell"};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> raw;
      for (auto& a : argv) raw.push_back(a.data());
      raw.push_back(nullptr);
      execv(raw[0], raw.data());
      _exit(127);
    }
  }
  ~Terminal() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;
  bool started() const { return pid_ > 0 && fd_ >= 0; }

  void Type(const std::string& keys) {
    ASSERT_EQ(write(fd_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }
  // From now on, WaitFor looks only at what comes after this.
  void Mark() {
    for (pollfd p{fd_, POLLIN, 0}; poll(&p, 1, 0) > 0 && Drain(std::chrono::milliseconds(0));) {
    }
    mark_ = screen_.size();
  }
  // Waits until `text` shows after the mark; true if it did before the deadline.
  bool WaitFor(const std::string& text,
               std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    return WaitUntilShown([&](const std::string& shown) { return shown.find(text) != npos; },
                          timeout);
  }
  // Waits until `texts` show after the mark in this order (each after the one before it): e.g.
  // the "^C" the terminal echoes, then the prompt drawn after it, never an older prompt.
  bool WaitForInOrder(std::initializer_list<std::string> texts,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    return WaitUntilShown(
        [&](const std::string& shown) {
          size_t at = 0;
          for (const std::string& t : texts) {
            at = shown.find(t, at);
            if (at == npos) return false;
            at += t.size();
          }
          return true;
        },
        timeout);
  }
  // A live view (runtime/cli/shell/live_view.cc) draws each frame from the screen's top (ESC [H)
  // to a clear of the rest (ESC [J). Waits until the last frame drawn completely after the mark
  // satisfies `pred` (given its text, escape codes taken out).
  bool WaitForFrame(const std::function<bool(const std::string&)>& pred,
                    std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    return WaitUntilRaw([&](const std::string& raw) { return pred(LastFrameOf(raw)); }, timeout);
  }
  // The last frame drawn completely after the mark ("" if none).
  std::string LastFrame() { return LastFrameOf(screen_.substr(mark_)); }
  // Everything shown after the mark, escape codes taken out.
  std::string Since() { return Plain(screen_.substr(mark_)); }
  std::string Raw() { return screen_; }
  // Waits for the shell to exit; its wait status, or -1.
  int Exit(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return status;
      }
      Drain(std::chrono::milliseconds(100));  // a full pty would block its writes
    }
    return -1;
  }

 private:
  static constexpr size_t npos = std::string::npos;

  static std::string LastFrameOf(const std::string& raw) {
    size_t end = raw.rfind("\x1b[J");
    if (end == npos) return "";
    size_t start = raw.rfind("\x1b[H", end);
    if (start == npos) return "";
    return Plain(raw.substr(start, end - start));
  }
  bool WaitUntilShown(const std::function<bool(const std::string&)>& pred,
                      std::chrono::milliseconds timeout) {
    return WaitUntilRaw([&](const std::string& raw) { return pred(Plain(raw)); }, timeout);
  }
  // Waits until `pred` holds of what came after the mark (raw), reading as it comes.
  bool WaitUntilRaw(const std::function<bool(const std::string&)>& pred,
                    std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (pred(screen_.substr(mark_))) return true;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !Drain(left)) return pred(screen_.substr(mark_));
    }
  }
  // Reads what is there (waiting up to `wait` for something); false once the pty is closed.
  bool Drain(std::chrono::milliseconds wait) {
    pollfd p{fd_, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(wait.count()));
    if (n <= 0) return n == 0;
    char buf[4096];
    ssize_t got = read(fd_, buf, sizeof(buf));
    if (got <= 0) return false;
    screen_.append(buf, static_cast<size_t>(got));
    return true;
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  bool exited_ = false;
  std::string screen_;
  size_t mark_ = 0;
};

}  // namespace cumulus
