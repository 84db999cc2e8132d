#include "runtime/net/event_loop.h"

#include "runtime/net/tcp.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cumulus {

namespace {
constexpr uint64_t kWakeTag = 0;
}  // namespace

Result<std::unique_ptr<EventLoop>> EventLoop::Create(Handlers handlers) {
  std::unique_ptr<EventLoop> loop(new EventLoop(std::move(handlers)));
  loop->epoll_ = epoll_create1(EPOLL_CLOEXEC);
  if (loop->epoll_ < 0) return Status::Internal(std::string("epoll_create1: ") + strerror(errno));
  if (pipe2(loop->wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Internal(std::string("pipe2: ") + strerror(errno));
  }
  loop->AddToEpoll(loop->wake_[0], kWakeTag, EPOLLIN);
  return loop;
}

EventLoop::~EventLoop() {
  for (auto& [id, c] : conns_) close(c.fd);
  for (auto& l : listeners_) close(l.fd);
  for (int fd : {epoll_, wake_[0], wake_[1]}) {
    if (fd >= 0) close(fd);
  }
}

void EventLoop::AddToEpoll(int fd, uint64_t tag, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = tag;
  epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
}

EventLoop::ListenRules EventLoop::PreAuthentication() {
  ListenRules rules;
  rules.max_frame_bytes = 64u << 10;  // a hello (with a token) is well under this
  rules.require_auth = true;
  rules.auth_deadline = std::chrono::seconds(10);
  rules.max_unauthenticated = 256;
  return rules;
}

void EventLoop::Listen(int listen_fd, bool tcp, uint32_t max_frame_bytes) {
  ListenRules rules;
  rules.max_frame_bytes = max_frame_bytes;
  Listen(listen_fd, tcp, rules);
}

void EventLoop::Listen(int listen_fd, bool tcp, const ListenRules& rules) {
  listeners_.push_back({listen_fd, tcp, rules});
  AddToEpoll(listen_fd, listeners_.size(), EPOLLIN);
}

void EventLoop::Authenticated(uint64_t conn, uint32_t max_frame_bytes) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  if (!it->second.authenticated) {
    it->second.authenticated = true;
    unauthenticated_--;
  }
  it->second.decoder.set_max_frame_bytes(max_frame_bytes);
}

bool EventLoop::IsAuthenticated(uint64_t conn) const {
  auto it = conns_.find(conn);
  return it != conns_.end() && it->second.authenticated;
}

void EventLoop::CloseAfterFlush(uint64_t conn, const std::string& why) {
  auto it = conns_.find(conn);
  if (it == conns_.end() || it->second.closed) return;
  it->second.closing = true;
  it->second.closing_why = why;
  if (!it->second.queued) {  // closed by Flush once its output is written, never here
    it->second.queued = true;
    dirty_.push_back(conn);
  }
}

std::string EventLoop::PeerAddress(uint64_t conn) const {
  auto it = conns_.find(conn);
  return it == conns_.end() ? std::string() : PeerAddressOf(it->second.fd);
}

uint64_t EventLoop::Adopt(int fd, bool tcp, uint32_t max_frame_bytes) {
  int flags = fcntl(fd, F_GETFL);
  if (!(flags & O_NONBLOCK)) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  uint64_t id = next_conn_++;
  Conn& c = conns_[id];
  c.fd = fd;
  c.tcp = tcp;
  c.decoder.set_max_frame_bytes(max_frame_bytes);
  AddToEpoll(fd, id, EPOLLIN);
  return id;
}

uint64_t EventLoop::Adopt(int fd, bool tcp, FrameDecoder decoder) {
  uint64_t id = Adopt(fd, tcp, 0);
  conns_[id].decoder = std::move(decoder);
  if (conns_[id].decoder.buffered() > 0) buffered_.push_back(id);
  return id;
}

uint64_t EventLoop::AdoptConnecting(int fd, uint32_t max_frame_bytes, TimePoint deadline) {
  uint64_t id = next_conn_++;
  Conn& c = conns_[id];
  c.fd = fd;
  c.tcp = true;
  c.connecting = true;
  c.connect_deadline = deadline;
  c.want_write = true;
  c.decoder.set_max_frame_bytes(max_frame_bytes);
  connecting_++;
  AddToEpoll(fd, id, EPOLLIN | EPOLLOUT);
  return id;
}

void EventLoop::FinishConnect(uint64_t id, Conn& c) {
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
  c.connecting = false;
  connecting_--;
  if (err != 0) return Close(id, std::string("cannot connect: ") + std::strerror(err));
  FlushOne(id, c);  // what was sent meanwhile; also sets the events it now waits for
}

