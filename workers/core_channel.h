// CoreChannel: the connections of a driver or worker, on one EventLoop thread of their own: to
// its node (core.sock), to the actors it calls, and, in a worker that hosts an actor, from that
// actor's callers.
//
// Nothing here waits on a socket. A frame sent from any thread leaves in the order sent: when
// nothing is queued and the loop has nothing left to write on that connection, the sending thread
// writes it itself (non-blocking; a small call costs no thread hop), and what the socket does not
// take at once is queued for the loop's thread, which writes it when it can.
//
// Thread safety: Send, Close, Connect, Listen, SendAndWait and Stop may be called from any thread;
// IsAuthenticated and Authenticated only from the handlers (the loop's thread). Handlers run on
// the loop's thread and must not call Stop.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/net/event_loop.h"

namespace cumulus {

// The node's answer to this process's hello (made over its core.sock before the loop runs).
struct NodeHello {
  int fd = -1;  // the connection, for CoreChannel::Start
  FrameDecoder decoder{0};
  NodeId node_id;
  std::string transfer_address;  // the node's object channel
  std::string store_socket;      // the node's object store
};
// Says hello to the node at `node_socket` as the driver of `job`, or as worker `worker` of it.
Result<NodeHello> HelloNode(const std::string& node_socket, const JobId& job,
                            const WorkerId& worker);

class CoreChannel {
 public:
  struct Handlers {
    std::function<void(uint64_t conn)> on_accept;  // a caller connected (Listen)
    std::function<void(uint64_t conn, FrameWords words)> on_frame;
    std::function<void(uint64_t conn, const std::string& why)> on_close;
  };

  // Takes `node_fd`, whose hello was answered; frames already read with the answer are in
  // `decoder` and are handed to on_frame first.
  static Result<std::unique_ptr<CoreChannel>> Start(int node_fd, FrameDecoder decoder,
                                                    Handlers handlers);
  ~CoreChannel();  // Stop()

  uint64_t node_conn() const { return node_conn_; }

  void Send(uint64_t conn, std::string frame);
  // Closes `conn` on the loop's thread (what is not written yet is dropped); on_close follows.
  void Close(uint64_t conn, std::string why);
  // Sends `frame` (a refusal), then closes `conn` once it is written; on_close follows.
  void Refuse(uint64_t conn, std::string frame, std::string why);
  // Sends `frame` and waits up to `timeout` until it is written (before the process exits).
  void SendAndWait(uint64_t conn, std::string frame, Duration timeout);

  // What to do with a connection made by Connect, decided when the loop has it.
  struct Adopted {
    bool keep = true;
    std::string last_frame;  // if not kept: sent before it is closed (may be empty)
  };
  // Takes `fd`, a TCP connect in progress (StartConnectTcp): `hello` is its first frame, and
  // `adopted(conn)` runs on the loop's thread with its id. If it does not connect within
  // `timeout`, it closes with a reason starting "cannot connect".
  void Connect(int fd, std::string hello, Duration timeout,
               std::function<Adopted(uint64_t conn)> adopted);
  // Listens for the callers of the actor hosted here on `bind_host` (a free port); returns
  // host:port. A caller must send its hello with the cluster's token first: until then its
  // frames are small, it has a deadline, and only so many may wait (EventLoop::ListenRules).
  Result<std::string> ListenForCallers(const std::string& bind_host);

  bool IsAuthenticated(uint64_t conn) const { return loop_->IsAuthenticated(conn); }
  void Authenticated(uint64_t conn, uint32_t max_frame_bytes) {
    loop_->Authenticated(conn, max_frame_bytes);
  }

  // Writes what was sent (what the sockets take now), then stops the loop's thread. Idempotent.
  void Stop();

 private:
  CoreChannel() = default;
  void Run();
  void DrainOutbox();
  void ReleaseWrittenConnections();
  void AllowDirectWrites(uint64_t conn);
  void Forget(uint64_t conn);
  // Fulfils the SendAndWait promises whose frames are all written (the loop's thread).
  void TellWritten();

  std::unique_ptr<EventLoop> loop_;
  uint64_t node_conn_ = 0;
  std::thread thread_;
  bool stop_ = false;  // the loop's thread only
  // SendAndWait frames not all written yet (the loop's thread only).
  std::vector<std::pair<uint64_t, std::shared_ptr<std::promise<void>>>> written_waiters_;
  std::mutex stop_mu_;

  std::mutex mu_;  // the fields below; held only for non-blocking work
  std::vector<std::pair<uint64_t, std::string>> outbox_;  // for the loop's thread, in order
  std::set<uint64_t> in_loop_;  // connections the loop has output for (no direct writes)
  std::unordered_map<uint64_t, int> direct_fds_;  // connections' sockets, for direct writes
};

}  // namespace cumulus
