#include "runtime/net/tcp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/base/numeric.h"

namespace cumulus {

namespace {

Result<sockaddr_in> Resolve(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    return Status::InvalidArgument("cannot resolve host '" + host + "': " + gai_strerror(rc));
  }
  sockaddr_in addr = *reinterpret_cast<sockaddr_in*>(res->ai_addr);
  freeaddrinfo(res);
  addr.sin_port = htons(port);
  return addr;
}

std::string AddressString(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = {0};
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof(buf));
  return buf;
}

}  // namespace

Result<HostPort> ParseHostPort(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("'" + std::string(text) + "' is not a valid address (" + why +
                                   "); expected HOST:PORT, e.g. 127.0.0.1:6380");
  };
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad("no host or port");
  auto port = ParseInteger("port", text.substr(colon + 1), {1, 65535});
  if (!port.ok()) return bad(port.status().message());
  HostPort hp;
  hp.host = std::string(text.substr(0, colon));
  for (char c : hp.host) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-')
      return bad("bad host");
  }
  hp.port = static_cast<uint16_t>(*port);
  return hp;
}

std::string ReachableHost(const std::string& bind_host) {
  if (bind_host != "0.0.0.0" && bind_host != "::" && bind_host != "[::]") return bind_host;
  char h[256] = {0};
  if (gethostname(h, sizeof(h) - 1) != 0) return "localhost";
  return std::string(h);
}

Result<int> ListenTcp(const std::string& bind_host, uint16_t port, uint16_t* actual_port) {
  CUMULUS_ASSIGN_OR_RETURN(sockaddr_in addr, Resolve(bind_host, port));
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::Unavailable(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    close(fd);
    if (err == EADDRINUSE) {
      return Status::Unavailable("port " + std::to_string(port) + " on " + bind_host +
                                 " is already in use; choose another with --port");
    }
    if (err == EADDRNOTAVAIL) {
      return Status::InvalidArgument(bind_host + " is not an address of this machine (--bind)");
    }
    return Status::Unavailable("cannot listen on " + bind_host + ":" + std::to_string(port) + ": " +
                               std::strerror(err));
  }
  if (listen(fd, 1024) != 0) {
    int err = errno;
    close(fd);
    return Status::Unavailable(std::string("listen: ") + std::strerror(err));
  }
  sockaddr_in bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  if (actual_port) *actual_port = ntohs(bound.sin_port);
  return fd;
}

Result<int> StartConnectTcp(const HostPort& address) {
  CUMULUS_ASSIGN_OR_RETURN(sockaddr_in addr, Resolve(address.host, address.port));
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::Unavailable(std::string("socket: ") + std::strerror(errno));
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  if (rc != 0 && errno != EINPROGRESS) {
    int err = errno;
    close(fd);
    return Status::Unavailable("cannot connect to " + address.ToString() + ": " +
                               std::strerror(err));
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

Result<int> ConnectTcp(const HostPort& address, Duration timeout) {
  CUMULUS_ASSIGN_OR_RETURN(int fd, StartConnectTcp(address));
  pollfd p{fd, POLLOUT, 0};
  int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
  int n = poll(&p, 1, ms);
  if (n == 0) {
    close(fd);
    return Status::TimedOut("connecting to " + address.ToString() + " timed out");
  }
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (n < 0 || err != 0) {
    close(fd);
    return Status::Unavailable("cannot connect to " + address.ToString() + ": " +
                               std::strerror(err ? err : errno));
  }
  return fd;
}

int MillisUntil(TimePoint deadline) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SystemClock::Get().Now());
  return left.count() < 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
}

Status SendAll(int fd, const uint8_t* data, uint64_t n, Duration idle) {
  uint64_t off = 0;
  while (off < n) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(n - off, 8u << 20));
    ssize_t k = send(fd, data + off, chunk, MSG_NOSIGNAL);
    if (k > 0) {
      off += static_cast<uint64_t>(k);
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, MillisUntil(SystemClock::Get().Now() + idle)) <= 0) {
        return Status::TimedOut("the peer stopped reading");
      }
      continue;
    }
    return Status::Unavailable(std::string("connection lost while sending: ") +
                               std::strerror(errno));
  }
  return Status();
}

Status RecvAll(int fd, uint8_t* out, uint64_t n, Duration idle, uint64_t have) {
  uint64_t off = have;
  while (off < n) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(n - off, 8u << 20));
    ssize_t k = recv(fd, out + off, chunk, 0);
    if (k > 0) {
      off += static_cast<uint64_t>(k);
      continue;
    }
    if (k == 0) {
      return Status::Unavailable("the peer closed the connection after " + std::to_string(off) +
                                 " of " + std::to_string(n) + " bytes");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, MillisUntil(SystemClock::Get().Now() + idle)) <= 0) {
        return Status::TimedOut(
            "no bytes from the sending node for " +
            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(idle).count()) +
            " s after " + std::to_string(off) + " of " + std::to_string(n) + " bytes");
      }
      continue;
    }
    return Status::Unavailable(std::string("connection lost while receiving after ") +
                               std::to_string(off) + " of " + std::to_string(n) +
                               " bytes: " + std::strerror(errno));
  }
  return Status();
}

std::string LocalAddressOf(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
  return AddressString(a);
}

std::string PeerAddressOf(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
  return AddressString(a);
}

}  // namespace cumulus
