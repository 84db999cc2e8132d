// OutputCapture: a trial's stdout and stderr while it runs. Takes over fds 1 and 2 with a pipe; a
// thread copies everything to the original stdout and hands it to a `Ship` function in chunks
// (every `ship_interval`, every `ship_bytes`, at a Flush, and at the end).
//
// Flush is on every report's path (a trial host flushes at the end of each iteration), so it
// must cost a thread hop, not a timeout: the thread sleeps until output, a Flush or the end
// wakes it, and a Flush wakes it through a pipe of its own.
//
// Thread safety: Flush may be called from any thread; `ship` runs on the capture's thread only.
// One capture per process at a time (it owns fds 1 and 2).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace cumulus::tune {

class OutputCapture {
 public:
  using Ship = std::function<void(const std::string& bytes)>;

  struct Options {
    // Output held is shipped at least this often however chatty the trial, and once this many
    // bytes are held.
    std::chrono::milliseconds ship_interval{500};
    size_t ship_bytes = 64u << 10;
    // How long Flush waits for the thread before it gives up (a ship that hangs on the head).
    std::chrono::milliseconds flush_timeout{5000};
    // With nothing held, how long the thread sleeps before it looks again; < 0: until output, a
    // Flush or the end wakes it. Not needed for correctness: a test sets it long to show that a
    // Flush never waits for it.
    std::chrono::milliseconds idle_wait{-1};
  };

  // Starts capturing; nullptr if the pipes cannot be made (output then goes where it went).
  static std::unique_ptr<OutputCapture> Start(Ship ship, Options options);
  static std::unique_ptr<OutputCapture> Start(Ship ship) { return Start(std::move(ship), {}); }

  // Gives fds 1 and 2 back and returns once everything written to them has been shipped (the
  // pipe's last write end closes: the thread reads to the end). A child process that still
  // holds them keeps this waiting until it closes them.
  ~OutputCapture();

  // Returns once everything written to stdout/stderr before the call has been shipped: true, or
  // false if that took longer than `flush_timeout` (or the capture ended first: true).
  bool Flush();

 private:
  OutputCapture(Ship ship, Options options) : ship_(std::move(ship)), options_(options) {}
  void Run();
  void Wake();

  const Ship ship_;
  const Options options_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t flush_requested_ = 0, flush_done_ = 0;  // under mu_
  bool ended_ = false;                             // under mu_
  uint64_t flush_done_seen_ = 0;                   // the thread's own copy
  int saved_out_ = -1, saved_err_ = -1, read_ = -1;
  int wake_read_ = -1, wake_write_ = -1;  // Flush -> the thread
  std::thread thread_;
};

}  // namespace cumulus::tune
