// The Cumulus C++ API: remote tasks, actors, objects. See docs/api.md and examples/.
//
//   #include <cumulus/cumulus.h>
//   int Square(int x) { return x * x; }
//   CUMULUS_REMOTE(Square);
//   int main(int argc, char** argv) {
//     if (auto st = cumulus::Init(argc, argv); !st.ok()) { ... }   // first line of main
//     cumulus::ObjectRef<int> ref = cumulus::Task(Square).Remote(7);
//     int v = cumulus::Get(ref);                                   // 49
//     cumulus::Shutdown();
//   }
//
// Workers run the same program: Init() never returns in a worker process (it serves tasks and
// exits), so code before Init() runs in every worker too. Keep Init() first.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/internal/registry.h"
#include "cumulus/internal/runtime.h"
#include "cumulus/options.h"
#include "cumulus/remote.h"
#include "cumulus/serialization.h"
#include "cumulus/status.h"

namespace cumulus {

// ---------------------------------------------------------------------------------------------
// Starting and stopping.

struct InitOptions {
  // HOST:PORT of a running cluster's head. Empty: $CUMULUS_ADDRESS; if that is empty too, an
  // embedded cluster (a head and a node inside this process, workers as child processes).
  std::string address;
  std::string token_file;  // empty: $CUMULUS_TOKEN_FILE, else the one `cumulus start` saved
  std::string resources;   // embedded node: "CPU=4,GPU=2" (default: detected)
  std::string labels;      // embedded node: "site=onprem"
  uint64_t object_store_memory = 0;  // embedded node: bytes (0: 30% of RAM, at most 2 GiB)
  std::string data_dir;  // embedded cluster: where its state lives (default: a temp dir)
};

// Connects to a cluster or starts an embedded one. In a worker process it runs the worker and
// exits the process instead of returning. Call it first in main().
Status Init(const InitOptions& options = {});
Status Init(int argc, char** argv, const InitOptions& options = {});
// Kills this job's actors, frees its objects, stops an embedded cluster. Idempotent.
void Shutdown();
bool IsInitialized();
// True inside a worker process.
bool IsWorker();
// The GPU ids this process may use (what CUDA_VISIBLE_DEVICES holds): an actor created with
// GPU resources sees exactly the devices it was given.
std::vector<int> GetGpuIds();
// The node this process runs on.
NodeId CurrentNodeId();
// Inside an actor (its constructor and methods): true if this instance is a restart, built again
// after an earlier process of the same actor died (see ActorCreator::SetMaxRestarts). Its state
// is fresh: restore it from a checkpoint here if it keeps one.
bool WasRestarted();

// ---------------------------------------------------------------------------------------------
// Errors.

// What Get throws. `status()` holds the code (ActorDied, Infeasible, TimedOut, ...) and one line
// saying what failed: for an exception in remote code, the function, the node and the message.
class Error : public std::runtime_error {
 public:
  explicit Error(Status status)
      : std::runtime_error(status.ToString()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

namespace internal {
inline Runtime& RuntimeOrThrow() {
  Runtime* r = CurrentRuntime();
  if (!r)
    throw Error(Status::Unavailable("cumulus is not initialized: call cumulus::Init() first"));
  return *r;
}
}  // namespace internal

// ---------------------------------------------------------------------------------------------
// Objects.

template <typename T>
class ObjectRef;
namespace internal {
// The reference to `id` that the runtime hands out (it holds one reference already).
template <typename T>
ObjectRef<T> AdoptRef(ObjectId id);
}  // namespace internal

// A reference to a value that a task returns (or Put stores), possibly not computed yet. Copies
// share the value; when the last copy anywhere in this process goes, the value is freed.
template <typename T>
class ObjectRef {
 public:
  ObjectRef() = default;
  ObjectRef(const ObjectRef& o) : id_(o.id_) { AddRef(); }
  ObjectRef(ObjectRef&& o) noexcept : id_(o.id_) { o.id_ = ObjectId(); }
  ObjectRef& operator=(const ObjectRef& o) {
    if (this != &o) {
      Drop();
      id_ = o.id_;
      AddRef();
    }
    return *this;
  }
  ObjectRef& operator=(ObjectRef&& o) noexcept {
    if (this != &o) {
      Drop();
      id_ = o.id_;
      o.id_ = ObjectId();
    }
    return *this;
  }
  ~ObjectRef() { Drop(); }
  const ObjectId& id() const { return id_; }
  bool valid() const { return !id_.IsNil(); }

 private:
  // Only the runtime makes references (a task's result, a Put): an id alone is not a reference.
  explicit ObjectRef(ObjectId id) : id_(id) {}  // takes over one reference
  template <typename U>
  friend ObjectRef<U> internal::AdoptRef(ObjectId id);

  void AddRef() {
    if (!id_.IsNil()) {
      if (auto* r = internal::CurrentRuntime()) r->AddRef(id_);
    }
  }
  void Drop() {
    if (!id_.IsNil()) {
      if (auto* r = internal::CurrentRuntime()) r->RemoveRef(id_);
      id_ = ObjectId();
    }
  }
  ObjectId id_;
};

namespace internal {
template <typename T>
ObjectRef<T> AdoptRef(ObjectId id) {
  return ObjectRef<T>(id);
}
}  // namespace internal

template <typename T>
struct IsObjectRef : std::false_type {};
template <typename T>
struct IsObjectRef<ObjectRef<T>> : std::true_type {};

// The value, or the error (remote exception, lost object, timeout, ...). timeout < 0: no limit.
template <typename T>
Result<T> TryGet(const ObjectRef<T>& ref,
                 std::chrono::milliseconds timeout = std::chrono::milliseconds(-1)) {
  if (!ref.valid()) return Status::InvalidArgument("Get of an empty ObjectRef");
  internal::Runtime* r = internal::CurrentRuntime();
  if (!r) return Status::Unavailable("cumulus is not initialized: call cumulus::Init() first");
  auto payload = r->Get(ref.id(), timeout.count());
  if (!payload.ok()) return payload.status();
  using V = std::conditional_t<std::is_void_v<T>, Void, T>;
  auto value = Deserialize<V>(payload->bytes);
  if (!value.ok()) {
    return Status::InvalidArgument("object " + ref.id().Hex() + ": " + value.status().message());
  }
  if constexpr (std::is_void_v<T>) {
    return Void{};
  } else {
    return std::move(*value);
  }
}

// The value; throws cumulus::Error with the reason if there is none.
template <typename T>
T Get(const ObjectRef<T>& ref, std::chrono::milliseconds timeout = std::chrono::milliseconds(-1)) {
  auto value = TryGet(ref, timeout);
  if (!value.ok()) throw Error(value.status());
  if constexpr (!std::is_void_v<T>) return std::move(*value);
}

template <typename T>
std::vector<T> Get(const std::vector<ObjectRef<T>>& refs,
                   std::chrono::milliseconds timeout = std::chrono::milliseconds(-1)) {
  std::vector<T> out;
  out.reserve(refs.size());
  for (auto& ref : refs) out.push_back(Get(ref, timeout));
  return out;
}

// Stores `value` in the object store and returns a reference to pass to tasks.
template <typename T>
ObjectRef<T> Put(const T& value) {
  size_t size = SerializedSize(value);
  auto id = size > (1u << 20) ? internal::RuntimeOrThrow().PutWith(
                                    size, [&](uint8_t* out) { SerializeInto(value, out); })
                              : internal::RuntimeOrThrow().Put(Serialize(value));
  if (!id.ok()) throw Error(id.status());
  return internal::AdoptRef<T>(*id);
}

template <typename T>
struct WaitResult {
  std::vector<ObjectRef<T>> ready;  // finished (a value or an error), in the order given
  std::vector<ObjectRef<T>> not_ready;
};

// Returns when `num_ready` of `refs` have finished, or when `timeout` passes.
template <typename T>
WaitResult<T> Wait(const std::vector<ObjectRef<T>>& refs, size_t num_ready,
                   std::chrono::milliseconds timeout = std::chrono::milliseconds(-1)) {
  std::vector<ObjectId> ids;
  ids.reserve(refs.size());
  for (auto& r : refs) ids.push_back(r.id());
  auto ready = internal::RuntimeOrThrow().Wait(ids, num_ready, timeout.count());
  WaitResult<T> out;
  for (size_t i = 0; i < refs.size(); ++i)
    (ready[i] ? out.ready : out.not_ready).push_back(refs[i]);
  return out;
}

// Stops the task that makes `ref`: a queued task never runs, a running one has its worker killed.
// Get then reports Cancelled. OK if the task already finished.
template <typename T>
Status Cancel(const ObjectRef<T>& ref) {
  return internal::RuntimeOrThrow().Cancel(ref.id());
}

// ---------------------------------------------------------------------------------------------
// Options.

// A gang of resource bundles reserved together on the cluster (see CreatePlacementGroup). Tasks
// and actors run inside a bundle with SetPlacementGroup(group, index): on the bundle's node, from
// the bundle's resources (which nothing outside the group can take).
class PlacementGroup {
 public:
  PlacementGroup() = default;
  PlacementGroup(PlacementGroupId id, std::vector<NodeId> bundle_nodes)
      : id_(id), nodes_(std::move(bundle_nodes)) {}
  const PlacementGroupId& id() const { return id_; }
  size_t bundle_count() const { return nodes_.size(); }
  // The node holding bundle `index`.
  const NodeId& bundle_node(size_t index) const { return nodes_.at(index); }

 private:
  PlacementGroupId id_;
  std::vector<NodeId> nodes_;
};

// Reserves all bundles at once (or none) and returns when they are reserved. Each bundle is a map
// of resources ({{"CPU", 1}, {"GPU", 1}}). PACK puts bundles on as few nodes as it can, SPREAD on
// as many; STRICT_PACK needs one node for all, STRICT_SPREAD a different node for each.
// Infeasible at once if the cluster can never hold them; TimedOut (and nothing stays reserved)
// if they do not fit within `timeout` -- the bundles show as pending demand meanwhile. The group
// lives until RemovePlacementGroup or the end of the job that made it. `purpose` (as SetPurpose:
// "trial asha/7", at most 200 characters) is shown with the bundles' pending demand.
Result<PlacementGroup> CreatePlacementGroup(
    const std::vector<std::map<std::string, double>>& bundles, PlacementGroupStrategy strategy,
    std::chrono::milliseconds timeout = std::chrono::milliseconds(30000),
    const std::string& purpose = "");
// Releases the group's bundles on every node; the tasks and actors running in them are stopped.
Status RemovePlacementGroup(const PlacementGroup& group);

namespace internal {
// Options shared by tasks, actors and actor methods (CRTP so setters chain).
template <typename Self>
class OptionSetters {
 public:
  // {"CPU", 2}, {"GPU", 0.5}, {"memory", 2e9}, {"my_resource", 1}.
  Self& SetResources(std::map<std::string, double> resources) {
    options_.resources = std::move(resources);
    return self();
  }
  Self& SetResource(const std::string& name, double amount) {
    options_.resources[name] = amount;
    return self();
  }
  // "site=onprem" keeps the work on nodes labelled so; "a=b,c!=d".
  Self& SetLabelSelector(std::string selector) {
    options_.label_selector = std::move(selector);
    return self();
  }
  // Tasks: retries after a worker or node failure (default 3; -1 forever).
  // Actor methods: retries of a call in flight when the actor died (default 0: at most once).
  Self& SetMaxRetries(int retries) {
    options_.max_retries = retries;
    return self();
  }
  Self& SetStrategy(Strategy s) {
    options_.strategy = s;
    return self();
  }
  // Run on `node`; with soft = true, elsewhere if it cannot.
  Self& SetNodeAffinity(const NodeId& node, bool soft = false) {
    options_.strategy = Strategy::kNodeAffinity;
    options_.affinity_node = node;
    options_.affinity_soft = soft;
    return self();
  }
  // Who the task or actor is for, in a few words ("trial asha/7"): while it waits for resources,
  // its pending demand carries them (`cumulus status`, the autoscaler's reasons), so the
  // operator sees what waits, not only a shape. At most 200 characters. Actor methods ignore it.
  Self& SetPurpose(std::string purpose) {
    options_.purpose = std::move(purpose);
    return self();
  }
  // Run inside bundle `index` of `group` (its resources come from the reservation).
  Self& SetPlacementGroup(const PlacementGroup& group, int index) {
    options_.placement_group = group.id();
    options_.bundle_index = index;
    return self();
  }

 protected:
  Self& self() { return static_cast<Self&>(*this); }
  CallOptions options_;
};

template <typename F>
struct FunctionTraits;
template <typename R, typename... P>
struct FunctionTraits<R (*)(P...)> {
  using Return = R;
  using Params = std::tuple<P...>;
  static constexpr size_t arity = sizeof...(P);
};
template <typename C, typename R, typename... P>
struct FunctionTraits<R (C::*)(P...)> {
  using Return = R;
  using Params = std::tuple<P...>;
  using Class = C;
  static constexpr size_t arity = sizeof...(P);
};
template <typename C, typename R, typename... P>
struct FunctionTraits<R (C::*)(P...) const> : FunctionTraits<R (C::*)(P...)> {};

template <typename P, typename A>
ArgData EncodeArg(A&& a) {
  using Param = std::decay_t<P>;
  ArgData arg;
  if constexpr (IsObjectRef<std::decay_t<A>>::value) {
    static_assert(std::is_same_v<std::decay_t<A>, ObjectRef<Param>>,
                  "an ObjectRef<T> argument must be for a parameter of type T");
    arg.is_ref = true;
    arg.ref = a.id();
  } else {
    arg.value = Serialize<Param>(Param(std::forward<A>(a)));
  }
  return arg;
}

template <typename Params, typename... A, size_t... I>
std::vector<ArgData> EncodeArgs(std::index_sequence<I...>, A&&... a) {
  std::vector<ArgData> out;
  out.reserve(sizeof...(A));
  (out.push_back(EncodeArg<std::tuple_element_t<I, Params>>(std::forward<A>(a))), ...);
  return out;
}

template <typename F>
std::string NameOrThrow(F f) {
  std::string name = NameOfKey(KeyOf(f));
  if (name.empty()) {
    throw Error(Status::InvalidArgument(
        "this function is not registered as remote: add it to a CUMULUS_REMOTE(...) line"));
  }
  return name;
}
}  // namespace internal

// ---------------------------------------------------------------------------------------------
// Tasks.

template <typename F>
class TaskCaller : public internal::OptionSetters<TaskCaller<F>> {
  using Traits = internal::FunctionTraits<F>;

 public:
  explicit TaskCaller(F f) : f_(f) {}
  template <typename... A>
  ObjectRef<typename Traits::Return> Remote(A&&... args) {
    static_assert(sizeof...(A) == Traits::arity, "wrong number of arguments for this function");
    auto encoded = internal::EncodeArgs<typename Traits::Params>(std::index_sequence_for<A...>{},
                                                                 std::forward<A>(args)...);
    return internal::AdoptRef<typename Traits::Return>(internal::RuntimeOrThrow().SubmitTask(
        internal::NameOrThrow(f_), std::move(encoded), this->options_));
  }

 private:
  F f_;
};

// Task(f).Remote(args...) runs f on the cluster. f must be listed in CUMULUS_REMOTE.
template <typename F>
TaskCaller<F> Task(F f) {
  return TaskCaller<F>(f);
}

// ---------------------------------------------------------------------------------------------
// Actors.

template <typename C, typename M>
class ActorTaskCaller : public internal::OptionSetters<ActorTaskCaller<C, M>> {
  using Traits = internal::FunctionTraits<M>;

 public:
  ActorTaskCaller(ActorId actor, M m) : actor_(actor), m_(m) {}
  template <typename... A>
  ObjectRef<typename Traits::Return> Remote(A&&... args) {
    static_assert(sizeof...(A) == Traits::arity, "wrong number of arguments for this method");
    auto encoded = internal::EncodeArgs<typename Traits::Params>(std::index_sequence_for<A...>{},
                                                                 std::forward<A>(args)...);
    return internal::AdoptRef<typename Traits::Return>(internal::RuntimeOrThrow().SubmitActorTask(
        actor_, internal::NameOrThrow(m_), std::move(encoded), this->options_));
  }

 private:
  ActorId actor_;
  M m_;
};

// A handle to an actor of class C. Copyable; calls from one handle run in the order made.
template <typename C>
class ActorHandle {
 public:
  ActorHandle() = default;
  explicit ActorHandle(ActorId id) : id_(id) {}
  template <typename M>
  ActorTaskCaller<C, M> Task(M method) const {
    static_assert(std::is_same_v<typename internal::FunctionTraits<M>::Class, C>,
                  "the method must belong to the actor's class");
    return ActorTaskCaller<C, M>(id_, method);
  }
  // Ends the actor's process; calls in flight fail with ActorDied. (Exit statuses 0 and 113 are
  // how an actor's process says it was killed, by its owner and by `cumulus kill`: an actor's own
  // code that exits with either is recorded as killed, not as a crash.)
  Status Kill() const { return internal::RuntimeOrThrow().KillActor(id_); }
  const ActorId& id() const { return id_; }

 private:
  ActorId id_;
};

template <typename F>
class ActorCreator : public internal::OptionSetters<ActorCreator<F>> {
  using Traits = internal::FunctionTraits<F>;
  using Made = typename Traits::Return;

 public:
  using Class = typename internal::FactoryClass<Made>::type;
  explicit ActorCreator(F f) : f_(f) {}
  // Registers the actor under `name` (unique in the cluster) for GetActor.
  ActorCreator& SetName(std::string name) {
    this->options_.name = std::move(name);
    return *this;
  }
  // How often the actor is re-created after its process dies (default 0).
  ActorCreator& SetMaxRestarts(int restarts) {
    this->options_.max_restarts = restarts;
    return *this;
  }
  // The actor outlives the job that made it (its driver ending or dying does not stop it);
  // other programs find it with GetActor(name), and it runs until someone calls Kill() on a
  // handle. It needs SetName. With its creator gone, nobody restarts it if its process dies.
  ActorCreator& SetDetached() {
    this->options_.detached = true;
    return *this;
  }
  template <typename... A>
  ActorHandle<Class> Remote(A&&... args) {
    static_assert(sizeof...(A) == Traits::arity, "wrong number of arguments for this factory");
    auto encoded = internal::EncodeArgs<typename Traits::Params>(std::index_sequence_for<A...>{},
                                                                 std::forward<A>(args)...);
    return ActorHandle<Class>(internal::RuntimeOrThrow().CreateActor(
        internal::NameOrThrow(f_), typeid(Class).name(), std::move(encoded), this->options_));
  }

 private:
  F f_;
};

// Actor(factory).Remote(args...) creates an actor from a registered factory returning C* or
// std::unique_ptr<C>.
template <typename F>
ActorCreator<F> Actor(F factory) {
  static_assert(internal::IsFactoryResult<typename internal::FunctionTraits<F>::Return>(),
                "an actor factory returns C* or std::unique_ptr<C>");
  return ActorCreator<F>(factory);
}

// The named actor; NotFound if no live actor has that name, InvalidArgument if it is not a C.
template <typename C>
Result<ActorHandle<C>> GetActor(const std::string& name) {
  auto found = internal::RuntimeOrThrow().GetActor(name);
  if (!found.ok()) return found.status();
  if (found->second != typeid(C).name()) {
    return Status::InvalidArgument("actor '" + name + "' is not of the requested class");
  }
  return ActorHandle<C>(found->first);
}

}  // namespace cumulus
