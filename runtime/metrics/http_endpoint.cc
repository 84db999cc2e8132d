#include "runtime/metrics/http_endpoint.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "runtime/base/logging.h"
#include "runtime/metrics/exposition.h"
#include "runtime/net/tcp.h"

namespace cumulus::metrics {

namespace {

std::string Response(int code, const char* reason, const std::string& content_type,
                     const std::string& body, bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\n";
  out += "Content-Type: " + content_type + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += "Connection: close\r\n\r\n";
  if (!head_only) out += body;
  return out;
}

std::string Error(int code, const char* reason, const std::string& why) {
  return Response(code, reason, "text/plain; charset=utf-8", why + "\n", false);
}

// Where the request line and headers end (just past the blank line), or npos.
size_t HeaderEnd(const std::string& in) {
  size_t crlf = in.find("\r\n\r\n");
  size_t lf = in.find("\n\n");
  if (crlf == std::string::npos && lf == std::string::npos) return std::string::npos;
  if (crlf != std::string::npos && (lf == std::string::npos || crlf < lf)) return crlf + 4;
  return lf + 2;
}

// A connection reads its request, writes its answer, then reads (and drops) what the peer still
// sends until it closes, for a moment at most: closing with unread bytes would reset the
// connection, and the peer might lose the answer.
struct Connection {
  int fd = -1;
  enum State { kReading, kWriting, kDraining } state = kReading;
  std::string in, out;
  size_t out_pos = 0;
  size_t drained = 0;
  TimePoint deadline{};
};

constexpr size_t kMaxDrainBytes = 1u << 20;
constexpr Duration kDrainTime = std::chrono::milliseconds(500);

}  // namespace

std::string AnswerRequest(const std::string& request, const MetricsEndpoint::RenderFn& render) {
  std::string line = request.substr(0, request.find('\n'));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  // METHOD SP TARGET SP HTTP/1.x, nothing else.
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
  bool version_ok =
      sp2 != std::string::npos && (line.compare(sp2 + 1, std::string::npos, "HTTP/1.1") == 0 ||
                                   line.compare(sp2 + 1, std::string::npos, "HTTP/1.0") == 0);
  if (sp1 == 0 || !version_ok || sp2 == sp1 + 1) {
    return Error(400, "Bad Request", "a request line is: GET /metrics HTTP/1.1");
  }
  std::string method = line.substr(0, sp1);
  std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string path = target.substr(0, target.find('?'));
  if (method != "GET" && method != "HEAD") {
    return Error(405, "Method Not Allowed", "only GET /metrics is served here");
  }
  if (path != "/metrics") {
    return Error(404, "Not Found", "nothing at " + path + ": metrics are at /metrics");
  }
  return Response(200, "OK", kContentType, render(), method == "HEAD");
}

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const MetricsEndpointOptions& options, RenderFn render) {
  if (!render) return Status::InvalidArgument("the metrics endpoint needs something to render");
  std::unique_ptr<MetricsEndpoint> e(new MetricsEndpoint());
  e->options_ = options;
  if (e->options_.max_connections == 0) e->options_.max_connections = 1;
  e->render_ = std::move(render);
  auto fd = ListenTcp(options.host, options.port, &e->port_);
  if (!fd.ok()) return fd.status().WithContext("the metrics endpoint cannot listen");
  e->listen_fd_ = *fd;
  e->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (e->wake_fd_ < 0) {
    close(e->listen_fd_);
    return Status::Internal(std::string("metrics endpoint: eventfd: ") + std::strerror(errno));
  }
  e->thread_ = std::thread([p = e.get()] { p->Run(); });
  return e;
}

