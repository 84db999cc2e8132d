#include "runtime/tune/output_capture.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace cumulus::tune {

std::unique_ptr<OutputCapture> OutputCapture::Start(Ship ship, Options options) {
  int fds[2], wake[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(fds[0]);
    close(fds[1]);
    return nullptr;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  auto c = std::unique_ptr<OutputCapture>(new OutputCapture(std::move(ship), options));
  c->saved_out_ = dup(1);
  c->saved_err_ = dup(2);
  c->read_ = fds[0];
  c->wake_read_ = wake[0];
  c->wake_write_ = wake[1];
  dup2(fds[1], 1);  // (dup2 leaves the new descriptors open across exec: children write here too)
  dup2(fds[1], 2);
  close(fds[1]);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  c->thread_ = std::thread([p = c.get()] { p->Run(); });
  return c;
}

OutputCapture::~OutputCapture() {
  std::fflush(stdout);
  std::fflush(stderr);
  dup2(saved_out_, 1);  // the pipe's last write end closes: the thread reads to the end
  dup2(saved_err_, 2);
  if (thread_.joinable()) thread_.join();
  close(read_);
  close(wake_read_);
  close(wake_write_);
  close(saved_out_);
  close(saved_err_);
}

bool OutputCapture::Flush() {
  std::fflush(stdout);  // in the pipe before the request: the thread reads it before it answers
  std::fflush(stderr);
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t want = ++flush_requested_;
  Wake();
  return cv_.wait_for(lock, options_.flush_timeout, [&] { return flush_done_ >= want || ended_; });
}

// A byte in the wake pipe: the thread's poll returns and it reads the flush request. One that
// does not fit (the pipe is full) is not needed: the thread has wake-ups to read already.
void OutputCapture::Wake() { (void)!write(wake_write_, "w", 1); }

void OutputCapture::Run() {
  std::string pending;
  auto last_ship = std::chrono::steady_clock::now();
  char buf[1 << 14];
  while (true) {
    uint64_t flush_wanted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      flush_wanted = flush_requested_;
    }
    bool flushing = flush_wanted > flush_done_seen_;
    // A request made after this read writes a wake byte, so the poll below returns for it.
    int timeout_ms = -1;
    if (flushing) {
      timeout_ms = 0;  // read what is there, then answer
    } else {
      if (!pending.empty()) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            last_ship + options_.ship_interval - std::chrono::steady_clock::now());
        timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()) + 1);
      }
      if (options_.idle_wait.count() >= 0) {
        int idle = static_cast<int>(std::min<int64_t>(options_.idle_wait.count(), 1 << 30));
        timeout_ms = timeout_ms < 0 ? idle : std::min(timeout_ms, idle);
      }
    }
    pollfd p[2] = {{read_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    int ready = poll(p, 2, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (p[1].revents & POLLIN) {
      char drain[64];
      while (read(wake_read_, drain, sizeof(drain)) > 0) {
      }
    }
    bool eof = ready < 0;  // poll itself failed: nothing more can be read
    bool readable = ready > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
    if (readable) {
      ssize_t n = read(read_, buf, sizeof(buf));
      if (n > 0) {
        (void)!write(saved_out_, buf, static_cast<size_t>(n));
        pending.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        eof = true;  // every write end is closed (or the pipe failed): nothing more comes
      }
    }
    bool drained = !readable;  // nothing more to read right now
    auto now = std::chrono::steady_clock::now();
    if (!pending.empty() &&
        (eof || (flushing && drained) || pending.size() >= options_.ship_bytes ||
         now - last_ship >= options_.ship_interval)) {
      ship_(pending);
      pending.clear();
      last_ship = now;
    }
    if (flushing && (drained || eof)) {
      flush_done_seen_ = flush_wanted;
      std::lock_guard<std::mutex> lock(mu_);
      flush_done_ = flush_wanted;
      cv_.notify_all();
    }
    if (eof) {
      std::lock_guard<std::mutex> lock(mu_);
      ended_ = true;
      cv_.notify_all();
      return;
    }
  }
}

}  // namespace cumulus::tune
