// HeadServer::Loop: the head's loop, one thread with an EventLoop over the listening socket and
// every connection, and the state it keeps (membership, the control store, KV waits). Private to
// runtime/head: head_server.cc runs it, head_requests.cc answers requests, head_kv.cc the
// key-value store.
#pragma once

#include <capnp/message.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/head/control_store.h"
#include "runtime/head/head_server.h"
#include "runtime/head/membership.h"
#include "runtime/net/event_loop.h"
#include "runtime/net/frame.h"
#include "runtime/proto/control.capnp.h"

namespace cumulus {

class HeadServer::Loop {
 public:
  Loop(HeadOptions options, HeadCounters& counters, std::unique_ptr<ControlStore> store,
       int listen_fd, std::string cluster_id);
  ~Loop();

  Status Start();
  Status Recover();
  void Stop();
  void Run();
  std::vector<NodeRecord> PublishedNodes() const;  // thread-safe
  ControlStore& store() { return *store_; }        // thread-safe (ControlStore is)

 private:
  // What the head knows of a connection (its socket is the event loop's).
  struct Conn {
    uint64_t id = 0;
    std::optional<NodeId> node;
    std::string peer;
    std::string role;
  };
  struct Waiter {
    uint64_t conn;
    uint64_t request_id;
    std::string kv_key;
    TimePoint deadline;
  };

  // head_server.cc: connections, complaints, the periodic work.
  void Complain(const std::string& what);
  void Closed(uint64_t id, const std::string& why);
  void Housekeeping();

  // head_requests.cc: authentication, dispatch, nodes and cluster status.
  void Send(Conn& c, capnp::MessageBuilder& message);
  void SendError(Conn& c, uint64_t request_id, const Status& st, bool fatal);
  void Handle(Conn& c, const kj::Array<capnp::word>& words);
  void ReplyOk(Conn& c, uint64_t request_id);
  void Persist(const NodeId& id);
  void HandleRegister(Conn& c, uint64_t request_id, proto::NodeInfo::Reader info);
  void HandleHeartbeat(Conn& c, uint64_t request_id, proto::Heartbeat::Reader hb);
  void HandleLeaving(Conn& c, uint64_t request_id, proto::Leaving::Reader l);
  void HandleDrain(Conn& c, uint64_t request_id, proto::DrainNode::Reader d);
  void HandleStatus(Conn& c, uint64_t request_id);

  // head_kv.cc: the key-value store.
  void HandleKvPut(Conn& c, uint64_t request_id, proto::KvPut::Reader put);
  void HandleKvGetDelete(Conn& c, uint64_t request_id, bool is_delete, proto::KvKey::Reader k);
  void HandleKvList(Conn& c, uint64_t request_id, proto::KvList::Reader l);
  void HandleKvWait(Conn& c, uint64_t request_id, proto::KvWait::Reader w);
  void SendValue(Conn& c, uint64_t request_id, const std::string& value);
  void WakeWaiters(const std::string& key, const std::string& value);

  HeadOptions options_;
  HeadCounters& counters_;
  std::unique_ptr<ControlStore> store_;
  Membership membership_;
  int listen_fd_;  // the event loop's once it started
  std::unique_ptr<EventLoop> loop_;
  std::atomic<bool> stop_{false};
  std::string cluster_id_;
  int64_t started_micros_ = 0;
  TimePoint last_housekeeping_{};
  TimePoint last_complaint_{};
  uint64_t suppressed_complaints_ = 0;
  std::unordered_map<NodeId, uint64_t> node_conn_;  // the connection each node registered on
  std::unordered_map<uint64_t, Conn> conns_;
  std::unordered_multimap<std::string, Waiter> waiters_;  // by KV key
  // The nodes for PublishedNodes (options_.publish_nodes), copied once a second.
  TimePoint next_publish_{};
  mutable std::mutex published_mu_;
  std::vector<NodeRecord> published_nodes_;  // guarded by published_mu_
};

}  // namespace cumulus
