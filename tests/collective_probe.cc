// collective_probe: one member of a collective group, for collective_test. Every rank fills its
// buffers with value(rank, i) = (rank + 1) * (i % 97 + 1), so each can compute what every
// operation must give, and prints "CHECK <name> ok|FAIL <why>" lines and "DONE failures=N".
//   collective_probe --address=A --token-file=F --name=G --world=N --rank=R [--generation=K]
//                    [--case=ops|die|hang|mismatch|watchdog] [--big=1] [--timeout-ms=T]
// --case=die: the last rank SIGKILLs itself before an allreduce; the others must fail (by the
// timeout at the latest: HangGuard), then form generation K+1 without it and check an allreduce
// there.
// --case=mismatch: rank 0 issues an allreduce where the others issue a broadcast; every rank
// must fail with an error that says so, within 5 s (the test's timeout is 8 s).
// --case=hang: the last rank SIGSTOPs itself before an allreduce; the others must fail by the
// timeout (HangGuard). --case=watchdog (with CUMULUS_COLLECTIVE_FAILPOINT=stall): a barrier that
// never ends is failed by the watchdog. --case=gpu: device buffers through NCCL against host
// buffers through Gloo (prints "SKIP <why>" where no GPU or no NCCL).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#if CUMULUS_HAVE_NCCL
#include <cuda_runtime.h>
#endif

#include "cumulus/collective.h"
#include "driver_checks.h"
#include "runtime/collective/collective.h"
#include "runtime/collective/nccl_comm.h"
#include "runtime/head/head_server.h"

using namespace cumulus;
using driver::Check;

namespace {

// How long an operation that must fail by its timeout may take, in seconds: the timeout is what
// fails it, and this bound only tells a failure from a hang, with room for a loaded machine
// (ctest -j2); twice the timeout and 10 s more.
double HangGuard(std::chrono::nanoseconds timeout) {
  return 2 * std::chrono::duration<double>(timeout).count() + 10;
}

template <typename T>
T Value(int rank, size_t i) {
  return static_cast<T>((rank + 1) * static_cast<int64_t>(i % 97 + 1));
}

template <typename T>
T Expected(ReduceOp op, int world, size_t i) {
  T v = Value<T>(0, i);
  switch (op) {
    case ReduceOp::kSum:
      return static_cast<T>(v * (world * (world + 1) / 2));
    case ReduceOp::kAvg:
      return static_cast<T>(static_cast<T>(v * (world * (world + 1) / 2)) / world);
    case ReduceOp::kMax:
      return static_cast<T>(v * world);
    case ReduceOp::kMin:
      return v;
  }
  return 0;
}

const char* OpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "?";
}

template <typename T>
void CheckAllReduce(CollectiveGroup& g, DType type, ReduceOp op, size_t n) {
  std::vector<T> buf(n);
  for (size_t i = 0; i < n; ++i) buf[i] = Value<T>(g.rank(), i);
  Status st = g.AllReduce(buf.data(), n, type, op);
  size_t bad = n;
  for (size_t i = 0; i < n && st.ok(); ++i) {
    if (buf[i] != Expected<T>(op, g.world_size(), i)) {
      bad = i;
      break;
    }
  }
  std::string name =
      std::string("allreduce_") + OpName(op) + "_" + DTypeName(type) + "_" + std::to_string(n);
  Check(name, st.ok() && bad == n,
        st.ok() ? "element " + std::to_string(bad) + " is " + std::to_string(buf[bad]) +
                      ", expected " + std::to_string(Expected<T>(op, g.world_size(), bad))
                : st.ToString());
}

