// StoreServer: serves an ObjectStore to the other processes of its node over a Unix socket.
//
// A client connects, receives the shared region's descriptor and maps it; after that a Get costs
// one round trip and no copy. Each connection is a ClientId: when it closes (the process exited or
// was killed) the server releases every pin it held and aborts its unsealed objects.
//
// The socket file is created with mode 0600: only the store's user can connect. One thread serves
// all connections; a malformed message gets an error reply and the connection is closed.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cumulus/status.h"
#include "runtime/object_store/object_store.h"

namespace cumulus {

class StoreServer {
 public:
  // Starts serving `store` (which must outlive the server) at `socket_path`. A stale socket file
  // left by a dead server is replaced; a live server at that path is an error.
  static Result<std::unique_ptr<StoreServer>> Start(ObjectStore* store,
                                                    const std::string& socket_path);
  ~StoreServer();  // stops the thread, closes every connection, removes the socket file

  const std::string& socket_path() const { return socket_path_; }
  size_t client_count() const { return clients_.load(); }
  uint64_t rejected_messages() const { return rejected_.load(); }

 private:
  StoreServer(ObjectStore* store, std::string socket_path, int listen_fd, int wake_fd[2]);
  void Run();
  // Handles one packet from `client`; false if the connection must be closed.
  bool Handle(int fd, ClientId client, const uint8_t* bytes, size_t n);

  ObjectStore* store_;
  std::string socket_path_;
  int listen_fd_;
  int wake_read_, wake_write_;
  std::atomic<size_t> clients_{0};
  std::atomic<uint64_t> rejected_{0};
  std::thread thread_;
};

}  // namespace cumulus
