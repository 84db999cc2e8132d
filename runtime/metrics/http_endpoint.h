// MetricsEndpoint: a small HTTP/1.1 server on its own thread for Prometheus to scrape. It answers
//   GET /metrics (or HEAD)  200, Content-Type text/plain; version=0.0.4, the page `render` makes
//   GET of any other path   404
//   another method          405
//   a malformed request     400
//   a request line and headers over `max_request_bytes`  431
//   nothing complete within `request_timeout`            408
// and closes every connection after its one answer (Connection: close). At most
// `max_connections` are served at once; when all are taken, a new connection displaces one
// already answered and closing, else the oldest whose request is not complete (closed without an
// answer), so connections that send nothing or trickle their request byte by byte cannot hold a
// scrape back; when every one is being answered, it waits in the kernel's backlog. A request
// body is not read.
//
// `render` runs on the endpoint's thread, once per scrape: it must not block on the event loop
// of the head or node it describes (it reads what that loop published; see node_metrics.h,
// head_metrics.h), and must be thread-safe with whatever else reads the same things.
//
// Thread safety: Start, port and the destructor from one thread; everything else is internal.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "cumulus/status.h"
#include "runtime/base/clock.h"

namespace cumulus::metrics {

struct MetricsEndpointOptions {
  std::string host = "127.0.0.1";   // the address it listens on (never chosen here: given)
  uint16_t port = 0;                // 0 picks a free one (see port())
  size_t max_request_bytes = 8192;  // request line and headers
  Duration request_timeout = std::chrono::seconds(2);  // accept to complete request
  Duration write_timeout = std::chrono::seconds(10);   // for the answer to be taken
  size_t max_connections = 64;                         // served at once
};

class MetricsEndpoint {
 public:
  using RenderFn = std::function<std::string()>;

  // Listens on host:port; InvalidArgument/Unavailable naming the address if it cannot (a port in
  // use, an address not on this machine).
  static Result<std::unique_ptr<MetricsEndpoint>> Start(const MetricsEndpointOptions& options,
                                                        RenderFn render);
  ~MetricsEndpoint();  // stops the thread, closes every connection
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  uint16_t port() const { return port_; }
  // host:port, as a Prometheus target.
  std::string address() const { return options_.host + ":" + std::to_string(port_); }
  // Requests answered (any status) since start.
  uint64_t answered() const { return answered_; }

 private:
  MetricsEndpoint() = default;
  void Run();

  MetricsEndpointOptions options_;
  RenderFn render_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: the destructor wakes the thread
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> answered_{0};
  std::thread thread_;
};

// What the endpoint answers to one complete request (the bytes up to and including the blank
// line): a whole HTTP/1.1 response. `render` is called only for GET or HEAD /metrics. Exposed
// for tests.
std::string AnswerRequest(const std::string& request, const MetricsEndpoint::RenderFn& render);

}  // namespace cumulus::metrics
