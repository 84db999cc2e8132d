// ControlClient: a blocking connection to the head, authenticated with the cluster token. Used by
// node daemons, the command line and tests. Every call has a deadline. Thread-safe (calls are
// serialized on the one connection).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/head/membership.h"
#include "runtime/net/frame.h"
#include "runtime/net/tcp.h"

namespace cumulus {

struct ControlClientOptions {
  std::string role = "client";
  Duration connect_timeout = std::chrono::seconds(5);
  Duration request_timeout = std::chrono::seconds(30);
};

// The view of the cluster a node keeps up to date from its heartbeats' acks (deltas).
struct ViewCursor {
  int64_t epoch = 0;     // the head instance it came from
  uint64_t version = 0;  // 0: none yet (the next ack sends every node)
  std::map<NodeId, NodeRecord> nodes;
};

struct ClusterView {
  std::string cluster_id;
  int64_t head_started_micros = 0;  // also the epoch of view versions
  uint64_t view_version = 0;        // of this listing
  uint64_t heartbeats_received = 0;
  uint32_t kv_waiters = 0;
  std::vector<NodeRecord> nodes;
};

class ControlClient {
 public:
  // Connects and authenticates. Unavailable if the head cannot be reached; Unauthenticated if the
  // token is wrong.
  static Result<std::unique_ptr<ControlClient>> Connect(const HostPort& head,
                                                        const std::string& token,
                                                        const ControlClientOptions& options = {});
  ~ControlClient();

  // Registers (or re-registers) a node; returns the heartbeat interval the head wants.
  Result<Duration> RegisterNode(const NodeRecord& node);
  // False if the head does not know the node (it must register again).
  // `drain_note`: what this node, if draining, still waits for (shown by `cumulus status`).
  // `work`: what holds the node (NodeRecord::work). With `view`, the ack also brings what
  // changed in the cluster since `view` was last brought up to date, and applies it
  // (*view_changed says whether anything did).
  Result<bool> Heartbeat(const NodeId& id, const ResourceSet& available,
                         const DemandList& pending_demand = {}, ViewCursor* view = nullptr,
                         bool* view_changed = nullptr, const std::string& drain_note = "",
                         uint32_t work = 0);
  Result<ClusterView> GetClusterStatus();
  // The node stops on purpose (`reason`): the head records it as STOPPED at once, not as a node
  // that failed. OK also if the head did not know it (or it was dead already).
  Status Leave(const NodeId& id, const std::string& reason);
  // Marks an alive node DRAINING (`reason`: who asks, for the head's log): placement gives it no
  // new work and it leaves once it runs and holds nothing. NotFound if the head does not know
  // the node, InvalidArgument if it is dead already; OK if it was draining already.
  Status DrainNode(const NodeId& id, const std::string& reason);

  // Returns whether the key existed before.
  Result<bool> KvPut(const std::string& ns, const std::string& key, const std::string& value,
                     bool overwrite = true);
  Result<std::string> KvGet(const std::string& ns, const std::string& key);  // NotFound if absent
  Result<bool> KvDelete(const std::string& ns, const std::string& key);
  // Keys of `ns` that start with `prefix`, after `start_after`, in key order: at most `limit`
  // (0: the head's cap); `more` says whether further keys match.
  struct KvPage {
    std::vector<std::pair<std::string, std::string>> entries;
    bool more = false;
  };
  Result<KvPage> KvList(const std::string& ns, const std::string& prefix,
                        const std::string& start_after = "", uint32_t limit = 0,
                        bool keys_only = false);
  // Waits until the key exists; TimedOut after `timeout`.
  Result<std::string> KvWait(const std::string& ns, const std::string& key, Duration timeout);

  const HostPort& head() const { return head_; }
  int fd() const { return fd_; }
  // True once a call's write or read failed midway (the head went away, or did not answer before
  // the call's deadline): every later call fails at once; connect again.
  bool broken() {
    std::lock_guard<std::mutex> lock(mu_);
    return broken_;
  }

 private:
  class Call;
  ControlClient(int fd, HostPort head, ControlClientOptions options)
      : fd_(fd), head_(std::move(head)), options_(std::move(options)) {}

  int fd_;
  HostPort head_;
  ControlClientOptions options_;
  FrameDecoder decoder_{64u << 20};
  std::mutex mu_;
  uint64_t next_request_ = 1;
  bool broken_ = false;  // a write or read failed midway: the stream is no longer in sync
};

}  // namespace cumulus
