#include "runtime/metrics/http_endpoint.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "runtime/net/tcp.h"

namespace cumulus::metrics {
namespace {

using namespace std::chrono_literals;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Sends `request` on a fresh connection and reads until the endpoint closes it (or 10 s).
std::string Exchange(uint16_t port, const std::string& request, bool* closed = nullptr) {
  auto fd = ConnectTcp(HostPort{"127.0.0.1", port}, 5s);
  if (!fd.ok()) return "connect failed: " + fd.status().ToString();
  Status sent = SendAll(*fd, reinterpret_cast<const uint8_t*>(request.data()), request.size(), 5s);
  (void)sent;  // an oversized request may be cut short by the endpoint's answer
  std::string out;
  char buf[4096];
  bool eof = false;
  TimePoint deadline = SystemClock::Get().Now() + 10s;
  while (!eof && SystemClock::Get().Now() < deadline) {
    pollfd p{*fd, POLLIN, 0};
    if (poll(&p, 1, MillisUntil(deadline)) <= 0) break;
    ssize_t n = recv(*fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      eof = true;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  close(*fd);
  if (closed) *closed = eof;
  return out;
}

class EndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MetricsEndpointOptions o;
    o.max_request_bytes = 1024;
    o.request_timeout = 300ms;
    auto e = MetricsEndpoint::Start(o, [this] {
      renders_++;
      return std::string("# HELP up Up.\n# TYPE up gauge\nup 1\n");
    });
    ASSERT_TRUE(e.ok()) << e.status();
    endpoint_ = std::move(*e);
  }
  std::atomic<int> renders_{0};
  std::unique_ptr<MetricsEndpoint> endpoint_;
};

TEST_F(EndpointTest, ServesMetricsWithPrometheusContentType) {
  bool closed = false;
  std::string r = Exchange(
      endpoint_->port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: text/plain\r\n\r\n", &closed);
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << r;
  EXPECT_NE(r.find("Content-Length: 35\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("\r\n\r\n# HELP up Up.\n# TYPE up gauge\nup 1\n"), std::string::npos) << r;
  EXPECT_TRUE(closed);
  EXPECT_EQ(renders_, 1);
  // A query string is ignored; HEAD has no body.
  r = Exchange(endpoint_->port(), "HEAD /metrics?x=1 HTTP/1.0\n\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK", 0), 0u) << r;
  EXPECT_EQ(r.find("up 1"), std::string::npos) << r;
}

TEST_F(EndpointTest, AnswersWhatItDoesNotServeWithOneClearStatus) {
  struct Case {
    const char* request;
    const char* status;
  } cases[] = {
      {"GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found"},
      {"GET /metrics/../etc HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found"},
      {"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", "HTTP/1.1 405"},
      {"garbage\r\n\r\n", "HTTP/1.1 400 Bad Request"},
      {"GET /metrics\r\n\r\n", "HTTP/1.1 400 Bad Request"},
      {"GET  /metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request"},
      {"GET /metrics HTTP/2.0\r\n\r\n", "HTTP/1.1 400 Bad Request"},
      {"\x16\x03\x01\x02\x01\xfc\x03\x03\r\n\r\n", "HTTP/1.1 400 Bad Request"},  // TLS-like
  };
  for (auto& c : cases) {
    bool closed = false;
    std::string r = Exchange(endpoint_->port(), c.request, &closed);
    EXPECT_EQ(r.rfind(c.status, 0), 0u) << c.request << " -> " << r;
    EXPECT_EQ(Count(r, "HTTP/1.1 "), 1) << r;
    EXPECT_TRUE(closed) << c.request;
  }
  EXPECT_EQ(renders_, 0);
  // And it still serves.
  EXPECT_NE(Exchange(endpoint_->port(), "GET /metrics HTTP/1.1\r\n\r\n").find("up 1"),
            std::string::npos);
}

TEST_F(EndpointTest, AnOversizedRequestIsRefusedAndClosed) {
  // Headers that never end, well past the 1 KiB bound: one 431, then the connection closes.
  std::string huge = "GET /metrics HTTP/1.1\r\nX-Junk: " + std::string(256 * 1024, 'a');
  bool closed = false;
  std::string r = Exchange(endpoint_->port(), huge, &closed);
  EXPECT_EQ(r.rfind("HTTP/1.1 431", 0), 0u) << r.substr(0, 200);
  EXPECT_TRUE(closed);
  EXPECT_EQ(renders_, 0);
  EXPECT_NE(Exchange(endpoint_->port(), "GET /metrics HTTP/1.1\r\n\r\n").find("up 1"),
            std::string::npos);
}

TEST_F(EndpointTest, ARequestThatNeverEndsTimesOut) {
  bool closed = false;
  std::string r = Exchange(endpoint_->port(), "GET /metrics HTTP/1.1\r\nHost: slow", &closed);
  EXPECT_EQ(r.rfind("HTTP/1.1 408", 0), 0u) << r;
  EXPECT_TRUE(closed);
}

TEST_F(EndpointTest, SilentConnectionsDoNotStopOthersBeingServed) {
  // Idle connections beside a scrape: it goes through (for more of them than it serves at
  // once, see EndpointFullTest).
  std::vector<int> idle;
  for (int i = 0; i < 6; ++i) {
    auto fd = ConnectTcp(HostPort{"127.0.0.1", endpoint_->port()}, 5s);
    ASSERT_TRUE(fd.ok());
    idle.push_back(*fd);
  }
  EXPECT_NE(Exchange(endpoint_->port(), "GET /metrics HTTP/1.1\r\n\r\n").find("up 1"),
            std::string::npos);
  for (int fd : idle) close(fd);
}

// An endpoint that serves 4 connections at once, with a request timeout far longer than a scrape
// may wait, and three times as many connections as that, each of which sent `first` (maybe
// nothing) and then waits.
class EndpointFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MetricsEndpointOptions o;
    o.max_connections = kServed;
    o.request_timeout = 60s;
    auto e = MetricsEndpoint::Start(o, [] { return std::string("up 1\n"); });
    ASSERT_TRUE(e.ok()) << e.status();
    endpoint_ = std::move(*e);
  }
  void TearDown() override {
    for (int fd : waiting_) close(fd);
  }
  void Occupy(const std::string& first) {
    for (size_t i = 0; i < 3 * kServed; ++i) {
      auto fd = ConnectTcp(HostPort{"127.0.0.1", endpoint_->port()}, 5s);
      ASSERT_TRUE(fd.ok());
      waiting_.push_back(*fd);
      if (!first.empty()) {
        ASSERT_TRUE(
            SendAll(*fd, reinterpret_cast<const uint8_t*>(first.data()), first.size(), 5s).ok());
      }
    }
  }
  // A scrape beside them is answered, at once.
  void ExpectAScrapeAnswered() {
    auto start = SystemClock::Get().Now();
    std::string r = Exchange(endpoint_->port(), "GET /metrics HTTP/1.1\r\n\r\n");
    EXPECT_NE(r.find("up 1"), std::string::npos) << r;
    EXPECT_LT(SystemClock::Get().Now() - start, 5s);  // Exchange gives up after 10 s
  }
  static constexpr size_t kServed = 4;
  std::unique_ptr<MetricsEndpoint> endpoint_;
  std::vector<int> waiting_;  // oldest first
};

// Silent connections: the scrape displaces the oldest of them (before, it waited in the backlog
// until they timed out).
TEST_F(EndpointFullTest, AScrapeDisplacesTheOldestSilentConnection) {
  ASSERT_NO_FATAL_FAILURE(Occupy(""));
  ExpectAScrapeAnswered();
}

// Connections that each send the first byte of a request and then nothing (a slow-loris client):
// a scrape still displaces the oldest, and the displaced connections are closed, not left
// waiting.
TEST_F(EndpointFullTest, AScrapeDisplacesConnectionsThatTrickleTheirRequest) {
  ASSERT_NO_FATAL_FAILURE(Occupy("G"));
  ExpectAScrapeAnswered();
  // The first one accepted was displaced: it reads the end of its stream.
  pollfd p{waiting_[0], POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  char c;
  EXPECT_LE(recv(waiting_[0], &c, 1, 0), 0);
}

TEST(EndpointStartTest, APortInUseIsOneClearError) {
  auto first = MetricsEndpoint::Start({}, [] { return std::string(); });
  ASSERT_TRUE(first.ok());
  MetricsEndpointOptions o;
  o.port = (*first)->port();
  auto second = MetricsEndpoint::Start(o, [] { return std::string(); });
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("metrics endpoint"), std::string::npos)
      << second.status();
  EXPECT_NE(second.status().message().find(std::to_string(o.port)), std::string::npos)
      << second.status();
}

}  // namespace
}  // namespace cumulus::metrics
