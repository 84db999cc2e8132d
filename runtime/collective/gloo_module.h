// Gloo, loaded when a process first joins a collective group. Gloo and what it links (libibverbs,
// hiredis, libnl) cost every process start about 3 ms (docs/benchmarks.md), and every worker is
// the user's program started again, though only a group's members use Gloo. So everything that
// calls Gloo is a module of its own, libcumulus_gloo.so (gloo_member.cc), that
// CollectiveGroup::Impl::Join loads with dlopen (runtime/base/module_loader.h, $CUMULUS_GLOO_MODULE
// first). What crosses between the two is this header: no Gloo type.
//
// Errors are exceptions (Gloo's own, all std::exception), as they were when Gloo was linked:
// CollectiveGroup::Impl::Run turns them into a Status.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cumulus/collective_group.h"
#include "cumulus/status.h"
#include "runtime/base/module_loader.h"

namespace cumulus {

// The rendezvous store the members meet through (the head's key-value store: HeadStore). Its
// errors are exceptions (std::runtime_error).
class RendezvousStore {
 public:
  virtual ~RendezvousStore() = default;
  virtual void Set(const std::string& key, const std::vector<char>& value) = 0;
  // Waits for `key` to be set (by its peer), up to the store's timeout.
  virtual std::vector<char> Get(const std::string& key) = 0;
  virtual void Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
};

// Gloo's slots for Cumulus's own transfers, apart from those of Gloo's collectives.
constexpr uint8_t kReduceScatterPrefix = 0x51;
constexpr uint8_t kPointToPointPrefix = 0x52;

// One member of a full mesh over Gloo's TCP transport, on host buffers. `tag` keeps operations
// apart (every rank computes the same one); each call blocks until done or Gloo's timeout.
class GlooMember {
 public:
  virtual ~GlooMember() = default;
  // In place; kAvg divides the sum by the world size (integers round towards zero).
  virtual void AllReduce(void* data, size_t count, DType type, ReduceOp op, uint32_t tag) = 0;
  virtual void Broadcast(void* data, size_t bytes, int root, uint32_t tag) = 0;
  // `out` holds world size x `bytes`, rank r's `in` at r x `bytes`.
  virtual void AllGather(const void* in, void* out, size_t bytes, uint32_t tag) = 0;
  // `in` holds world size blocks of `count`; `out` gets block `rank` reduced over every rank. One
  // deadline, `timeout` from the call, for the whole ring.
  virtual void ReduceScatter(const void* in, void* out, size_t count, DType type, ReduceOp op,
                             uint32_t tag, std::chrono::milliseconds timeout) = 0;
  virtual void Barrier(uint32_t tag) = 0;
  // One message to or from `peer` in Gloo's slot (kPointToPointPrefix, `slot_tag`).
  virtual void Send(const void* data, size_t bytes, int peer, uint32_t slot_tag,
                    std::chrono::milliseconds timeout) = 0;
  virtual void Recv(void* data, size_t bytes, int peer, uint32_t slot_tag,
                    std::chrono::milliseconds timeout) = 0;
};

// What the module exports, as one table (kGlooModule.symbol, a function returning it).
struct GlooModule {
  ModuleHeader header;  // Gloo's module does not log: no log threshold to share
  // Joins the full mesh of `world_size` members as `rank`: listens on `bind_host` (an address of
  // this machine, any port), publishes its address in `store` and connects to every other member,
  // within `timeout`. Gloo's timeout for every later operation is `timeout` too. Throws on failure.
  std::unique_ptr<GlooMember> (*connect)(int rank, int world_size, const std::string& bind_host,
                                         std::chrono::milliseconds timeout, RendezvousStore& store);
};
constexpr ModuleSpec kGlooModule{"Gloo's module", "libcumulus_gloo.so", "CUMULUS_GLOO_MODULE",
                                 "cumulus_gloo_module_v1"};

// Loads the module once per process (thread-safe), as LoadModuleOnce says.
inline Result<const GlooModule*> LoadGlooModule() {
  return LoadModuleOnce<GlooModule>(kGlooModule);
}

}  // namespace cumulus
