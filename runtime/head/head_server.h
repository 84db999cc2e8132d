// HeadServer: the cluster's head. Serves the control protocol (runtime/proto/control.capnp) on one
// TCP address, keeps membership, and persists its tables in a ControlStore under the data dir.
//
// Every connection must first authenticate with the cluster token (a wrong one: Unauthenticated;
// another protocol version: InvalidArgument); until it does, it can do nothing, may send at most
// one frame of 4 KiB, and is closed after `auth_timeout`. At most `max_unauthenticated` (1,024)
// connections may be waiting to authenticate; more are refused with an error reply that says so.
// Garbage (bad magic, oversized or malformed frames) closes that
// connection and nothing else; refusals are logged at most once a second.
//
// Restarted on the same data dir, the head reads back its tables: nodes that were alive get a
// heartbeat timeout to re-register under their ids, so no node is reported twice.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cumulus/status.h"
#include "runtime/head/membership.h"

namespace cumulus {

struct HeadOptions {
  std::string bind_host = "127.0.0.1";  // only this interface listens
  uint16_t port = 6380;                 // 0 picks a free port
  std::string data_dir;                 // required: control store and logs live here
  std::string token;                    // required: the cluster's credentials
  Duration heartbeat_interval = std::chrono::seconds(1);  // what nodes are told to use
  MembershipOptions membership;                           // when nodes are declared dead
  Duration auth_timeout = std::chrono::seconds(5);
  uint32_t max_frame_bytes = 16u << 20;
  // Connections still owing their hello; more are refused with an error reply saying so.
  size_t max_unauthenticated = 1024;
  // Publish the nodes once a second for PublishedNodes (the metrics endpoint reads them).
  bool publish_nodes = false;
};

struct HeadCounters {
  std::atomic<uint64_t> heartbeats{0};
  std::atomic<uint64_t> auth_failures{0};
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<uint64_t> connections{0};
};

class HeadServer {
 public:
  static Result<std::unique_ptr<HeadServer>> Start(const HeadOptions& options);
  ~HeadServer();  // stops serving and closes every connection

  uint16_t port() const { return port_; }
  const std::string& cluster_id() const { return cluster_id_; }
  const HeadCounters& counters() const { return counters_; }

  // For the metrics endpoint (runtime/metrics/head_metrics.h). Thread-safe; neither waits for
  // the head's loop. The nodes as the loop last published them (at most a second old; empty
  // unless options.publish_nodes).
  std::vector<NodeRecord> PublishedNodes() const;
  // Calls fn(key, value) for the key-value records of namespace `ns` from key `from` on, in key
  // order, while it returns true; read from the control store itself.
  Status ScanKv(const std::string& ns, const std::string& from,
                const std::function<bool(const std::string&, const std::string&)>& fn) const;

 private:
  class Loop;
  HeadServer() = default;
  uint16_t port_ = 0;
  std::string cluster_id_;
  HeadCounters counters_;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

// Token files: 32 random bytes as hex, created 0600.
Result<std::string> CreateOrLoadToken(const std::string& path);
Result<std::string> LoadToken(const std::string& path);
// Compares without leaking where the first difference is.
bool TokensEqual(const std::string& a, const std::string& b);

}  // namespace cumulus