template <typename T>
void CheckAll(CollectiveGroup& g, DType type) {
  for (size_t n : {size_t{1}, size_t{7919}}) {  // one element, and a prime number of them
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
      CheckAllReduce<T>(g, type, op, n);
    }
  }
  // Broadcast from the last rank.
  std::vector<T> b(1001);
  for (size_t i = 0; i < b.size(); ++i) b[i] = Value<T>(g.rank(), i);
  int root = g.world_size() - 1;
  Status st = g.Broadcast(b.data(), b.size(), type, root);
  bool same = st.ok();
  for (size_t i = 0; i < b.size() && same; ++i) same = b[i] == Value<T>(root, i);
  Check(std::string("broadcast_") + DTypeName(type), same, st.ToString());
  // Allgather: rank r's block holds value(r, i).
  std::vector<T> in(333), out(333 * g.world_size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = Value<T>(g.rank(), i);
  st = g.AllGather(in.data(), out.data(), in.size(), type);
  bool gathered = st.ok();
  for (int r = 0; r < g.world_size() && gathered; ++r) {
    for (size_t i = 0; i < in.size() && gathered; ++i) {
      gathered = out[r * in.size() + i] == Value<T>(r, i);
    }
  }
  Check(std::string("allgather_") + DTypeName(type), gathered, st.ToString());
}

// ReduceScatter: rank r ends with the reduction of block r of every rank's input.
template <typename T>
void CheckReduceScatter(CollectiveGroup& g, DType type, ReduceOp op, size_t n) {
  int w = g.world_size();
  std::vector<T> in(n * w), out(n);
  for (size_t i = 0; i < in.size(); ++i) in[i] = Value<T>(g.rank(), i);
  Status st = g.ReduceScatter(in.data(), out.data(), n, type, op);
  std::string why = st.ToString();
  bool ok = st.ok();
  for (size_t i = 0; i < n && ok; ++i) {
    T want = Expected<T>(op, w, g.rank() * n + i);
    if (out[i] != want) {
      ok = false;
      why = "element " + std::to_string(i) + " is " + std::to_string(out[i]) + ", expected " +
            std::to_string(want);
    }
  }
  Check(
      std::string("reducescatter_") + OpName(op) + "_" + DTypeName(type) + "_" + std::to_string(n),
      ok, why);
}

// Send/Recv around the ring: rank r sends value(r, i) to r + 1 and receives r - 1's. Even ranks
// send first, odd ones receive first, so no two ranks wait on each other.
void CheckSendRecv(CollectiveGroup& g) {
  int w = g.world_size(), r = g.rank();
  std::vector<int64_t> mine(5003), theirs(5003, -1);
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = Value<int64_t>(r, i);
  Status s1, s2;
  for (int round = 0; round < 2; ++round) {  // twice: the second pair must match the second
    if (r % 2 == 0) {
      s1 = g.Send(mine.data(), mine.size(), DType::kInt64, (r + 1) % w);
      s2 = g.Recv(theirs.data(), theirs.size(), DType::kInt64, (r + w - 1) % w);
    } else {
      s2 = g.Recv(theirs.data(), theirs.size(), DType::kInt64, (r + w - 1) % w);
      s1 = g.Send(mine.data(), mine.size(), DType::kInt64, (r + 1) % w);
    }
    for (auto& v : mine) v += 1000000;
  }
  bool ok = s1.ok() && s2.ok();
  for (size_t i = 0; i < theirs.size() && ok; ++i) {
    ok = theirs[i] == Value<int64_t>((r + w - 1) % w, i) + 1000000;
  }
  Check("send_recv_ring", ok, s1.ToString() + " " + s2.ToString());
  Status self = g.Send(mine.data(), 1, DType::kInt64, r);
  Check("send_to_self_refused", self.code() == StatusCode::kInvalidArgument, self.ToString());
}

