#include "runtime/tune/output_capture.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <string>

namespace cumulus::tune {
namespace {

// What the capture shipped, in order.
struct Shipped {
  std::mutex mu;
  std::string bytes;
  size_t chunks = 0;
  std::string Get() {
    std::lock_guard<std::mutex> lock(mu);
    return bytes;
  }
};

std::unique_ptr<OutputCapture> Capture(Shipped& shipped, OutputCapture::Options options) {
  return OutputCapture::Start(
      [&shipped](const std::string& b) {
        std::lock_guard<std::mutex> lock(shipped.mu);
        shipped.bytes += b;
        shipped.chunks++;
      },
      options);
}

// A Flush is on every report's path: it is answered by waking the capture's thread, never by a
// timeout of that thread's. Its idle sleep is made an hour long here, so a Flush that did not wake
// it would give up after flush_timeout and return false (the bug this test was written for: every
// report of every trial waited up to 50 ms for the thread's poll to time out).
TEST(OutputCaptureTest, AFlushWakesTheThreadInsteadOfWaitingForItsTimeout) {
  Shipped shipped;
  OutputCapture::Options o;
  o.idle_wait = std::chrono::hours(1);
  o.flush_timeout = std::chrono::seconds(20);
  auto capture = Capture(shipped, o);
  ASSERT_NE(capture, nullptr);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(capture->Flush()) << "flush " << i;
  capture.reset();
  EXPECT_EQ(shipped.Get(), "");
}

// What was written to stdout and stderr (straight to the descriptors and through stdio) before a
// Flush has been shipped when it returns, in the order written. (stdio's stdout is written last
// in each round: whether it is buffered or not, it comes after the raw writes.)
TEST(OutputCaptureTest, OutputWrittenBeforeAFlushIsShippedWhenItReturns) {
  Shipped shipped;
  OutputCapture::Options o;
  o.idle_wait = std::chrono::hours(1);
  o.flush_timeout = std::chrono::seconds(20);
  o.ship_interval = std::chrono::hours(1);  // only a Flush (or the end) ships
  auto capture = Capture(shipped, o);
  ASSERT_NE(capture, nullptr);
  std::string expected;
  for (int i = 0; i < 20; ++i) {
    std::string err = "err " + std::to_string(i) + "\n";
    std::string raw = "raw " + std::to_string(i) + "\n";
    std::string out = "out " + std::to_string(i) + "\n";
    ASSERT_EQ(write(2, err.data(), err.size()), static_cast<ssize_t>(err.size()));
    ASSERT_EQ(write(1, raw.data(), raw.size()), static_cast<ssize_t>(raw.size()));
    std::fputs(out.c_str(), stdout);
    expected += err + raw + out;
    ASSERT_TRUE(capture->Flush()) << "flush " << i;
    ASSERT_EQ(shipped.Get(), expected) << "after flush " << i;
  }
  capture.reset();
  EXPECT_EQ(shipped.Get(), expected);
}

// Output never flushed is shipped when the capture ends (what stdio still holds too), and fds 1
// and 2 are given back.
TEST(OutputCaptureTest, TheEndShipsWhatIsLeft) {
  Shipped shipped;
  OutputCapture::Options o;
  o.ship_interval = std::chrono::hours(1);
  auto capture = Capture(shipped, o);
  ASSERT_NE(capture, nullptr);
  const std::string out = "raw out\n", err = "raw err\n";
  ASSERT_EQ(write(1, out.data(), out.size()), static_cast<ssize_t>(out.size()));
  ASSERT_EQ(write(2, err.data(), err.size()), static_cast<ssize_t>(err.size()));
  std::fputs("in stdio's buffer", stdout);  // no newline: out when the capture ends
  capture.reset();
  const std::string expected = out + err + "in stdio's buffer";
  EXPECT_EQ(shipped.Get(), expected);
  size_t chunks = shipped.chunks;
  std::printf("\nnot captured any more\n");
  std::fflush(stdout);
  EXPECT_EQ(shipped.Get(), expected);
  EXPECT_EQ(shipped.chunks, chunks);
}

}  // namespace
}  // namespace cumulus::tune
