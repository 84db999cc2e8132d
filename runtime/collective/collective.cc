#include "runtime/collective/collective.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>

#include "runtime/head/control_client.h"

namespace cumulus {

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
  }
  return 0;
}

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
  }
  return "?";
}

namespace {

// Gloo's rendezvous store on the head's key-value store. Gloo calls it from the joining thread
// only; failures become exceptions, which Join turns into a Status.
class HeadStore : public gloo::rendezvous::Store {
 public:
  HeadStore(std::unique_ptr<ControlClient> head, std::string ns, Duration timeout)
      : head_(std::move(head)), ns_(std::move(ns)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    auto put = head_->KvPut(ns_, key, std::string(data.begin(), data.end()));
    if (!put.ok())
      throw std::runtime_error("rendezvous put of " + key + ": " + put.status().message());
  }

  std::vector<char> get(const std::string& key) override {
    auto v = head_->KvWait(ns_, key, timeout_);  // Gloo reads a key its peer may not have set
    if (!v.ok())
      throw std::runtime_error("rendezvous wait for " + key + ": " + v.status().message());
    return std::vector<char>(v->begin(), v->end());
  }

  void wait(const std::vector<std::string>& keys) override {
    wait(keys, std::chrono::duration_cast<std::chrono::milliseconds>(timeout_));
  }

  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override {
    for (auto& k : keys) {
      auto v = head_->KvWait(ns_, k, t);
      if (!v.ok())
        throw std::runtime_error("rendezvous wait for " + k + ": " + v.status().message());
    }
  }

 private:
  std::unique_ptr<ControlClient> head_;
  std::string ns_;
  Duration timeout_;
};

template <typename T>
gloo::AllreduceOptions::Func ReduceFunc(ReduceOp op) {
  using F = void (*)(void*, const void*, const void*, size_t);
  switch (op) {
    case ReduceOp::kMax:
      return static_cast<F>(&gloo::max<T>);
    case ReduceOp::kMin:
      return static_cast<F>(&gloo::min<T>);
    default:
      return static_cast<F>(&gloo::sum<T>);
  }
}

}  // namespace

class CollectiveGroup::Impl {
 public:
  explicit Impl(const CollectiveOptions& o) : options_(o) {}