// Gradient buckets: tensors of uneven sizes cut into a 1 KiB first bucket and then 1 MiB ones,
// marked ready out of order, end averaged like one allreduce of the whole buffer would.
void CheckBuckets(CollectiveGroup& g) {
  std::vector<size_t> sizes = {5, 300000, 7, 70000};
  size_t total = 0;
  for (size_t n : sizes) total += n;
  std::vector<float> grads(total);
  bool ok = true;
  std::string why;
  GradientBuckets buckets(&g, grads.data(), sizes, 1024, 1 << 20);
  ok = buckets.buckets() == 3 && buckets.bucket_tensors(1) == std::make_pair<size_t, size_t>(1, 2);
  if (!ok) why = std::to_string(buckets.buckets()) + " buckets";
  for (int step = 0; step < 2 && ok; ++step) {
    for (size_t i = 0; i < total; ++i) grads[i] = Value<float>(g.rank(), i) + step;
    for (size_t t : {3, 2, 0}) buckets.Ready(t);  // tensor 1 never: Wait reduces it anyway
    Status st = buckets.Wait();
    ok = st.ok();
    why = st.ToString();
    for (size_t i = 0; i < total && ok; ++i) {
      float want = Expected<float>(ReduceOp::kAvg, g.world_size(), i) + step;
      if (grads[i] != want) {
        ok = false;
        why = "step " + std::to_string(step) + " element " + std::to_string(i) + " is " +
              std::to_string(grads[i]) + ", expected " + std::to_string(want);
      }
    }
  }
  Check("gradient_buckets", ok, why);
}

// 16-bit floats: small integers (exact in both formats through every reduction here), with
// allreduce and reduce-scatter.
template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void Check16(CollectiveGroup& g, DType type) {
  const size_t n = 7919;
  auto value = [](int rank, size_t i) { return static_cast<float>((rank + 1) * (i % 13 + 1)); };
  int w = g.world_size();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
    std::vector<uint16_t> buf(n);
    for (size_t i = 0; i < n; ++i) buf[i] = Store(value(g.rank(), i));
    Status st = g.AllReduce(buf.data(), n, type, op);
    std::string why = st.ToString();
    bool ok = st.ok();
    for (size_t i = 0; i < n && ok; ++i) {
      float v = value(0, i), sum = v * (w * (w + 1) / 2);
      float want = op == ReduceOp::kSum   ? sum
                   : op == ReduceOp::kAvg ? sum / w
                   : op == ReduceOp::kMax ? v * w
                                          : v;
      if (Load(buf[i]) != want) {
        ok = false;
        why = "element " + std::to_string(i) + " is " + std::to_string(Load(buf[i])) +
              ", expected " + std::to_string(want);
      }
    }
    Check(std::string("allreduce_") + OpName(op) + "_" + DTypeName(type), ok, why);
  }
  // Reduce-scatter (our own ring, reducing in float32 too): rank r gets block r summed.
  const size_t block = 1001;
  std::vector<uint16_t> in(block * w), out(block);
  for (size_t i = 0; i < in.size(); ++i) in[i] = Store(value(g.rank(), i));
  Status st = g.ReduceScatter(in.data(), out.data(), block, type, ReduceOp::kSum);
  std::string why = st.ToString();
  bool ok = st.ok();
  for (size_t i = 0; i < block && ok; ++i) {
    float want = value(0, g.rank() * block + i) * (w * (w + 1) / 2);
    if (Load(out[i]) != want) {
      ok = false;
      why = "element " + std::to_string(i) + " is " + std::to_string(Load(out[i])) + ", expected " +
            std::to_string(want);
    }
  }
  Check(std::string("reducescatter_sum_") + DTypeName(type), ok, why);
}

// Five operations in flight at once (allreduce, broadcast, allgather, reduce-scatter, barrier),
// finished in the order they were started.
void CheckAsync(CollectiveGroup& g) {
  std::vector<float> a(4099), b(4099);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = Value<float>(g.rank(), i);
    b[i] = Value<float>(g.rank(), i);
  }
  const int w = g.world_size();
  std::vector<int32_t> mine(101, g.rank()), all(101 * w, -1), blocks(101 * w), reduced(101);
  for (size_t i = 0; i < blocks.size(); ++i) blocks[i] = Value<int32_t>(g.rank(), i);
  auto first = g.AllReduceAsync(a.data(), a.size(), DType::kFloat32, ReduceOp::kSum);
  auto second = g.BroadcastAsync(b.data(), b.size(), DType::kFloat32, 0);
  auto third = g.AllGatherAsync(mine.data(), all.data(), mine.size(), DType::kInt32);
  auto fourth =
      g.ReduceScatterAsync(blocks.data(), reduced.data(), 101, DType::kInt32, ReduceOp::kSum);
  auto fifth = g.BarrierAsync();
  Status s5 = fifth->Wait(), s2 = second->Wait(), s1 = first->Wait(), s3 = third->Wait(),
         s4 = fourth->Wait();
  bool ok = s1.ok() && s2.ok() && s3.ok() && s4.ok() && s5.ok() && first->Done() && second->Done();
  for (size_t i = 0; i < a.size() && ok; ++i) {
    ok = a[i] == Expected<float>(ReduceOp::kSum, w, i) && b[i] == Value<float>(0, i);
  }
  for (size_t i = 0; i < all.size() && ok; ++i) ok = all[i] == static_cast<int32_t>(i / 101);
  for (size_t i = 0; i < reduced.size() && ok; ++i) {
    ok = reduced[i] == Expected<int32_t>(ReduceOp::kSum, w, g.rank() * 101 + i);
  }
  Check("async_allreduce_and_broadcast", ok,
        s1.ToString() + " " + s2.ToString() + " " + s3.ToString() + " " + s4.ToString() + " " +
            s5.ToString());
}

