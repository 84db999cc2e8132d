// One call of a job's function or an actor's method from outside the job (call_client.h).
#include "runtime/call/call_client.h"

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <future>
#include <thread>

#include "runtime/core/caller_connection.h"
#include "runtime/core/messages.h"
#include "runtime/head/node_codec.h"
#include "runtime/net/first_segment.h"
#include "runtime/object_store/object_store.h"
#include "runtime/transfer/object_transfer.h"
#include "scheduler/resources.h"

namespace cumulus {

namespace {

Result<std::string> SubmitFrame(const CallRequest& r, const TaskId& task) {
  size_t payload = r.function.size();
  for (const auto& a : r.args) payload += a.size();
  capnp::MallocMessageBuilder message(FrameFirstSegmentWords(payload));
  auto spec = message.initRoot<proto::CoreMessage>().initSubmitTask();
  spec.setTaskId(DataOf(task));
  spec.setJobId(DataOf(r.job));
  spec.setFunctionName(r.function);
  spec.setNumReturns(1);
  spec.setMaxRetries(r.max_retries);
  if (!r.actor.IsNil()) spec.setActorId(DataOf(r.actor));
  auto args = spec.initArgs(static_cast<unsigned>(r.args.size()));
  for (unsigned i = 0; i < r.args.size(); ++i) {
    args[i].setInline(
        capnp::Data::Reader(reinterpret_cast<const uint8_t*>(r.args[i].data()), r.args[i].size()));
  }
  if (r.actor.IsNil()) {
    ResourceSet demand;
    demand.Set("CPU", 1);
    if (!r.resources.empty()) demand = ResourceSet();
    for (auto& [name, amount] : r.resources) {
      CUMULUS_RETURN_IF_ERROR(ResourceSet::CheckAmount(name, amount));
      if (amount > 0) demand.Set(name, amount);
    }
    EncodeResources(demand, spec.initResources(static_cast<unsigned>(demand.units().size())));
  }
  return EncodeFrame(message);
}

std::string FreeFrame(const ObjectId& object, const NodeId& node) {
  capnp::MallocMessageBuilder message(kFrameFirstSegmentWords);
  auto list = message.initRoot<proto::CoreMessage>().initFreeObjects(1);
  std::string entry = object.Binary() + node.Binary();
  list.set(0, capnp::Data::Reader(reinterpret_cast<const uint8_t*>(entry.data()), entry.size()));
  return EncodeFrame(message);
}

// Pulls a stored result into memory. With `stop`, the pull runs on a thread of its own while
// this thread asks `stop` every `every`; true cancels it (its connection shut down): Cancelled.
Result<std::string> PullResult(const std::string& from, const std::string& token,
                               const ObjectId& id, uint64_t size, const std::function<bool()>& stop,
                               Duration every) {
  CUMULUS_ASSIGN_OR_RETURN(HostPort address, ParseHostPort(from));
  std::string bytes;
  PullTarget target;
  target.create = [&](const ObjectId&, uint64_t n) -> Result<MutableBuffer> {
    if (n != size) {
      return Status::InvalidArgument("the stored result is " + std::to_string(n) +
                                     " bytes, its task said " + std::to_string(size));
    }
    bytes.assign(n, '\0');
    MutableBuffer b;
    b.data = reinterpret_cast<uint8_t*>(bytes.data());
    b.size = n;
    return b;
  };
  target.seal = [](const ObjectId&) { return Status(); };
  target.abort = [](const ObjectId&) { return Status(); };
  if (!stop) {
    CUMULUS_RETURN_IF_ERROR(PullObject(address, token, id, target));
    return bytes;
  }
  FetchCanceller canceller;
  PullOptions options;
  options.canceller = &canceller;
  std::promise<Status> pulled;
  std::future<Status> done = pulled.get_future();
  std::thread puller([&] { pulled.set_value(PullObject(address, token, id, target, options)); });
  while (done.wait_for(every) != std::future_status::ready) {
    if (stop()) canceller.Cancel();
  }
  puller.join();
  CUMULUS_RETURN_IF_ERROR(done.get());
  return bytes;
}

}  // namespace

Result<std::string> RunCall(const CallRequest& request, const CallTarget& target) {
  TimePoint deadline = SystemClock::Get().Now() + target.timeout;
  bool to_node = request.actor.IsNil();
  TaskId task = to_node ? TaskId::ForNormalTask(request.job) : TaskId::ForActorTask(request.actor);
  CUMULUS_ASSIGN_OR_RETURN(std::string submit, SubmitFrame(request, task));
  std::string where = (to_node ? "node " : "actor ") + target.address.ToString();
  auto conn = CallerConnection::Open(target.address, target.token,
                                     SystemClock::Get().Now() + std::chrono::seconds(5));
  if (!conn.ok()) {
    return Status::Unavailable("cannot reach the " + where + ": " + conn.status().message());
  }
  Status sent = conn->SendEncoded(submit);
  if (!sent.ok()) return Status::Unavailable("cannot send to the " + where + ": " + sent.message());
  // A task left unanswered is cancelled on its node; an actor's method cannot be.
  auto cancel = [&] {
    if (!to_node) return;
    capnp::MallocMessageBuilder message;
    message.initRoot<proto::CoreMessage>().setCancelTask(DataOf(task));
    (void)conn->Send(message, SystemClock::Get().Now() + std::chrono::seconds(2));
  };
  const std::string left = to_node ? " (it was cancelled)" : " (the call may still run)";
  constexpr auto kStopCheck = std::chrono::milliseconds(200);
  while (true) {
    // With a stop check, the wait goes in slices (the decoder keeps a partly read frame).
    TimePoint until = deadline;
    if (target.stop) until = std::min(deadline, SystemClock::Get().Now() + kStopCheck);
    auto words = conn->Next(until);
    if (!words.ok() && words.status().code() == StatusCode::kTimedOut && until < deadline) {
      if (!target.stop()) continue;
      cancel();
      return Status::Cancelled(request.function + " was stopped before it answered" + left);
    }
    if (!words.ok()) {
      if (words.status().code() == StatusCode::kUnauthenticated) return words.status();
      if (words.status().code() == StatusCode::kTimedOut) {
        cancel();
        // Stopped in the last slice, as the deadline came: said as stopped, not as timed out.
        if (target.stop && target.stop())
          return Status::Cancelled(request.function + " was stopped before it answered" + left);
        return Status::TimedOut(request.function + " did not finish within the timeout" + left);
      }
      return Status::Unavailable("the " + where + " closed the connection before answering (" +
                                 words.status().message() +
                                 "); a wrong token or a refused request closes it");
    }
    capnp::FlatArrayMessageReader reader(*words, CoreReaderOptions(words->size() * 8));
    auto msg = reader.getRoot<proto::CoreMessage>();
    if (!msg.isTaskResult()) continue;
    auto result = msg.getTaskResult();
    if (IdFrom<TaskId>(result.getTaskId()) != task) continue;
    if (result.getCode() != 0) {
      return Status(static_cast<StatusCode>(result.getCode()), result.getMessage());
    }
    if (result.getReturns().size() != 1) {
      return Status::Internal(request.function + " answered with " +
                              std::to_string(result.getReturns().size()) + " values");
    }
    auto ret = result.getReturns()[0];
    if (ret.isInline()) {
      auto d = ret.getInline();
      return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
    }
    // Stored where it ran: read it over the object channel, then free it there.
    ObjectId object = IdFrom<ObjectId>(ret.getObjectId());
    auto loc = ret.getStored();
    NodeId holder = IdFrom<NodeId>(loc.getNodeId());
    auto bytes = PullResult(loc.getTransferAddress(), target.token, object, loc.getSize(),
                            target.stop, kStopCheck);
    // Freed by whoever answered: the node (the task's result, wherever it ran) or the actor's
    // worker (its node's store). Either frees it anyway when this connection closes.
    (void)conn->SendEncoded(FreeFrame(object, holder));
    if (!bytes.ok() && bytes.status().code() == StatusCode::kCancelled) {
      return Status::Cancelled(request.function + " was stopped while its result (" +
                               std::to_string(loc.getSize()) + " bytes) was being read");
    }
    if (!bytes.ok()) {
      return Status(bytes.status().code(), "the result of " + request.function + " (" +
                                               std::to_string(loc.getSize()) +
                                               " bytes, stored on node " + holder.Hex() +
                                               ") could not be read: " + bytes.status().message());
    }
    return std::move(*bytes);
  }
}

}  // namespace cumulus