void EventLoop::Accept(const Listener& l) {
  while (true) {
    int fd = accept4(l.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) {
        // Out of descriptors: stop accepting for a moment instead of spinning on the listener.
        for (auto& listener : listeners_) epoll_ctl(epoll_, EPOLL_CTL_DEL, listener.fd, nullptr);
        accept_paused_until_ = SystemClock::Get().Now() + std::chrono::milliseconds(100);
        if (handlers_.on_warning) {
          handlers_.on_warning("out of file descriptors; not accepting connections for 100 ms");
        }
      }
      return;
    }
    bool needs_auth = l.rules.require_auth;
    if (needs_auth && unauthenticated_ >= l.rules.max_unauthenticated) {
      // Too many connections that have not said who they are: refuse more, saying why.
      if (!l.rules.refusal.empty()) {
        (void)!send(fd, l.rules.refusal.data(), l.rules.refusal.size(),
                    MSG_NOSIGNAL | MSG_DONTWAIT);
      }
      close(fd);
      if (handlers_.on_warning) {
        handlers_.on_warning("too many unauthenticated connections; refusing new ones");
      }
      continue;
    }
    if (l.tcp) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    uint64_t id = Adopt(fd, l.tcp, l.rules.max_frame_bytes);
    Conn& c = conns_[id];
    c.max_queued_output = l.rules.max_queued_output;
    if (needs_auth) {
      c.authenticated = false;
      c.auth_deadline = SystemClock::Get().Now() + l.rules.auth_deadline;
      unauthenticated_++;
    }
    if (handlers_.on_accept) handlers_.on_accept(id, l.tcp);
  }
}

void EventLoop::CheckDeadlines(TimePoint now) {
  if ((unauthenticated_ == 0 && connecting_ == 0) || now < next_deadline_check_) return;
  next_deadline_check_ = now + std::chrono::milliseconds(50);
  std::vector<std::pair<uint64_t, const char*>> late;
  for (auto& [id, c] : conns_) {
    if (c.closed) continue;
    if (!c.authenticated && now > c.auth_deadline) {
      late.emplace_back(id, "did not authenticate in time");
    } else if (c.connecting && now > c.connect_deadline) {
      late.emplace_back(id, "cannot connect: timed out");
    }
  }
  for (auto& [id, why] : late) {
    auto it = conns_.find(id);
    if (it != conns_.end() && it->second.connecting) {
      // The loop may have been busy past the deadline: a connect that completed meanwhile counts.
      pollfd p{it->second.fd, POLLOUT, 0};
      if (poll(&p, 1, 0) > 0) {
        FinishConnect(id, it->second);
        continue;
      }
    }
    Close(id, why);
  }
}

void EventLoop::Send(uint64_t conn, std::string frame) {
  auto it = conns_.find(conn);
  if (it == conns_.end() || it->second.closed) return;
  Conn& c = it->second;
  if (c.out_pos == c.out.size()) {
    c.out.clear();
    c.out_pos = 0;
  }
  c.out.append(frame);
  if (!c.queued) {  // every connection with new output is flushed (and its cap checked) per pass
    c.queued = true;
    dirty_.push_back(conn);
  }
}

void EventLoop::Close(uint64_t conn, const std::string& why) {
  auto it = conns_.find(conn);
  if (it == conns_.end() || it->second.closed) return;
  Conn& c = it->second;
  c.closed = true;
  if (!c.authenticated) unauthenticated_--;
  if (c.connecting) {
    c.connecting = false;
    connecting_--;
  }
  epoll_ctl(epoll_, EPOLL_CTL_DEL, c.fd, nullptr);
  shutdown(c.fd, SHUT_RDWR);
  closed_.push_back(conn);
  if (handlers_.on_close) handlers_.on_close(conn, why);
}

void EventLoop::Watch(int fd, std::function<void()> on_readable) {
  uint64_t tag = next_conn_++;
  watched_[tag] = std::move(on_readable);
  watched_tags_[fd] = tag;
  AddToEpoll(fd, tag, EPOLLIN);
}

void EventLoop::Unwatch(int fd) {
  auto it = watched_tags_.find(fd);
  if (it == watched_tags_.end()) return;
  epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
  watched_.erase(it->second);
  watched_tags_.erase(it);
}

bool EventLoop::IsOpen(uint64_t conn) const {
  auto it = conns_.find(conn);
  return it != conns_.end() && !it->second.closed;
}

bool EventLoop::HasQueuedOutput(uint64_t conn) const {
  auto it = conns_.find(conn);
  if (it == conns_.end() || it->second.closed) return false;
  return it->second.connecting || it->second.queued || it->second.out_pos < it->second.out.size();
}

int EventLoop::FdOf(uint64_t conn) const {
  auto it = conns_.find(conn);
  return it == conns_.end() || it->second.closed ? -1 : it->second.fd;
}

