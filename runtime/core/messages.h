// Helpers for the task protocol (runtime/proto/core.capnp): building frames, reading ids, and the
// job record that tells a node how to fetch and start a job's program.
#pragma once

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <string>
#include <string_view>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/serialization.h"
#include "cumulus/status.h"
#include "runtime/core/records.h"
#include "runtime/net/frame.h"
#include "runtime/proto/core.capnp.h"
#include "scheduler/placement.h"
#include "scheduler/resources.h"

namespace cumulus {

// Results this size or smaller travel inside the result message; larger ones stay in the store
// of the node that made them and are pulled over the object channel.
constexpr uint64_t kMaxInlineResultBytes = 100 * 1024;
// Frames on core connections (after the hello) may be this large. A task's by-value arguments
// take at most 4 MiB of its spec (larger ones go through the object store), results at most
// kMaxInlineResultBytes: this bounds what one authenticated peer can make a process buffer.
constexpr uint32_t kMaxCoreFrameBytes = 64u << 20;
// A worker hosting an actor exits with this status when `cumulus kill` (a caller outside every
// job) killed it, so that its node can tell a user's kill from a crash or its owner's kill
// (runtime/node/actor_ends.h).
constexpr int kKilledByCallerExitStatus = 113;

template <typename Id>
Id IdFrom(capnp::Data::Reader data) {
  if (data.size() != Id::kSize) return Id();
  return Id::FromBinary(std::string_view(reinterpret_cast<const char*>(data.begin()), data.size()));
}
template <typename Id>
capnp::Data::Reader DataOf(const Id& id) {
  return capnp::Data::Reader(id.data(), Id::kSize);
}

// How to read a core frame of `words` words: the reader's work is bounded by the bytes received,
// not by the frame limit (a list of zero-sized structs claims up to 2^29 elements in 8 bytes, each
// charged one word of the traversal limit; with kMaxCoreFrameBytes / 8 as the limit a 72-byte
// frame makes a reader walk 64M task arguments). Found by tests/fuzz/fuzz_core_message.
capnp::ReaderOptions CoreReaderOptions(size_t words);

// Frame header + the flat words of an already encoded message (to pass a frame on unchanged).
std::string FrameOfWords(kj::ArrayPtr<const capnp::word> words);

// What a node or an actor's worker answers a caller (runtime/core/caller_connection.h) when it
// refuses its hello: a helloAck with code Unauthenticated and `message` (the connection closes
// after it). And when it refuses one request: `refused` with st's code and message (the
// connection stays open).
std::string HelloRefusalFrame(const std::string& message);
std::string RefusalFrame(const Status& st);
// The stored returns of `result`, each as a freeObjects entry: the object's id, then the id of
// the node whose store holds it.
std::vector<std::string> StoredReturnEntries(proto::TaskResult::Reader result);

// The placement request a task spec asks for.
struct TaskRequirements {
  PlacementRequest placement;
  std::string placement_group;  // binary id
  int bundle_index = -1;
  std::string purpose;  // who it is for ("trial asha/7"), reported with its pending demand
};
TaskRequirements RequirementsOf(proto::TaskSpec::Reader spec);
// The numbers of a spec from a driver, worker or peer, checked as the API checks them before it
// sends one (runtime/base/numeric.h): each resource amount (ResourceSet::CheckAmount: a NaN, a
// negative or an absurd one is refused, not dropped, or a GPU task would run without its GPU),
// maxRetries and maxRestarts from -1 (forever). InvalidArgument says which.
Status CheckTaskSpecNumbers(proto::TaskSpec::Reader spec);
// The longest purpose (SetPurpose, CreatePlacementGroup) a task, actor or group may carry: it
// travels in every heartbeat while the work waits.
constexpr size_t kMaxPurposeBytes = 200;
// InvalidArgument for a purpose longer than kMaxPurposeBytes or with a control character.
Status CheckPurpose(const std::string& purpose);

constexpr const char* kJobsNamespace = "jobs";
constexpr const char* kJobEndsNamespace = "job_ends";

// Collective groups (runtime/collective): rendezvous entries under key prefix
// "<scope>/<name>/<generation>/" (scope: the job hex for groups the runtime forms), and groups
// declared over actors under "<job hex>/<name>". The node of a job's driver deletes the job's
// entries in both when the driver goes away.
constexpr const char* kCollectiveNamespace = "collective";
constexpr const char* kCollectiveGroupsNamespace = "collective_groups";

constexpr const char* kSubmissionsNamespace = "submissions";
constexpr const char* kPackagesNamespace = "job_packages";
constexpr uint64_t kPackageChunkBytes = 4u << 20;
// The bytes of a job's files (`cumulus submit`), and of its package as packed (files, paths and
// modes); a node refuses a submission record that announces more.
constexpr uint64_t kMaxJobFilesBytes = 256ull << 20;
constexpr uint64_t kMaxPackageBytes = 512ull << 20;
// Requests to a node's job supervisor: key "<node hex>/<job hex>", value "run" or "stop"; the
// key "<node hex>/bell" wakes it.
constexpr const char* kJobQueueNamespace = "job_queue";
// Output of jobs: keys "<job hex>/<16-digit micros>-<node hex 8>-<source>", in time order.
constexpr const char* kJobLogsNamespace = "job_logs";
bool IsTerminalJobState(const std::string& state);
constexpr const char* kNodeStateNamespace = "node_state";
// Objects a draining node handed to another (runtime/node/object_handoff.h): key
// "<job hex>/<object hex>", value "<node hex> <host:port of its object channel>". An owner whose
// read from the old node fails looks here; the node of the job's driver deletes the job's
// entries when the driver goes away.
constexpr const char* kObjectMovesNamespace = "object_moves";
std::string ObjectMoveKey(const ObjectId& id);
// A value of kObjectMovesNamespace: where the object lives now.
struct ObjectMove {
  NodeId node;
  std::string transfer;  // host:port of that node's object channel
};
std::string ObjectMoveValue(const ObjectMove& move);
// InvalidArgument if `value` is not "<node hex> <host:port>".
Result<ObjectMove> ParseObjectMove(const std::string& value);
constexpr size_t kMaxReportedRows = 1000;
// Recent failures on each node: keys "<16-digit micros>-<node hex 8>", value one line.
constexpr const char* kFailuresNamespace = "failures";
constexpr const char* kGroupsNamespace = "placement_groups";
constexpr const char* kActorsNamespace = "actors";

// Listens on a Unix stream socket at `path` (mode 0600). Connects to one.
Result<int> ListenUnix(const std::string& path);
Result<int> ConnectUnix(const std::string& path);

}  // namespace cumulus
