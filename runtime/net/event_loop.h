// EventLoop: the sockets of one event-loop thread — listening sockets, framed connections
// (runtime/net/frame.h) with their read and write buffers, and a wake pipe for other threads.
//
// The owner runs the loop on its own thread: Poll() waits for events and hands each complete
// frame to `on_frame`; the owner then does its periodic work, and Flush() writes what was queued
// with Send() and frees the connections closed meanwhile. A connection is named by a number that
// is never reused. Writes never block: what the socket does not take is kept and written when it
// can be.
//
// A listening socket may hold its connections to rules until they authenticate (ListenRules): a
// small frame limit, a deadline, and a cap on how many may be waiting at once. Out of file
// descriptors, the loop stops accepting for 100 ms instead of spinning.
//
// Thread safety: Wake() and Post() may be called from any thread; everything else only on the
// loop's thread.
// Handlers run on the loop's thread and may call Send and Close (of any connection) re-entrantly.
#pragma once

#include <capnp/message.h>
#include <kj/array.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/net/frame.h"

namespace cumulus {

using FrameWords = kj::Array<capnp::word>;

class EventLoop {
 public:
  struct Handlers {
    // A connection accepted on a listening socket (optional).
    std::function<void(uint64_t conn, bool tcp)> on_accept;
    // One complete frame's message words.
    std::function<void(uint64_t conn, FrameWords words)> on_frame;
    // The connection is closed (by the peer, an error, a malformed frame, or Close): `why` says
    // which ("closed" when the peer closed it). Called once; its id is not used again.
    std::function<void(uint64_t conn, const std::string& why)> on_close;
    // Something the loop refused or gave up on that an operator may want to know (optional).
    std::function<void(const std::string& what)> on_warning;
  };

  // What connections accepted on a listening socket must respect. PreAuthentication() is the
  // rule every listener of Cumulus uses: nothing but a small hello is read from a peer that has
  // not said who it is, it has a deadline to say it, and only so many may be waiting at once.
  struct ListenRules;
  static ListenRules PreAuthentication();
  struct ListenRules {
    uint32_t max_frame_bytes = 0;  // until Authenticated() (then its own limit)
    // 0: no authentication step. Else a connection that has not authenticated within this is
    // closed ("did not authenticate within ..."), and at most `max_unauthenticated` may wait.
    Duration auth_deadline{0};
    size_t max_unauthenticated = 1024;
    // A connection that lets more than this pile up unread is closed (it does not read).
    size_t max_queued_output = SIZE_MAX;
    // Connections must authenticate (Authenticated) before their frames are trusted.
    bool require_auth = false;
    // Written (best effort) to a connection refused because `max_unauthenticated` are waiting,
    // before it is closed: the protocol's own error reply, so that the peer can say why.
    std::string refusal;
  };

  static Result<std::unique_ptr<EventLoop>> Create(Handlers handlers);
  ~EventLoop();  // closes every socket it holds (no handler runs)
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Accepts connections on `listen_fd` (which it now owns); their frames may be up to
  // `max_frame_bytes` long until Authenticated says otherwise.
  void Listen(int listen_fd, bool tcp, uint32_t max_frame_bytes);
  void Listen(int listen_fd, bool tcp, const ListenRules& rules);
  // The connection proved who it is: its frames may now be up to `max_frame_bytes`.
  void Authenticated(uint64_t conn, uint32_t max_frame_bytes);
  bool IsAuthenticated(uint64_t conn) const;
  // Stops reading from `conn` and closes it once what was queued for it is written.
  void CloseAfterFlush(uint64_t conn, const std::string& why);
  // "host:port" of the peer of a TCP connection.
  std::string PeerAddress(uint64_t conn) const;
  // Takes a connected socket (made non-blocking here); returns its connection id.
  uint64_t Adopt(int fd, bool tcp, uint32_t max_frame_bytes);
  // The same, for a socket some of whose bytes were read already (a handshake read by a blocking
  // client): the frames in `decoder` are handed to on_frame on the next Poll.
  uint64_t Adopt(int fd, bool tcp, FrameDecoder decoder);
  // Takes a socket whose connect is in progress (StartConnectTcp). What is sent meanwhile is
  // written once it connects; if it does not by `deadline`, or fails, it closes with a reason
  // that starts "cannot connect".
  uint64_t AdoptConnecting(int fd, uint32_t max_frame_bytes, TimePoint deadline);