  Status Join() {
    const auto& o = options_;
    if (o.name.empty()) return Status::InvalidArgument("a collective group needs a name");
    if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size) {
      return Status::InvalidArgument("rank " + std::to_string(o.rank) + " of a group of " +
                                     std::to_string(o.world_size) + " does not exist");
    }
    ControlClientOptions co;
    co.role = "collective";
    co.request_timeout = o.timeout + std::chrono::seconds(5);
    CUMULUS_ASSIGN_OR_RETURN(auto head, ControlClient::Connect(o.head, o.token, co));
    std::string ns = "collective/" + o.name + "/" + std::to_string(o.generation);
    try {
      HeadStore store(std::move(head), ns, o.timeout);
      gloo::transport::tcp::attr attr;
      attr.hostname = o.bind_host;
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(o.rank, o.world_size);
      ctx->setTimeout(std::chrono::duration_cast<std::chrono::milliseconds>(o.timeout));
      ctx->connectFullMesh(store, device);
      context_ = std::move(ctx);
    } catch (const std::exception& e) {
      return Status::Unavailable("rank " + std::to_string(o.rank) + " could not join group '" +
                                 o.name + "' (generation " + std::to_string(o.generation) + ", " +
                                 std::to_string(o.world_size) + " ranks): " + e.what());
    }
    return Status();
  }

  // Runs one operation; Gloo's exceptions (a peer gone, a timeout) fail it and the group.
  template <typename Fn>
  Status Run(const char* what, Fn fn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!broken_.ok()) return broken_;
    try {
      fn();
      return Status();
    } catch (const std::exception& e) {
      std::string why = e.what();
      bool timed_out = why.find("imeout") != std::string::npos;
      std::string msg = std::string(what) + " in group '" + options_.name + "' (rank " +
                        std::to_string(options_.rank) + " of " +
                        std::to_string(options_.world_size) + ") failed: " + why +
                        "; the group must be formed again (a new generation)";
      broken_ = timed_out ? Status::TimedOut(msg) : Status::Unavailable(msg);
      return broken_;
    }
  }

  template <typename T>
  void AllReduceT(void* data, size_t count, ReduceOp op) {
    gloo::AllreduceOptions opts(context_);
    opts.setInput(static_cast<T*>(data), count);
    opts.setOutput(static_cast<T*>(data), count);
    opts.setReduceFunction(ReduceFunc<T>(op));
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setTag(next_tag_++);
    gloo::allreduce(opts);
    if (op == ReduceOp::kAvg) {
      T* p = static_cast<T*>(data);
      for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / options_.world_size);
    }
  }

  Status AllReduce(void* data, size_t count, DType type, ReduceOp op) {
    if (count == 0) return Status();
    if (!data) return Status::InvalidArgument("AllReduce of a null buffer");
    return Run("AllReduce", [&] {
      switch (type) {
        case DType::kFloat32:
          return AllReduceT<float>(data, count, op);
        case DType::kFloat64:
          return AllReduceT<double>(data, count, op);
        case DType::kInt32:
          return AllReduceT<int32_t>(data, count, op);
        case DType::kInt64:
          return AllReduceT<int64_t>(data, count, op);
      }
    });
  }

  Status Broadcast(void* data, size_t count, DType type, int root) {
    if (root < 0 || root >= options_.world_size) {
      return Status::InvalidArgument("Broadcast from rank " + std::to_string(root) +
                                     ", which is not in a group of " +
                                     std::to_string(options_.world_size));
    }
    if (count == 0) return Status();
    if (!data) return Status::InvalidArgument("Broadcast of a null buffer");
    return Run("Broadcast", [&] {
      gloo::BroadcastOptions opts(context_);
      size_t bytes = count * DTypeSize(type);
      opts.setOutput(static_cast<uint8_t*>(data), bytes);
      opts.setRoot(root);
      opts.setTag(next_tag_++);
      gloo::broadcast(opts);
    });
  }

  Status AllGather(const void* in, void* out, size_t count, DType type) {
    if (count == 0) return Status();
    if (!in || !out) return Status::InvalidArgument("AllGather with a null buffer");
    return Run("AllGather", [&] {
      size_t bytes = count * DTypeSize(type);
      gloo::AllgatherOptions opts(context_);
      opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), bytes);
      opts.setOutput(static_cast<uint8_t*>(out), bytes * options_.world_size);
      opts.setTag(next_tag_++);
      gloo::allgather(opts);
    });
  }

  Status Barrier() {
    return Run("Barrier", [&] {
      gloo::BarrierOptions opts(context_);
      opts.setTag(next_tag_++);
      gloo::barrier(opts);
    });
  }

  CollectiveOptions options_;
  std::shared_ptr<gloo::Context> context_;
  std::mutex mu_;
  Status broken_;
  uint32_t next_tag_ = 1;
};

Result<std::unique_ptr<CollectiveGroup>> CollectiveGroup::Join(const CollectiveOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  CUMULUS_RETURN_IF_ERROR(impl->Join());
  return std::unique_ptr<CollectiveGroup>(new CollectiveGroup(std::move(impl)));
}

CollectiveGroup::CollectiveGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CollectiveGroup::~CollectiveGroup() = default;

Status CollectiveGroup::AllReduce(void* data, size_t count, DType type, ReduceOp op) {
  return impl_->AllReduce(data, count, type, op);
}
Status CollectiveGroup::Broadcast(void* data, size_t count, DType type, int root) {
  return impl_->Broadcast(data, count, type, root);
}
Status CollectiveGroup::AllGather(const void* in, void* out, size_t count, DType type) {
  return impl_->AllGather(in, out, count, type);
}
Status CollectiveGroup::Barrier() { return impl_->Barrier(); }
int CollectiveGroup::rank() const { return impl_->options_.rank; }
int CollectiveGroup::world_size() const { return impl_->options_.world_size; }
const std::string& CollectiveGroup::name() const { return impl_->options_.name; }

}  // namespace cumulus
