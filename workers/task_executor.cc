#include "workers/task_executor.h"

#include <unistd.h>

#include <algorithm>
#include <stdexcept>

#include "cumulus/internal/registry.h"
#include "cumulus/remote.h"
#include "cumulus/serialization.h"
#include "runtime/core/messages.h"
#include "runtime/core/timeline.h"
#include "workers/object_reader.h"

namespace cumulus {

ActorId TaskExecutor::actor_id() const {
  std::lock_guard<std::mutex> lock(actor_id_mu_);
  return actor_id_;
}

bool TaskExecutor::Run(proto::TaskSpec::Reader spec, proto::TaskResult::Builder result,
                       TaskTimes* times) {
  if (times) times->started = TimelineNowMicros();
  TaskId task = IdFrom<TaskId>(spec.getTaskId());
  std::string function = spec.getFunctionName();
  result.setTaskId(DataOf(task));
  result.setNodeId(DataOf(options_.node));
  result.setWorkerPid(getpid());
  Status st;
  std::string value;
  bool exit_after = false;
  st = Call(spec, function, &value, &result, times);
  if (spec.getActorCreation() && !st.ok()) exit_after = true;
  if (st.ok() && !spec.getActorCreation()) {
    auto ret = result.initReturns(1);
    ObjectId obj = ObjectId::FromTaskReturn(task, 1);
    ret[0].setObjectId(DataOf(obj));
    if (value.size() <= kMaxInlineResultBytes) {
      ret[0].setInline(
          capnp::Data::Reader(reinterpret_cast<const uint8_t*>(value.data()), value.size()));
    } else {
      Status put = options_.store->Put(obj, value.data(), value.size());
      if (put.ok() || put.code() == StatusCode::kAlreadyExists) {
        auto loc = ret[0].initStored();
        loc.setNodeId(DataOf(options_.node));
        loc.setTransferAddress(options_.transfer_address);
        loc.setSize(value.size());
      } else {
        st = Status(put.code(), "the result of " + function + " (" + std::to_string(value.size()) +
                                    " bytes) could not be stored on node " + options_.node.Hex() +
                                    ": " + put.message());
      }
    }
  } else if (st.ok()) {
    auto ret = result.initReturns(1);
    ret[0].setObjectId(DataOf(ObjectId::FromTaskReturn(task, 1)));
    std::string v = Serialize(Void{});
    ret[0].setInline(capnp::Data::Reader(reinterpret_cast<const uint8_t*>(v.data()), v.size()));
  }
  if (!st.ok()) {
    result.setCode(static_cast<uint16_t>(st.code()));
    result.setMessage(st.message());
  }
  if (times) {
    times->stored = TimelineNowMicros();
    if (times->fetched == 0) times->fetched = times->stored;  // (it failed before)
    if (times->executed == 0) times->executed = times->stored;
  }
  return exit_after;
}

Result<ObjectBuffer> TaskExecutor::ReadArgument(const ObjectId& id, const NodeId& where,
                                                const std::string& from,
                                                std::vector<ObjectId>* pulled) {
  auto read = [&](const NodeId& node, const std::string& transfer) {
    bool pull = node != options_.node;
    if (pull && std::find(pulled->begin(), pulled->end(), id) == pulled->end()) {
      auto have = options_.store->Contains(id);
      if (have.ok() && !*have) pulled->push_back(id);
    }
    return ReadObject(*options_.store, options_.token, options_.node, id, pull, transfer);
  };
  auto buffer = read(where, from);
  if (buffer.ok() || buffer.status().code() != StatusCode::kObjectLost || !options_.find_move) {
    return buffer;
  }
  // Its node may have drained and handed it on after the owner sent this task (the owner hears
  // of the move by a message that can come after this read): the head has the move.
  auto moved = options_.find_move(id);
  if (!moved.ok() || moved->node == where) return buffer;
  if (moved->node == options_.node) {
    // This node took it: the copy here is the object's own, not one pulled for this task.
    pulled->erase(std::remove(pulled->begin(), pulled->end(), id), pulled->end());
  }
  return read(moved->node, moved->transfer);
}

Status TaskExecutor::Call(proto::TaskSpec::Reader spec, const std::string& function,
                          std::string* value, proto::TaskResult::Builder* result,
                          TaskTimes* times) {
  const internal::RemoteFunction* fn = internal::FindFunction(function);
  if (!fn) {
    return Status::NotFound("function " + function +
                            " is not registered in this program (is it in a CUMULUS_REMOTE "
                            "line of the binary the driver runs?)");
  }
  // Arguments: inline bytes, or objects in this node's store (pulled here if elsewhere).
  std::vector<std::string_view> args;
  std::vector<ObjectBuffer> buffers;
  std::vector<ObjectId> pulled;
  auto cleanup = [&] {
    buffers.clear();
    for (auto& id : pulled) (void)options_.store->Delete(id);
  };
  for (auto a : spec.getArgs()) {
    if (a.isInline()) {
      auto d = a.getInline();
      args.emplace_back(reinterpret_cast<const char*>(d.begin()), d.size());
      continue;
    }
    ObjectId id = IdFrom<ObjectId>(a.getObjectRef());
    auto loc = a.getLocation();
    NodeId where = IdFrom<NodeId>(loc.getNodeId());
    auto buffer = ReadArgument(id, where, loc.getTransferAddress(), &pulled);
    if (!buffer.ok()) {
      cleanup();
      // Its owner may rebuild it (lineage) and send this task again.
      result->setLostObject(DataOf(id));
      result->setLostObjectNode(DataOf(where));
      return Status::ObjectLost("argument " + std::to_string(args.size()) + " of " + function +
                                " could not be read: " + buffer.status().message());
    }
    args.emplace_back(reinterpret_cast<const char*>(buffer->data()), buffer->size());
    buffers.push_back(std::move(*buffer));
  }
  if (times) times->fetched = TimelineNowMicros();
  Status st;
  try {
    if (spec.getActorCreation()) {
      if (!fn->construct) {
        st = Status::InvalidArgument(function + " is not an actor factory");
      } else {
        was_restarted_ = spec.getAttempt() > 0;
        {
          std::lock_guard<std::mutex> lock(actor_id_mu_);
          actor_id_ = IdFrom<ActorId>(spec.getActorId());
        }
        actor_ = fn->construct(args);
        actor_class_ = fn->class_name;
        auto address = options_.start_actor_listener();
        if (address.ok()) {
          result->setActorAddress(*address);
        } else {
          st = address.status();
        }
      }
    } else if (spec.getActorId().size() > 0) {
      if (!actor_) {
        st = Status::ActorDied("this worker hosts no actor");
      } else if (!fn->invoke || fn->class_name.empty() || fn->class_name != actor_class_) {
        // (A caller outside the job names methods by text: one of another class must not run
        // on this instance.)
        st = Status::InvalidArgument(function + " is not a method of this actor");
      } else {
        *value = fn->invoke(actor_.get(), args);
      }
    } else if (!fn->invoke || !fn->class_name.empty()) {
      st = Status::InvalidArgument(function + " is an actor factory or method, not a function");
    } else {
      *value = fn->invoke(nullptr, args);
    }
  } catch (const std::invalid_argument& e) {
    st = Status::InvalidArgument(e.what());
  } catch (const std::exception& e) {
    st = Status::TaskFailed(function + " threw on node " + options_.node.Hex() + " (pid " +
                            std::to_string(getpid()) + "): " + e.what());
  } catch (...) {
    st = Status::TaskFailed(function + " threw a non-standard exception on node " +
                            options_.node.Hex());
  }
  if (times) times->executed = TimelineNowMicros();
  cleanup();
  return st;
}

}  // namespace cumulus