  // Queues a whole frame for `conn`; nothing happens if it is closed or unknown.
  void Send(uint64_t conn, std::string frame);
  // Closes `conn` now (on_close runs before this returns) unless it is closed already.
  void Close(uint64_t conn, const std::string& why);

  // Runs `on_readable` on the loop's thread whenever `fd` (not a connection: a pidfd, a timer)
  // is readable, until Unwatch(fd). The caller keeps the descriptor and closes it after Unwatch.
  void Watch(int fd, std::function<void()> on_readable);
  void Unwatch(int fd);

  bool IsOpen(uint64_t conn) const;
  // Whether bytes queued for `conn` are not written yet (or it is still connecting). An owner that
  // writes to the socket itself (FdOf) may do so only while this is false.
  bool HasQueuedOutput(uint64_t conn) const;
  // The socket of `conn` (-1 if closed), for an owner that writes small frames to it directly
  // from another thread when the loop has nothing queued for it. Valid until on_close.
  int FdOf(uint64_t conn) const;

  // Waits up to `timeout` for socket events and handles them; returns how many there were.
  int Poll(std::chrono::milliseconds timeout);
  // Writes what was queued and frees the sockets of connections closed since the last call.
  void Flush();
  // Makes a Poll in progress return (thread-safe).
  void Wake();
  // Runs `fn` on the loop's thread in the Poll in progress or the next one, after its events, in
  // the order posted (thread-safe). What is still posted when the loop is destroyed never runs.
  void Post(std::function<void()> fn);

 private:
  struct Conn {
    int fd = -1;
    bool tcp = false;
    bool closed = false;
    bool closing = false;     // close once the output is written
    bool connecting = false;  // connect in progress (until connect_deadline)
    TimePoint connect_deadline{};
    bool want_write = false;
    bool authenticated = true;
    TimePoint auth_deadline{};  // when it must have authenticated by
    size_t max_queued_output = SIZE_MAX;
    bool queued = false;  // in dirty_
    std::string closing_why;
    FrameDecoder decoder{0};
    std::string out;
    size_t out_pos = 0;
  };
  struct Listener {
    int fd = -1;
    bool tcp = false;
    ListenRules rules;
  };

  explicit EventLoop(Handlers handlers) : handlers_(std::move(handlers)) {}
  void AddToEpoll(int fd, uint64_t tag, uint32_t events);
  void Accept(const Listener& l);
  void CheckDeadlines(TimePoint now);
  void ReadFrom(uint64_t id);
  void DeliverFrames(uint64_t id);
  void RunPosted();
  void FlushOne(uint64_t id, Conn& c);
  void FinishConnect(uint64_t id, Conn& c);

  Handlers handlers_;
  int epoll_ = -1;
  int wake_[2] = {-1, -1};
  std::vector<Listener> listeners_;  // tag = index + 1 (0 is the wake pipe)
  std::unordered_map<uint64_t, Conn> conns_;
  uint64_t next_conn_ = 1ull << 32;                              // above every listener tag
  std::vector<uint64_t> dirty_;                                  // connections with queued writes
  std::vector<uint64_t> closed_;                                 // closed, socket not yet freed
  std::unordered_map<uint64_t, std::function<void()>> watched_;  // tag -> callback
  std::unordered_map<int, uint64_t> watched_tags_;               // fd -> tag
  size_t unauthenticated_ = 0;
  size_t connecting_ = 0;
  TimePoint accept_paused_until_{};
  TimePoint next_deadline_check_{};
  std::vector<uint64_t> buffered_;  // adopted with frames already read: delivered next Poll
  std::mutex posted_mu_;
  std::vector<std::function<void()>> posted_;  // guarded by posted_mu_
};

}  // namespace cumulus
