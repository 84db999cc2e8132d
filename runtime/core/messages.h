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
#include "runtime/net/frame.h"
#include "runtime/proto/core.capnp.h"
#include "scheduler/placement.h"
#include "scheduler/resources.h"

namespace cumulus {

// Results this size or smaller travel inside the result message; larger ones stay in the store
// of the node that made them and are pulled over the object channel.
constexpr uint64_t kMaxInlineResultBytes = 100 * 1024;
// Frames on core connections may be this large (a task's inline arguments).
constexpr uint32_t kMaxCoreFrameBytes = 512u << 20;

template <typename Id>
Id IdFrom(capnp::Data::Reader data) {
  if (data.size() != Id::kSize) return Id();
  return Id::FromBinary(std::string_view(reinterpret_cast<const char*>(data.begin()), data.size()));
}
template <typename Id>
capnp::Data::Reader DataOf(const Id& id) {
  return capnp::Data::Reader(id.data(), Id::kSize);
}

// Frame header + the flat words of an already encoded message (to pass a frame on unchanged).
std::string FrameOfWords(kj::ArrayPtr<const capnp::word> words);

// The placement request a task spec asks for.
struct TaskRequirements {
  PlacementRequest placement;
  std::string placement_group;  // binary id
  int bundle_index = -1;
};
TaskRequirements RequirementsOf(proto::TaskSpec::Reader spec);

// What a node needs to start workers of a job: where its program is and how it was invoked.
struct JobRecord {
  std::string binary_object;  // hex object id of the program's bytes
  uint64_t binary_size = 0;
  std::string binary_hash;       // hex XXH3-64 of the bytes
  std::string transfer_address;  // the driver node's object channel
  std::vector<std::string> argv;
  std::string driver_node;  // hex
  bool submitted = false;   // run by `cumulus submit`: workers' output goes to the job's log
  int64_t start_micros = 0;
  CUMULUS_SERIALIZE(binary_object, binary_size, binary_hash, transfer_address, argv, driver_node,
                    submitted, start_micros)
};
constexpr const char* kJobsNamespace = "jobs";
// When a job's driver went away (key: job hex; value: JobEnd), written by its node.
struct JobEnd {
  int64_t end_micros = 0;
  CUMULUS_SERIALIZE(end_micros)
};
constexpr const char* kJobEndsNamespace = "job_ends";

// Collective groups (runtime/collective): rendezvous entries under key prefix
// "<scope>/<name>/<generation>/" (scope: the job hex for groups the runtime forms), and groups
// declared over actors under "<job hex>/<name>". The node of a job's driver deletes the job's
// entries in both when the driver goes away.
constexpr const char* kCollectiveNamespace = "collective";
constexpr const char* kCollectiveGroupsNamespace = "collective_groups";

// A job run by `cumulus submit` (namespace kSubmissionsNamespace, key: job hex). The CLI writes
// it PENDING with its package; the node that runs the driver moves it on.
struct SubmissionRecord {
  std::string name;
  std::vector<std::string> entrypoint;  // argv; [0] is a file of the package
  std::string resources;                // what the driver's node must have, e.g. CPU=1
  std::string node;                     // hex: the node that runs the driver
  std::string state;                    // PENDING RUNNING SUCCEEDED FAILED STOPPED
  std::string message;                  // why it failed or stopped
  int32_t pid = 0;
  int64_t submit_micros = 0, start_micros = 0, end_micros = 0;
  uint32_t package_chunks = 0;
  uint64_t package_bytes = 0;
  CUMULUS_SERIALIZE(name, entrypoint, resources, node, state, message, pid, submit_micros,
                    start_micros, end_micros, package_chunks, package_bytes)
};
constexpr const char* kSubmissionsNamespace = "submissions";
// The job's files: one serialized JobPackage cut in chunks, keys "<job hex>/<n>".
struct PackageFile {
  std::string path;  // relative
  uint32_t mode = 0644;
  std::string bytes;
  CUMULUS_SERIALIZE(path, mode, bytes)
};
struct JobPackage {
  std::vector<PackageFile> files;
  CUMULUS_SERIALIZE(files)
};
constexpr const char* kPackagesNamespace = "job_packages";
constexpr uint64_t kPackageChunkBytes = 4u << 20;
// Requests to a node's job supervisor: key "<node hex>/<job hex>", value "run" or "stop"; the
// key "<node hex>/bell" wakes it.
constexpr const char* kJobQueueNamespace = "job_queue";
// Output of jobs: keys "<job hex>/<16-digit micros>-<node hex 8>-<source>", in time order.
constexpr const char* kJobLogsNamespace = "job_logs";
bool IsTerminalJobState(const std::string& state);
// What a node holds, reported to the head every 2 s (namespace kNodeStateNamespace, key: node
// hex) for `cumulus list tasks|objects`: at most kMaxReportedRows of each, and the totals.
struct TaskStateRow {
  std::string task, job, function;
  std::string state;  // QUEUED, RUNNING, FORWARDED (to another node), RETRY_WAIT
  int32_t pid = 0;    // RUNNING: the worker
  uint32_t attempt = 0;
  CUMULUS_SERIALIZE(task, job, function, state, pid, attempt)
};
struct ObjectStateRow {
  std::string object, job;
  uint64_t size = 0;
  std::string where;  // MEMORY, DISK (spilled), BOTH
  uint32_t pins = 0;
  CUMULUS_SERIALIZE(object, job, size, where, pins)
};
struct NodeStateReport {
  int64_t micros = 0;
  uint64_t tasks_total = 0, objects_total = 0;
  std::vector<TaskStateRow> tasks;
  std::vector<ObjectStateRow> objects;
  CUMULUS_SERIALIZE(micros, tasks_total, objects_total, tasks, objects)
};
constexpr const char* kNodeStateNamespace = "node_state";
constexpr size_t kMaxReportedRows = 1000;
// Recent failures on each node: keys "<16-digit micros>-<node hex 8>", value one line.
constexpr const char* kFailuresNamespace = "failures";
// Where a placement group's bundles are held (head KV, namespace kGroupsNamespace, key hex id):
// written by the node that reserved the group, read by nodes that route tasks into it.
struct GroupRecord {
  std::string job;                 // hex
  std::vector<std::string> nodes;  // hex node id of each bundle
  CUMULUS_SERIALIZE(job, nodes)
};
constexpr const char* kGroupsNamespace = "placement_groups";
// Named actors (namespace kActorsNamespace): key NAME holds this record, key NAME/address the
// host:port of the actor once it runs.
struct ActorNameRecord {
  std::string actor_id;  // hex
  std::string class_name;
  std::string address;
  CUMULUS_SERIALIZE(actor_id, class_name, address)
};
constexpr const char* kActorsNamespace = "actors";

// Listens on a Unix stream socket at `path` (mode 0600). Connects to one.
Result<int> ListenUnix(const std::string& path);
Result<int> ConnectUnix(const std::string& path);

}  // namespace cumulus