#if CUMULUS_HAVE_NCCL
// Device buffers through NCCL, checked against the same operation on host buffers (Gloo) in the
// same group.
template <typename T>
void CheckDeviceAgainstHost(CollectiveGroup& g, DType type, ReduceOp op, size_t n) {
  std::vector<T> host(n), back(n);
  for (size_t i = 0; i < n; ++i) host[i] = Value<T>(g.rank(), i);
  T* dev = nullptr;
  std::string name =
      std::string("gpu_allreduce_") + OpName(op) + "_" + DTypeName(type) + "_" + std::to_string(n);
  if (cudaMalloc(&dev, n * sizeof(T)) != cudaSuccess) {
    Check(name, false, "cudaMalloc failed");
    return;
  }
  cudaMemcpy(dev, host.data(), n * sizeof(T), cudaMemcpyHostToDevice);
  Status sd = g.AllReduce(dev, n, type, op);
  Status sh = g.AllReduce(host.data(), n, type, op);
  cudaMemcpy(back.data(), dev, n * sizeof(T), cudaMemcpyDeviceToHost);
  cudaFree(dev);
  // NCCL averages by scaling each input by 1/n before summing, Gloo divides the sum: allow for
  // the last bit where 1/n is not exact.
  bool ok = sd.ok() && sh.ok();
  for (size_t i = 0; i < n && ok; ++i) {
    double a = static_cast<double>(back[i]), b = static_cast<double>(host[i]);
    ok = op == ReduceOp::kAvg ? std::fabs(a - b) <= 1e-6 * std::fabs(b) : back[i] == host[i];
  }
  Check(name, ok, sd.ToString() + " " + sh.ToString());
}

