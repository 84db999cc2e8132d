// Records in the head's key-value store: jobs, their ends and submissions, job packages, what a
// node holds, placement groups, actor names. They are written and read by different binaries (a
// driver, the `cumulus` command, node daemons), so they are Cap'n Proto structs
// (runtime/proto/control.capnp), readable by any binary whatever compiler built it. EncodeRecord
// turns one into bytes; DecodeRecord<T> reads it back (InvalidArgument if the bytes are not one).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cumulus/status.h"

namespace cumulus {

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
};

// When a job's driver went away (key: job hex; value: JobEnd), written by its node.
struct JobEnd {
  int64_t end_micros = 0;
};

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
};

// The job's files: one serialized JobPackage cut in chunks, keys "<job hex>/<n>".
struct PackageFile {
  std::string path;  // relative
  uint32_t mode = 0644;
  std::string bytes;
};

struct JobPackage {
  std::vector<PackageFile> files;
};

// What a node holds, reported to the head every 2 s (namespace kNodeStateNamespace, key: node
// hex) for `cumulus list tasks|objects`: at most kMaxReportedRows of each, and the totals.
struct TaskStateRow {
  std::string task, job, function;
  std::string state;  // QUEUED, RUNNING, FORWARDED (to another node), RETRY_WAIT
  int32_t pid = 0;    // RUNNING: the worker
  uint32_t attempt = 0;
};

struct ObjectStateRow {
  std::string object, job;
  uint64_t size = 0;
  std::string where;  // MEMORY, DISK (spilled), BOTH
  uint32_t pins = 0;
};

// Bytes the node's files take under its data dir (DATA_DIR/node-PID), and free space there.
struct NodeDisk {
  uint64_t program_cache = 0;      // jobs/: programs cached for workers
  uint64_t program_cache_max = 0;  // the cache's bound (--program-cache-size)
  uint64_t submitted = 0;          // submitted/: files of submitted jobs still running
  uint64_t spill = 0;              // objects.db: objects spilled from memory
  uint64_t logs = 0;               // logs/: job logs not yet shipped and removed
  uint64_t free = 0;               // free on the data dir's filesystem
};

struct NodeStateReport {
  int64_t micros = 0;
  uint64_t tasks_total = 0, objects_total = 0;
  std::vector<TaskStateRow> tasks;
  std::vector<ObjectStateRow> objects;
  NodeDisk disk;
};

// Where a placement group's bundles are held (head KV, namespace kGroupsNamespace, key hex id):
// written by the node that reserved the group, read by nodes that route tasks into it.
struct GroupRecord {
  std::string job;                 // hex
  std::vector<std::string> nodes;  // hex node id of each bundle
};

// Named actors (namespace kActorsNamespace): key NAME holds this record, key NAME/address the
// host:port of the actor once it runs.
struct ActorNameRecord {
  std::string actor_id;  // hex
  std::string class_name;
  std::string address;
};

std::string EncodeRecord(const JobRecord& r);
std::string EncodeRecord(const JobEnd& r);
std::string EncodeRecord(const SubmissionRecord& r);
std::string EncodeRecord(const JobPackage& r);
std::string EncodeRecord(const NodeStateReport& r);
std::string EncodeRecord(const GroupRecord& r);
std::string EncodeRecord(const ActorNameRecord& r);

template <typename T>
Result<T> DecodeRecord(std::string_view bytes);

}  // namespace cumulus
