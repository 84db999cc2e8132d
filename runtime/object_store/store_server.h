// StoreServer: serves an ObjectStore to the other processes of its node over a Unix socket.
//
// A client connects, receives the shared region's descriptor and maps it; after that a Get costs
// one round trip and no copy. Each connection is a ClientId: when it closes (the process exited or
// was killed) the server releases every pin it held and aborts its unsealed objects.
//
// The socket file is created with mode 0600: only the store's user can connect. One thread serves
// all connections; a malformed message gets an error reply and the connection is closed.
//
// A waiting get (getWait) for an object that is still being written is parked, not answered: the
// server answers it when the object is sealed, freed (aborted, or its creator disconnected) or the
// wait is over. The store tells the server of every seal and free (ObjectStore::
// SetChangeListener), whether a client or an in-process caller (the node daemon receiving a pull)
// made it, through the server's wake pipe; the poll timeout is the nearest parked deadline.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cumulus/status.h"
#include "runtime/base/clock.h"
#include "runtime/object_store/object_store.h"

namespace cumulus {

struct StoreServerOptions {
  // A client with this many gets waiting has its next waiting get refused (ResourceExhausted), so
  // that no client can grow the server's memory without limit.
  size_t max_waiting_gets_per_client = 1024;
};

class StoreServer {
 public:
  // Starts serving `store` (which must outlive the server) at `socket_path`. A stale socket file
  // left by a dead server is replaced; a live server at that path is an error. The server is the
  // store's change listener while it runs.
  static Result<std::unique_ptr<StoreServer>> Start(ObjectStore* store,
                                                    const std::string& socket_path,
                                                    const StoreServerOptions& options = {});
  ~StoreServer();  // stops the thread, closes every connection, removes the socket file

  const std::string& socket_path() const { return socket_path_; }
  size_t client_count() const { return clients_.load(); }
  uint64_t rejected_messages() const { return rejected_.load(); }
  // Gets parked now, waiting for their object to be sealed.
  size_t waiting_gets() const { return waiting_count_.load(); }

 private:
  struct WaitingGet {
    int fd;
    ClientId client;
    uint64_t request_id;
    uint32_t wait_ms;
    TimePoint deadline;
  };

  StoreServer(ObjectStore* store, std::string socket_path, int listen_fd, int wake_fd[2],
              const StoreServerOptions& options);
  void Run();
  // Handles one packet from `client`; false if the connection must be closed.
  bool Handle(int fd, ClientId client, const uint8_t* bytes, size_t n);
  // The store's change listener: any thread, under the store's lock.
  void OnStoreChange(const ObjectId& id);
  // Server thread only: answers the parked gets whose object changed or whose wait is over.
  void AnswerChanged();
  void AnswerExpired(TimePoint now);
  // Milliseconds until the nearest parked deadline; -1 if nothing is parked.
  int PollTimeoutMs(TimePoint now) const;
  void DropWaiting(ClientId client);
  void Unpark(std::unordered_multimap<ObjectId, WaitingGet>::iterator it);

  ObjectStore* store_;
  std::string socket_path_;
  int listen_fd_;
  int wake_read_, wake_write_;
  StoreServerOptions options_;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> clients_{0};
  std::atomic<uint64_t> rejected_{0};
  // Parked gets plus a get being tried before it is parked: while 0, OnStoreChange does nothing.
  std::atomic<size_t> watching_{0};
  std::atomic<size_t> waiting_count_{0};

  std::mutex changed_mu_;
  std::vector<ObjectId> changed_;  // objects sealed or freed since the server last looked
  bool wake_written_ = false;      // a byte for changed_ is in the wake pipe

  // Server thread only.
  std::unordered_multimap<ObjectId, WaitingGet> waiting_;
  std::unordered_map<ClientId, size_t> waiting_per_client_;

  std::thread thread_;
};

}  // namespace cumulus
