// A live view on the terminal: see live_view.h.
#include "runtime/cli/shell/live_view.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <vector>

#include "runtime/cli/interrupt.h"

namespace cumulus::cli::shell {

namespace {

void WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// The terminal in character mode without echo while a view is up; restored when it ends.
class CharacterMode {
 public:
  CharacterMode() {
    if (tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));  // ISIG stays: Ctrl-C is SIGINT
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    active_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  ~CharacterMode() {
    if (active_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }

 private:
  termios saved_{};
  bool active_ = false;
};

// Waits up to `d` for a key; true if one was pressed (it is consumed) or Ctrl-C came.
bool KeyOrInterrupt(std::chrono::milliseconds d) {
  auto deadline = std::chrono::steady_clock::now() + d;
  while (!Interrupted()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{STDIN_FILENO, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 200)));
    if (n > 0) {
      char buf[64];
      ssize_t got = read(STDIN_FILENO, buf, sizeof(buf));  // the key and what it sent with it
      (void)got;
      return true;
    }
  }
  return true;
}

std::string Clock() {
  std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%H:%M:%S", std::localtime(&t));
  return buf;
}

}  // namespace

std::string CaptureOutput(const std::function<int()>& fn, int* rc) {
  std::fflush(stdout);
  std::fflush(stderr);
  int fd = memfd_create("cumulus-view", MFD_CLOEXEC);
  if (fd < 0) {
    *rc = fn();
    return "";
  }
  int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);
  dup2(fd, STDOUT_FILENO);
  dup2(fd, STDERR_FILENO);
  *rc = fn();
  std::fflush(stdout);
  std::fflush(stderr);
  dup2(saved_out, STDOUT_FILENO);
  dup2(saved_err, STDERR_FILENO);
  close(saved_out);
  close(saved_err);
  std::string out;
  off_t size = lseek(fd, 0, SEEK_END);
  if (size > 0) {
    out.resize(static_cast<size_t>(size));
    ssize_t n = pread(fd, out.data(), out.size(), 0);
    out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  close(fd);
  return out;
}

int RunLiveView(const std::function<int()>& draw, const LiveViewOptions& options) {
  CharacterMode mode;
  WriteAll(STDOUT_FILENO, "\x1b[?1049h\x1b[?25l");  // the alternate screen, no cursor
  int rc = 0;
  while (!Interrupted()) {
    std::string body = CaptureOutput(draw, &rc);
    winsize ws{};
    size_t rows = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 2 ? ws.ws_row : 24;
    size_t cols = ws.ws_col > 10 ? ws.ws_col : 80;
    std::string frame = "\x1b[H";
    char every[32];
    std::snprintf(every, sizeof(every),
                  "Every %gs: ", static_cast<double>(options.interval.count()) / 1000.0);
    std::string head = every + options.title + "   " + Clock() + "   (any key: back to the prompt)";
    frame += head.substr(0, cols) + "\x1b[K\r\n\x1b[K\r\n";
    // The body, cut to the screen: each line cleared to its end, the rest of the screen below.
    size_t shown = 2, start = 0;
    while (start < body.size() && shown + 1 < rows) {
      size_t end = body.find('\n', start);
      if (end == std::string::npos) end = body.size();
      std::string line = body.substr(start, end - start);
      if (line.size() > cols) line.resize(cols);
      frame += line + "\x1b[K\r\n";
      ++shown;
      start = end + 1;
    }
    frame += "\x1b[J";
    WriteAll(STDOUT_FILENO, frame);
    if (KeyOrInterrupt(options.interval)) break;
  }
  WriteAll(STDOUT_FILENO, "\x1b[?25h\x1b[?1049l");
  return rc;
}

}  // namespace cumulus::cli::shell