int EventLoop::Poll(std::chrono::milliseconds timeout) {
  TimePoint now = SystemClock::Get().Now();
  if (accept_paused_until_ != TimePoint{} && now >= accept_paused_until_) {
    accept_paused_until_ = TimePoint{};
    for (size_t i = 0; i < listeners_.size(); ++i) AddToEpoll(listeners_[i].fd, i + 1, EPOLLIN);
  }
  CheckDeadlines(now);
  epoll_event events[256];
  // Frames already read (Adopt with a decoder) are handed on without waiting for new events.
  int wait_ms = buffered_.empty() ? static_cast<int>(timeout.count()) : 0;
  int n = epoll_wait(epoll_, events, 256, wait_ms);
  for (int i = 0; i < n; ++i) {
    uint64_t tag = events[i].data.u64;
    if (tag == kWakeTag) {
      char buf[64];
      while (read(wake_[0], buf, sizeof(buf)) > 0) {
      }
    } else if (tag <= listeners_.size()) {
      Accept(listeners_[tag - 1]);
    } else if (auto w = watched_.find(tag); w != watched_.end()) {
      auto callback = w->second;  // it may Unwatch itself
      callback();
    } else {
      auto it = conns_.find(tag);
      if (it == conns_.end() || it->second.closed) continue;
      if (it->second.connecting) {
        if (events[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) FinishConnect(tag, it->second);
        continue;
      }
      if (events[i].events & EPOLLOUT) FlushOne(tag, it->second);
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) ReadFrom(tag);
    }
  }
  if (!buffered_.empty()) {
    std::vector<uint64_t> buffered;
    buffered.swap(buffered_);
    for (uint64_t id : buffered) DeliverFrames(id);
  }
  RunPosted();
  return n < 0 ? 0 : n;
}

void EventLoop::RunPosted() {
  std::vector<std::function<void()>> posted;
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    posted.swap(posted_);
  }
  for (auto& fn : posted) fn();
}

void EventLoop::Post(std::function<void()> fn) {
  bool first;
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    first = posted_.empty();
    posted_.push_back(std::move(fn));
  }
  if (first) Wake();  // a Poll that has not run the earlier ones yet will run this one too
}

void EventLoop::ReadFrom(uint64_t id) {
  char buf[65536];
  // A peer that has not authenticated gets one read a pass: its frame header is checked against
  // its small limit before more of its bytes are taken.
  auto first = conns_.find(id);
  int max_rounds = first != conns_.end() && !first->second.authenticated ? 1 : 16;
  for (int rounds = 0; rounds < max_rounds; ++rounds) {
    auto it = conns_.find(id);
    if (it == conns_.end() || it->second.closed) return;
    if (it->second.closing) {  // after a fatal error: only its output is still written
      if (read(it->second.fd, buf, sizeof(buf)) == 0) Close(id, it->second.closing_why);
      return;
    }
    ssize_t got = read(it->second.fd, buf, sizeof(buf));
    if (got > 0) {
      it->second.decoder.Append(buf, static_cast<size_t>(got));
      if (static_cast<size_t>(got) < sizeof(buf)) break;
      continue;
    }
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) break;
    Close(id, got == 0 ? "closed" : std::strerror(errno));
    return;
  }
  DeliverFrames(id);
}

void EventLoop::DeliverFrames(uint64_t id) {
  while (true) {
    // A handler may close this or any connection: look it up again each time.
    auto it = conns_.find(id);
    if (it == conns_.end() || it->second.closed || it->second.closing) return;
    auto frame = it->second.decoder.Next();
    if (!frame.ok()) {
      Close(id, "sent a malformed frame: " + frame.status().message());
      return;
    }
    if (!*frame) return;
    handlers_.on_frame(id, std::move(**frame));
  }
}

void EventLoop::FlushOne(uint64_t id, Conn& c) {
  if (c.connecting) return;  // written once it connects
  while (c.out_pos < c.out.size()) {
    ssize_t n = send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_pos += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    Close(id, "write failed");
    return;
  }
  bool pending = c.out_pos < c.out.size();
  if (!pending) {
    c.out.clear();
    c.out_pos = 0;
    if (c.closing) return Close(id, c.closing_why);
  } else if (c.out.size() - c.out_pos > c.max_queued_output) {
    return Close(id, "it does not read what it is sent");
  }
  if (pending != c.want_write) {
    c.want_write = pending;
    epoll_event ev{};
    ev.events = EPOLLIN | (pending ? static_cast<uint32_t>(EPOLLOUT) : 0u);
    ev.data.u64 = id;
    epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &ev);
  }
}

void EventLoop::Flush() {
  // Writing may close a connection, whose handler may queue more: take the list first.
  std::vector<uint64_t> dirty;
  dirty.swap(dirty_);
  for (uint64_t id : dirty) {
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;
    it->second.queued = false;
    if (!it->second.closed) FlushOne(id, it->second);
  }
  std::vector<uint64_t> closed;
  closed.swap(closed_);
  for (uint64_t id : closed) {
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;
    close(it->second.fd);
    conns_.erase(it);
  }
}

void EventLoop::Wake() {
  char c = 1;
  (void)!write(wake_[1], &c, 1);
}

}  // namespace cumulus