MetricsEndpoint::~MetricsEndpoint() {
  stop_ = true;
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    ssize_t ignored = write(wake_fd_, &one, sizeof(one));
    (void)ignored;
  }
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void MetricsEndpoint::Run() {
  std::vector<Connection> conns;
  std::vector<pollfd> fds;
  auto finish = [&](Connection& c) {
    close(c.fd);
    c.fd = -1;
  };
  auto answer = [&](Connection& c, std::string response) {
    c.out = std::move(response);
    c.out_pos = 0;
    c.state = Connection::kWriting;
    c.deadline = SystemClock::Get().Now() + options_.write_timeout;
    answered_++;
  };
  TimePoint accept_paused_until{};  // out of descriptors: try again a little later
  while (!stop_) {
    TimePoint now = SystemClock::Get().Now();
    int timeout = 1000;
    for (auto& c : conns) timeout = std::min(timeout, MillisUntil(c.deadline));
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    // Full, a new connection displaces one that has been answered and is closing, else the
    // oldest whose request is not complete yet: a scrape sends its request at once, so
    // connections that trickle theirs (or send nothing) cannot hold it back however many there
    // are; only one answer being written is never displaced.
    auto displaceable = [](const Connection& c) { return c.state != Connection::kWriting; };
    bool room = conns.size() < options_.max_connections ||
                std::any_of(conns.begin(), conns.end(), displaceable);
    bool accepting = room && now >= accept_paused_until;
    if (now < accept_paused_until) timeout = std::min(timeout, MillisUntil(accept_paused_until));
    fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
    for (auto& c : conns) {
      fds.push_back(
          {c.fd, static_cast<short>(c.state == Connection::kWriting ? POLLOUT : POLLIN), 0});
    }
    int n = poll(fds.data(), fds.size(), timeout);
    if (stop_) break;
    if (n < 0 && errno != EINTR) {
      CUMULUS_LOG(WARN) << "metrics endpoint: poll: " << std::strerror(errno);
      break;
    }
    now = SystemClock::Get().Now();
    for (size_t i = 0; i < conns.size(); ++i) {
      Connection& c = conns[i];
      short revents = n > 0 ? fds[i + 2].revents : 0;
      if (c.state == Connection::kReading && (revents & (POLLIN | POLLHUP | POLLERR))) {
        char buf[4096];
        ssize_t got = recv(c.fd, buf, sizeof(buf), 0);
        if (got <= 0) {
          if (got == 0 || (errno != EAGAIN && errno != EINTR)) finish(c);
          continue;
        }
        c.in.append(buf, static_cast<size_t>(got));
        size_t end = HeaderEnd(c.in);
        if (end != std::string::npos && end <= options_.max_request_bytes) {
          answer(c, AnswerRequest(c.in.substr(0, end), render_));
        } else if (c.in.size() > options_.max_request_bytes) {
          answer(c, Error(431, "Request Header Fields Too Large",
                          "a request to this endpoint is at most " +
                              std::to_string(options_.max_request_bytes) + " bytes"));
        }
        continue;
      }
      if (c.state == Connection::kWriting && (revents & (POLLOUT | POLLHUP | POLLERR))) {
        ssize_t sent = send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos,
                            MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent < 0 && errno != EAGAIN && errno != EINTR) {
          finish(c);
          continue;
        }
        if (sent > 0) c.out_pos += static_cast<size_t>(sent);
        if (c.out_pos == c.out.size()) {
          shutdown(c.fd, SHUT_WR);
          c.state = Connection::kDraining;
          c.in.clear();
          c.out.clear();
          c.deadline = now + kDrainTime;
        }
        continue;
      }
      if (c.state == Connection::kDraining && (revents & (POLLIN | POLLHUP | POLLERR))) {
        char buf[4096];
        ssize_t got = recv(c.fd, buf, sizeof(buf), 0);
        if (got > 0) c.drained += static_cast<size_t>(got);
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR) ||
            c.drained > kMaxDrainBytes) {
          finish(c);
        }
        continue;
      }
      if (now >= c.deadline) {
        if (c.state == Connection::kReading) {
          // Best effort: a peer that sent part of a request is told why it is closed.
          std::string why = Error(408, "Request Timeout", "the request did not arrive in time");
          ssize_t ignored = send(c.fd, why.data(), why.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          (void)ignored;
          answered_++;
          shutdown(c.fd, SHUT_WR);
          c.state = Connection::kDraining;
          c.deadline = now + kDrainTime;
        } else {
          finish(c);  // it does not read its answer, or does not close after it
        }
      }
    }
    conns.erase(
        std::remove_if(conns.begin(), conns.end(), [](const Connection& c) { return c.fd < 0; }),
        conns.end());
    // Room again, after this round's reads: a connection counted as displaceable before the
    // poll may have sent its request since. No room: the new one waits in the backlog.
    auto oldest = conns.end();
    if (conns.size() >= options_.max_connections) {
      // A closing one first; among reading ones, every deadline is its accept time plus the
      // same timeout.
      auto before = [](const Connection& a, const Connection& b) {
        if ((a.state == Connection::kDraining) != (b.state == Connection::kDraining)) {
          return a.state == Connection::kDraining;
        }
        return a.deadline < b.deadline;
      };
      for (auto it = conns.begin(); it != conns.end(); ++it) {
        if (displaceable(*it) && (oldest == conns.end() || before(*it, *oldest))) oldest = it;
      }
      if (oldest == conns.end()) accepting = false;
    }
    if (accepting && n > 0 && (fds[1].revents & POLLIN)) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) {
        if (oldest != conns.end()) {
          close(oldest->fd);
          conns.erase(oldest);
        }
        Connection c;
        c.fd = fd;
        c.deadline = now + options_.request_timeout;
        conns.push_back(std::move(c));
      } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        accept_paused_until = now + std::chrono::milliseconds(100);
      }
    }
  }
  for (auto& c : conns) close(c.fd);
}

}  // namespace cumulus::metrics
