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

// What was written to stdout and stderr (through stdio and straight to the descriptors) before a
// Flush has been shipped when it returns, in the order written.
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
    std::string a = "out " + std::to_string(i) + "\n";
    std::string b = "err " + std::to_string(i) + "\n";
    std::string c = "raw " + std::to_string(i) + "\n";
    std::printf("%s", a.c_str());
    std::fprintf(stderr, "%s", b.c_str());
    ASSERT_EQ(write(1, c.data(), c.size()), static_cast<ssize_t>(c.size()));
    expected += a + b + c;
    ASSERT_TRUE(capture->Flush()) << "flush " << i;
    ASSERT_EQ(shipped.Get(), expected) << "after flush " << i;
  }
  capture.reset();
  EXPECT_EQ(shipped.Get(), expected);
}

// Output never flushed is shipped when the capture ends, and fds 1 and 2 are given back.
TEST(OutputCaptureTest, TheEndShipsWhatIsLeft) {
  Shipped shipped;
  OutputCapture::Options o;
  o.ship_interval = std::chrono::hours(1);
  auto capture = Capture(shipped, o);
  ASSERT_NE(capture, nullptr);
  std::printf("left at the end\n");
  std::fprintf(stderr, "and on stderr\n");
  capture.reset();
  EXPECT_EQ(shipped.Get(), "left at the end\nand on stderr\n");
  size_t chunks = shipped.chunks;
  std::printf("not captured any more\n");
  std::fflush(stdout);
  EXPECT_EQ(shipped.Get(), "left at the end\nand on stderr\n");
  EXPECT_EQ(shipped.chunks, chunks);
}

}  // namespace
}  // namespace cumulus::tune
