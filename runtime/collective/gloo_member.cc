// libcumulus_gloo.so: every call into Gloo (runtime/collective/gloo_module.h). A member's full
// mesh over Gloo's TCP transport, its collectives on host buffers, Cumulus's ring reduce-scatter
// and point-to-point messages on Gloo's unbound buffers.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cumulus/cumulus.h"
#include "runtime/collective/gloo_module.h"
#include "runtime/collective/gloo_reduce.h"

namespace cumulus {
namespace {

// Gloo's rendezvous store on the host's.
class StoreAdapter : public gloo::rendezvous::Store {
 public:
  StoreAdapter(RendezvousStore& store, std::chrono::milliseconds timeout)
      : store_(store), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_.Set(key, data);
  }
  std::vector<char> get(const std::string& key) override { return store_.Get(key); }
  void wait(const std::vector<std::string>& keys) override {
    // Gloo calls the form with a timeout; this one only if a version of it does not.
    store_.Wait(keys, timeout_);
  }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override {
    store_.Wait(keys, t);
  }

 private:
  RendezvousStore& store_;
  std::chrono::milliseconds timeout_;  // the group's
};

template <typename T>
void SetBuffer(gloo::AllreduceOptions& opts, void* data, size_t count) {
  opts.setInput(static_cast<T*>(data), count);
  opts.setOutput(static_cast<T*>(data), count);
}

class Member : public GlooMember {
 public:
  Member(std::shared_ptr<gloo::Context> context, int rank, int world_size)
      : context_(std::move(context)), rank_(rank), world_size_(world_size) {}

  void AllReduce(void* data, size_t count, DType type, ReduceOp op, uint32_t tag) override {
    gloo::AllreduceOptions opts(context_);
    switch (type) {  // Gloo splits the buffer by element: give it the element type
      case DType::kFloat16:
      case DType::kBFloat16:
        SetBuffer<uint16_t>(opts, data, count);
        break;
      case DType::kFloat32:
        SetBuffer<float>(opts, data, count);
        break;
      case DType::kFloat64:
        SetBuffer<double>(opts, data, count);
        break;
      case DType::kInt32:
        SetBuffer<int32_t>(opts, data, count);
        break;
      case DType::kInt64:
        SetBuffer<int64_t>(opts, data, count);
        break;
    }
    opts.setReduceFunction(ReduceFor(type, op));
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setTag(tag);
    gloo::allreduce(opts);
    if (op == ReduceOp::kAvg) Divide(data, count, type, world_size_);
  }

  void Broadcast(void* data, size_t bytes, int root, uint32_t tag) override {
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(static_cast<uint8_t*>(data), bytes);
    opts.setRoot(root);
    opts.setTag(tag);
    gloo::broadcast(opts);
  }

  void AllGather(const void* in, void* out, size_t bytes, uint32_t tag) override {
    gloo::AllgatherOptions opts(context_);
    opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), bytes);
    opts.setOutput(static_cast<uint8_t*>(out), bytes * static_cast<size_t>(world_size_));
    opts.setTag(tag);
    gloo::allgather(opts);
  }

  // Ring reduce-scatter: in step s, rank r sends its partial sum of block (r - s - 1) to the
  // right and adds the left's partial sum of block (r - s - 2) into its own; after n - 1 steps
  // block r holds every rank's contribution.
  void ReduceScatter(const void* in, void* out, size_t count, DType type, ReduceOp op, uint32_t tag,
                     std::chrono::milliseconds timeout) override {
    const int n = world_size_, r = rank_;
    const size_t block = count * DTypeSize(type);
    if (n > 1) {
      std::vector<uint8_t> acc(static_cast<const uint8_t*>(in),
                               static_cast<const uint8_t*>(in) + block * n);
      std::vector<uint8_t> scratch(block);
      auto send = context_->createUnboundBuffer(acc.data(), acc.size());
      auto recv = context_->createUnboundBuffer(scratch.data(), scratch.size());
      auto reduce = ReduceFor(type, op);
      const int right = (r + 1) % n, left = (r + n - 1) % n;
      // One deadline for the whole ring, not a timeout per step.
      const auto deadline = std::chrono::steady_clock::now() + timeout;
      auto left_ms = [&] {
        return std::max(std::chrono::milliseconds(1),
                        std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now()));
      };
      for (int s = 0; s < n - 1; ++s) {
        uint64_t slot = gloo::Slot::build(kReduceScatterPrefix, tag + static_cast<uint32_t>(s));
        size_t out_block = static_cast<size_t>((r - s - 1 + 2 * n) % n);
        size_t in_block = static_cast<size_t>((r - s - 2 + 2 * n) % n);
        send->send(right, slot, out_block * block, block);
        recv->recv(left, slot, 0, block);
        recv->waitRecv(left_ms());
        reduce(acc.data() + in_block * block, acc.data() + in_block * block, scratch.data(), count);
        send->waitSend(left_ms());
      }
      std::memcpy(out, acc.data() + static_cast<size_t>(r) * block, block);
    } else {
      std::memcpy(out, in, block);
    }
    if (op == ReduceOp::kAvg) Divide(out, count, type, n);
  }

  void Barrier(uint32_t tag) override {
    gloo::BarrierOptions opts(context_);
    opts.setTag(tag);
    gloo::barrier(opts);
  }

  void Send(const void* data, size_t bytes, int peer, uint32_t slot_tag,
            std::chrono::milliseconds timeout) override {
    auto buf = context_->createUnboundBuffer(const_cast<void*>(data), bytes);
    buf->send(peer, gloo::Slot::build(kPointToPointPrefix, slot_tag), 0, bytes);
    buf->waitSend(timeout);
  }

  void Recv(void* data, size_t bytes, int peer, uint32_t slot_tag,
            std::chrono::milliseconds timeout) override {
    auto buf = context_->createUnboundBuffer(data, bytes);
    buf->recv(peer, gloo::Slot::build(kPointToPointPrefix, slot_tag), 0, bytes);
    buf->waitRecv(timeout);
  }

 private:
  std::shared_ptr<gloo::Context> context_;
  int rank_, world_size_;
};

std::unique_ptr<GlooMember> Connect(int rank, int world_size, const std::string& bind_host,
                                    std::chrono::milliseconds timeout, RendezvousStore& store) {
  gloo::transport::tcp::attr attr;
  attr.hostname = bind_host;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, world_size);
  context->setTimeout(timeout);
  StoreAdapter adapter(store, timeout);  // used only while connecting (this Gloo keeps no Store)
  context->connectFullMesh(adapter, device);
  return std::make_unique<Member>(std::move(context), rank, world_size);
}

}  // namespace
}  // namespace cumulus

// Returns the table as the loader calls it (const void* (*)(): runtime/base/module_loader.h).
extern "C" __attribute__((visibility("default"))) const void* cumulus_gloo_module_v1() {
  static const cumulus::GlooModule table{{cumulus::Version(), nullptr, nullptr}, &cumulus::Connect};
  return &table;
}
