@0xf26163740c95e0e4;
# The control-plane protocol between the head and its nodes and clients, over TCP (frames:
# runtime/net/frame.h). The first request on every connection is `hello` with the cluster token;
# the head answers anything else, or a wrong token, with Unauthenticated and closes.
$import "/capnp/c++.capnp".namespace("cumulus::proto");
using Node = import "node.capnp";

const protocolVersion :UInt32 = 2;  # 2: view deltas in heartbeats, records as structs

struct ControlRequest {
  requestId @0 :UInt64;
  union {
    hello @1 :Hello;
    registerNode @2 :Node.NodeInfo;   # nodeId set by the node; the head keeps or refuses it
    heartbeat @3 :Heartbeat;
    clusterStatus @4 :Void;
    kvPut @5 :KvPut;
    kvGet @6 :KvKey;
    kvDelete @7 :KvKey;
    kvWait @8 :KvWait;               # answered when the key exists, or TimedOut
    kvList @9 :KvList;               # keys of a namespace with a prefix, in key order
    leaving @10 :Leaving;            # a node stops on purpose: recorded as STOPPED, not failed
    drainNode @11 :DrainNode;        # mark an alive node DRAINING (answered NotFound if unknown)
  }
}

struct Hello {
  token @0 :Text;
  role @1 :Text;                   # "node", "client": for logs
  protocolVersion @2 :UInt32;
}

struct Heartbeat {
  nodeId @0 :Data;
  resourcesAvailable @1 :List(Node.ResourceAmount);
  pendingDemand @2 :List(Node.Demand);
  # The view of the cluster this node holds: the ack carries what changed since (wantView).
  wantView @3 :Bool;
  viewEpoch @4 :Int64;             # the head instance it came from (0: none yet)
  viewVersion @5 :UInt64;
  drainNote @6 :Text;              # a draining node: what it still waits for ("" when idle)
  # What holds the node (tasks held, actors hosted, busy workers, bundles, drivers attached:
  # what a drain waits for), summed; 0 when nothing does. Zero-resource actors count here.
  work @7 :UInt32;
}

struct DrainNode {
  nodeId @0 :Data;
  reason @1 :Text;                 # who asked ("cumulus drain", "autoscaler: idle")
}

struct Leaving {
  nodeId @0 :Data;
  reason @1 :Text;                 # why it stops ("cumulus stop or a signal")
}

struct KvKey {
  namespace @0 :Text;
  key @1 :Text;
}

struct KvPut {
  namespace @0 :Text;
  key @1 :Text;
  value @2 :Data;
  overwrite @3 :Bool = true;
}

struct KvList {
  namespace @0 :Text;
  prefix @1 :Text;
  startAfter @2 :Text;             # only keys after this one ("": from the first)
  limit @3 :UInt32;                # at most this many entries (the head caps it at 10000)
  keysOnly @4 :Bool;
}

struct KvEntry {
  key @0 :Text;
  value @1 :Data;
}

struct KvEntries {
  entries @0 :List(KvEntry);
  more @1 :Bool;                   # more keys match after the last one
}

struct KvWait {
  namespace @0 :Text;
  key @1 :Text;
  timeoutMs @2 :UInt32;
}

struct ControlReply {
  requestId @0 :UInt64;
  code @1 :UInt16;                 # cumulus::StatusCode
  message @2 :Text;
  union {
    none @3 :Void;
    registered @4 :Registered;
    heartbeatAck @5 :HeartbeatAck;
    status @6 :ClusterStatus;
    value @7 :Data;                # kvGet, kvWait
    existed @8 :Bool;              # kvPut (false if it was absent), kvDelete
    entries @9 :KvEntries;         # kvList
  }
}

struct Registered {
  heartbeatIntervalMs @0 :UInt32;
  clusterId @1 :Text;
}

struct HeartbeatAck {
  known @0 :Bool;                  # false: the head does not know this node (re-register)
  view @1 :ViewDelta;              # when the heartbeat asked for it
}

# The nodes whose record changed since the version a node holds (all of them if `full`: a new
# head instance, or a version this head never gave). Versions grow with every change.
struct ViewDelta {
  epoch @0 :Int64;
  version @1 :UInt64;
  full @2 :Bool;
  nodes @3 :List(Node.NodeInfo);
}

struct ClusterStatus {
  nodes @0 :List(Node.NodeInfo);
  clusterId @1 :Text;
  headStartedMicros @2 :Int64;
  heartbeatsReceived @3 :UInt64;
  kvWaiters @4 :UInt32;            # kvWait requests not answered yet
  viewVersion @5 :UInt64;          # the version of this listing (see ViewDelta)
}

# ---- Records in the head's key-value store ----------------------------------------------------
# Written and read by different binaries (a driver, the `cumulus` command, node daemons): Cap'n
# Proto, so that any binary reads what any other wrote (runtime/core/records.h).

struct JobRecord {                 # namespace "jobs", key: job hex
  binaryObject @0 :Text;           # hex object id of the program's bytes
  binarySize @1 :UInt64;
  binaryHash @2 :Text;             # hex XXH3-64 of the bytes
  transferAddress @3 :Text;        # the driver node's object channel
  argv @4 :List(Text);
  driverNode @5 :Text;             # hex
  submitted @6 :Bool;              # run by `cumulus submit`
  startMicros @7 :Int64;
}

struct JobEnd {                    # namespace "job_ends", key: job hex
  endMicros @0 :Int64;
}

struct SubmissionRecord {          # namespace "submissions", key: job hex
  name @0 :Text;
  entrypoint @1 :List(Text);
  resources @2 :Text;
  node @3 :Text;
  state @4 :Text;                  # PENDING RUNNING SUCCEEDED FAILED STOPPED
  message @5 :Text;
  pid @6 :Int32;
  submitMicros @7 :Int64;
  startMicros @8 :Int64;
  endMicros @9 :Int64;
  packageChunks @10 :UInt32;
  packageBytes @11 :UInt64;
}

struct PackageFile {
  path @0 :Text;
  mode @1 :UInt32;
  bytes @2 :Data;
}

struct JobPackage {                # cut in chunks: namespace "job_packages", keys "<job hex>/<n>"
  files @0 :List(PackageFile);
}

struct TaskStateRow {
  task @0 :Text;
  job @1 :Text;
  function @2 :Text;
  state @3 :Text;
  pid @4 :Int32;
  attempt @5 :UInt32;
}

struct ObjectStateRow {
  object @0 :Text;
  job @1 :Text;
  size @2 :UInt64;
  where @3 :Text;
  pins @4 :UInt32;
}

struct NodeStateReport {           # namespace "node_state", key: node hex
  micros @0 :Int64;
  tasksTotal @1 :UInt64;
  objectsTotal @2 :UInt64;
  tasks @3 :List(TaskStateRow);
  objects @4 :List(ObjectStateRow);
  disk @5 :NodeDisk;
}

struct NodeDisk {                  # bytes under the node's data dir, and free on its filesystem
  programCache @0 :UInt64;         # jobs/: job programs cached for workers
  programCacheMax @1 :UInt64;      # its bound
  submitted @2 :UInt64;            # submitted/: files of submitted jobs still running
  spill @3 :UInt64;                # objects.db: objects spilled from memory
  logs @4 :UInt64;                 # logs/
  free @5 :UInt64;                 # free on the data dir's filesystem
}

struct GroupRecord {               # namespace "placement_groups", key: group hex
  job @0 :Text;
  nodes @1 :List(Text);
}

struct ActorNameRecord {           # namespace "actors", key: the name
  actorId @0 :Text;
  className @1 :Text;
  address @2 :Text;
}
