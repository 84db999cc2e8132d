#include "runtime/collective/collective.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

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
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
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
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "?";
}

Status CollectiveWork::Wait(Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (timeout == Duration::max()) {
    cv_.wait(lock, [&] { return done_; });
  } else if (!cv_.wait_for(lock, timeout, [&] { return done_; })) {
    return Status::TimedOut("the collective operation did not finish in time (it goes on)");
  }
  return status_;
}

bool CollectiveWork::Done() {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void CollectiveWork::Finish(Status st) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = std::move(st);
    done_ = true;
  }
  cv_.notify_all();
}

// 16-bit floats: reduced in float32, rounded back to nearest-even.
float HalfToFloat(uint16_t h) {
  gloo::float16 v;
  v.x = h;
  return gloo::cpu_half2float(v);
}

uint16_t FloatToHalf(float f) { return gloo::cpu_float2half_rn(f).x; }

float BFloatToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToBFloat(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(x >> 16);
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

template <float (*Load)(uint16_t), uint16_t (*Store)(float), int Op>
void Reduce16(void* c_, const void* a_, const void* b_, size_t n) {
  auto* c = static_cast<uint16_t*>(c_);
  auto* a = static_cast<const uint16_t*>(a_);
  auto* b = static_cast<const uint16_t*>(b_);
  for (size_t i = 0; i < n; ++i) {
    float x = Load(a[i]), y = Load(b[i]);
    c[i] = Store(Op == 0 ? x + y : Op == 1 ? std::max(x, y) : std::min(x, y));
  }
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
gloo::AllreduceOptions::Func Reduce16Func(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax:
      return &Reduce16<Load, Store, 1>;
    case ReduceOp::kMin:
      return &Reduce16<Load, Store, 2>;
    default:
      return &Reduce16<Load, Store, 0>;
  }
}

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

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      stop_ = true;
    }
    queue_cv_.notify_all();
    if (worker_.joinable()) worker_.join();
    for (auto& [work, fn] : queue_) work->Finish(Status::Cancelled("the group was closed"));
  }

  // Operations run on this one thread, in the order they were started.
  std::shared_ptr<CollectiveWork> Start(std::function<Status()> op) {
    auto work = std::make_shared<CollectiveWork>();
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      if (!worker_.joinable()) worker_ = std::thread([this] { Work(); });
      queue_.emplace_back(work, std::move(op));
    }
    queue_cv_.notify_all();
    return work;
  }

  void Work() {
    while (true) {
      std::pair<std::shared_ptr<CollectiveWork>, std::function<Status()>> next;
      {
        std::unique_lock<std::mutex> lock(queue_mu_);
        queue_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        next = std::move(queue_.front());
        queue_.pop_front();
      }
      next.first->Finish(next.second());
    }
  }

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
      // Close this member's connections now: the others, who may be waiting for it inside the
      // same operation, fail at once instead of at their timeout.
      context_.reset();
      return broken_;
    }
  }

  template <typename T>
  void AllReduceT(void* data, size_t count, ReduceOp op) {
    gloo::AllreduceOptions opts(context_);
    opts.setInput(static_cast<T*>(data), count);
    opts.setOutput(static_cast<T*>(data), count);
    opts.setReduceFunction(ReduceFunc<T>(op));
    Ring(opts);
    if (op == ReduceOp::kAvg) {
      T* p = static_cast<T*>(data);
      for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / options_.world_size);
    }
  }

  template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
  void AllReduce16(void* data, size_t count, ReduceOp op) {
    gloo::AllreduceOptions opts(context_);
    opts.setInput(static_cast<uint16_t*>(data), count);
    opts.setOutput(static_cast<uint16_t*>(data), count);
    opts.setReduceFunction(Reduce16Func<Load, Store>(op));
    Ring(opts);
    if (op == ReduceOp::kAvg) {
      auto* p = static_cast<uint16_t*>(data);
      for (size_t i = 0; i < count; ++i) p[i] = Store(Load(p[i]) / options_.world_size);
    }
  }

  void Ring(gloo::AllreduceOptions& opts) {
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setTag(next_tag_++);
    gloo::allreduce(opts);
  }

  Status AllReduce(void* data, size_t count, DType type, ReduceOp op) {
    if (count == 0) return Status();
    if (!data) return Status::InvalidArgument("AllReduce of a null buffer");
    return Run("AllReduce", [&] {
      switch (type) {
        case DType::kFloat16:
          return AllReduce16<HalfToFloat, FloatToHalf>(data, count, op);
        case DType::kBFloat16:
          return AllReduce16<BFloatToFloat, FloatToBFloat>(data, count, op);
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
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<std::pair<std::shared_ptr<CollectiveWork>, std::function<Status()>>> queue_;
  bool stop_ = false;
  std::thread worker_;
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

// Every operation runs on the group's thread, in order; the synchronous ones wait for theirs.
std::shared_ptr<CollectiveWork> CollectiveGroup::AllReduceAsync(void* data, size_t count,
                                                                DType type, ReduceOp op) {
  return impl_->Start([=] { return impl_->AllReduce(data, count, type, op); });
}
std::shared_ptr<CollectiveWork> CollectiveGroup::BroadcastAsync(void* data, size_t count,
                                                                DType type, int root) {
  return impl_->Start([=] { return impl_->Broadcast(data, count, type, root); });
}
Status CollectiveGroup::AllReduce(void* data, size_t count, DType type, ReduceOp op) {
  return AllReduceAsync(data, count, type, op)->Wait();
}
Status CollectiveGroup::Broadcast(void* data, size_t count, DType type, int root) {
  return BroadcastAsync(data, count, type, root)->Wait();
}
Status CollectiveGroup::AllGather(const void* in, void* out, size_t count, DType type) {
  return impl_->Start([=] { return impl_->AllGather(in, out, count, type); })->Wait();
}
Status CollectiveGroup::Barrier() {
  return impl_->Start([=] { return impl_->Barrier(); })->Wait();
}
int CollectiveGroup::rank() const { return impl_->options_.rank; }
int CollectiveGroup::world_size() const { return impl_->options_.world_size; }
const std::string& CollectiveGroup::name() const { return impl_->options_.name; }

}  // namespace cumulus