void CheckGpu(CollectiveGroup& g) {
  Check("nccl_communicator", g.has_nccl());
  for (size_t n : {size_t{1}, size_t{7919}, size_t{16} << 20}) {
    CheckDeviceAgainstHost<float>(g, DType::kFloat32, ReduceOp::kSum, n);
  }
  CheckDeviceAgainstHost<double>(g, DType::kFloat64, ReduceOp::kMax, 7919);
  CheckDeviceAgainstHost<int64_t>(g, DType::kInt64, ReduceOp::kMin, 7919);
  CheckDeviceAgainstHost<float>(g, DType::kFloat32, ReduceOp::kAvg, 7919);
  // Broadcast, allgather and reduce-scatter on the device.
  const size_t n = 4099;
  int w = g.world_size();
  std::vector<float> in(n * w), out(n * w);
  for (size_t i = 0; i < in.size(); ++i) in[i] = Value<float>(g.rank(), i);
  float *din = nullptr, *dout = nullptr;
  cudaMalloc(&din, in.size() * sizeof(float));
  cudaMalloc(&dout, out.size() * sizeof(float));
  cudaMemcpy(din, in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice);
  Status st = g.AllGather(din, dout, n, DType::kFloat32);
  cudaMemcpy(out.data(), dout, out.size() * sizeof(float), cudaMemcpyDeviceToHost);
  bool ok = st.ok();
  for (int r = 0; r < w && ok; ++r) {
    for (size_t i = 0; i < n && ok; ++i) ok = out[r * n + i] == Value<float>(r, i);
  }
  Check("gpu_allgather_float32", ok, st.ToString());
  st = g.ReduceScatter(din, dout, n, DType::kFloat32, ReduceOp::kSum);
  cudaMemcpy(out.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost);
  ok = st.ok();
  for (size_t i = 0; i < n && ok; ++i) {
    ok = out[i] == Expected<float>(ReduceOp::kSum, w, g.rank() * n + i);
  }
  Check("gpu_reducescatter_float32", ok, st.ToString());
  st = g.Broadcast(din, n, DType::kFloat32, 0);
  cudaMemcpy(out.data(), din, n * sizeof(float), cudaMemcpyDeviceToHost);
  ok = st.ok();
  for (size_t i = 0; i < n && ok; ++i) ok = out[i] == Value<float>(0, i);
  Check("gpu_broadcast_float32", ok, st.ToString());
  Status mixed = g.AllGather(din, out.data(), n, DType::kFloat32);
  Check("gpu_mixed_buffers_refused", mixed.code() == StatusCode::kInvalidArgument,
        mixed.ToString());
  cudaFree(din);
  cudaFree(dout);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  auto args = driver::Args(argc, argv);
  CollectiveOptions o;
  o.name = args["name"];
  o.world_size = std::atoi(args["world"].c_str());
  o.rank = std::atoi(args["rank"].c_str());
  o.generation = static_cast<uint32_t>(std::atoi(args["generation"].c_str()));
  o.timeout = std::chrono::milliseconds(
      args.count("timeout-ms") ? std::atoi(args["timeout-ms"].c_str()) : 60000);
  auto head = ParseHostPort(args["address"]);
  auto token = LoadToken(args["token-file"]);
  if (!head.ok() || !token.ok()) {
    std::fprintf(stderr, "collective_probe: bad --address or --token-file\n");
    return 2;
  }
  o.head = *head;
  o.token = *token;
  // Host buffers only (no CUDA context per probe on a GPU machine), except the GPU case.
  o.nccl = CollectiveOptions::Nccl::kOff;
  if (args["case"] == "gpu") {
    std::string why;
    if (!NcclComm::Available(&why)) {
      std::printf("SKIP %s\n", why.c_str());
      return 0;
    }
    o.nccl = CollectiveOptions::Nccl::kOn;
  }
  auto g = CollectiveGroup::Join(o);
  Check("joined", g.ok(), g.ok() ? "" : g.status().ToString());
  if (!g.ok()) {
    std::printf("DONE failures=%d\n", driver::failures);
    return 1;
  }
  CollectiveGroup& group = **g;
  if (args["case"] == "gpu") {
#if CUMULUS_HAVE_NCCL
    CheckGpu(group);
#endif
  } else if (args["case"] == "mismatch") {
    // Rank 0 issues an allreduce where the others issue a broadcast.
    Check("barrier_before", group.Barrier().ok());
    std::vector<float> buf(100, 1.0f);
    auto start = std::chrono::steady_clock::now();
    Status st = group.rank() == 0
                    ? group.AllReduce(buf.data(), buf.size(), DType::kFloat32, ReduceOp::kSum)
                    : group.Broadcast(buf.data(), buf.size(), DType::kFloat32, 0);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The watchdog compares the ranks' operations after a second: well before the timeout. The
    // time is the behaviour checked (found by the comparison, not by the 8 s timeout that
    // collective_test gives), so the bound stays below the timeout: 5 s.
    double limit = std::min(5.0, std::chrono::duration<double>(o.timeout).count() + 5);
    std::printf("error: %s\n", st.ToString().c_str());
    Check("mismatch_fails_clearly",
          !st.ok() && took < limit &&
              st.message().find("ranks issued different operations") != std::string::npos,
          st.ToString() + " after " + std::to_string(took) + " s");
  } else if (args["case"] == "hang") {
    // The last rank stops (SIGSTOP) before an allreduce; the test kills it afterwards.
    Check("barrier_before", group.Barrier().ok());
    std::fflush(stdout);
    if (group.rank() == group.world_size() - 1) kill(getpid(), SIGSTOP);
    std::vector<float> buf(1 << 16, 1.0f);
    auto start = std::chrono::steady_clock::now();
    Status st = group.AllReduce(buf.data(), buf.size(), DType::kFloat32, ReduceOp::kSum);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double limit = HangGuard(o.timeout);
    Check("hung_peer_fails_the_others", !st.ok() && took < limit,
          st.ok() ? "it succeeded" : st.ToString() + " after " + std::to_string(took) + " s");
  } else if (args["case"] == "watchdog") {
    // With CUMULUS_COLLECTIVE_FAILPOINT=stall the operation never returns in time: the watchdog
    // must fail it, and closing the group must not wait for the stuck thread.
    auto start = std::chrono::steady_clock::now();
    Status st = group.Barrier();
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double limit = HangGuard(o.timeout);
    Check("watchdog_fails_a_stuck_operation",
          st.code() == StatusCode::kTimedOut &&
              st.message().find("watchdog gave up") != std::string::npos && took < limit,
          st.ToString() + " after " + std::to_string(took) + " s");
    Status after = group.Barrier();
    Check("group_refuses_after_watchdog", after.code() == StatusCode::kTimedOut, after.ToString());
  } else if (args["case"] == "die") {
    Check("barrier_before", group.Barrier().ok());
    if (group.rank() == group.world_size() - 1) kill(getpid(), SIGKILL);
    std::vector<float> buf(1 << 16, 1.0f);
    auto start = std::chrono::steady_clock::now();
    Status st = group.AllReduce(buf.data(), buf.size(), DType::kFloat32, ReduceOp::kSum);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double limit = HangGuard(o.timeout);
    Check("peer_death_fails_the_others", !st.ok() && took < limit,
          st.ok() ? "it succeeded" : st.ToString() + " after " + std::to_string(took) + " s");
    Check("group_refuses_after_failure", !group.Barrier().ok());
    // Form the group again without the dead rank.
    CollectiveOptions again = o;
    again.generation = o.generation + 1;
    again.world_size = o.world_size - 1;
    // A survivor may only notice at the end of the timeout, after the other began to wait here.
    again.timeout = 3 * o.timeout;
    auto g2 = CollectiveGroup::Join(again);
    Check("reformed", g2.ok(), g2.ok() ? "" : g2.status().ToString());
    if (g2.ok()) CheckAllReduce<float>(**g2, DType::kFloat32, ReduceOp::kSum, 7919);
  } else {
    CheckAll<float>(group, DType::kFloat32);
    CheckAll<double>(group, DType::kFloat64);
    CheckAll<int32_t>(group, DType::kInt32);
    CheckAll<int64_t>(group, DType::kInt64);
    for (size_t n : {size_t{1}, size_t{7919}}) {
      CheckReduceScatter<float>(group, DType::kFloat32, ReduceOp::kSum, n);
      CheckReduceScatter<int64_t>(group, DType::kInt64, ReduceOp::kMax, n);
      CheckReduceScatter<double>(group, DType::kFloat64, ReduceOp::kAvg, n);
    }
    CheckSendRecv(group);
    CheckBuckets(group);
    Check16<HalfToFloat, FloatToHalf>(group, DType::kFloat16);
    Check16<BFloatToFloat, FloatToBFloat>(group, DType::kBFloat16);
    CheckAsync(group);
    Check("barrier", group.Barrier().ok());
    if (args["big"] == "1")
      CheckAllReduce<float>(group, DType::kFloat32, ReduceOp::kSum, 64u << 20);
    Status bad = group.Broadcast(nullptr, 1, DType::kFloat32, group.world_size());
    Check("broadcast_bad_root_refused", bad.code() == StatusCode::kInvalidArgument, bad.ToString());
  }
  std::printf("DONE failures=%d\n", driver::failures);
  std::fflush(stdout);
  return driver::failures == 0 ? 0 : 1;
}
