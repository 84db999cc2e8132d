@0xf26163740c95e0e4;
# The control-plane protocol between the head and its nodes and clients, over TCP (frames:
# runtime/net/frame.h). The first request on every connection is `hello` with the cluster token;
# the head answers anything else, or a wrong token, with Unauthenticated and closes.
$import "/capnp/c++.capnp".namespace("cumulus::proto");
using Node = import "node.capnp";

const protocolVersion :UInt32 = 1;

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
}

struct ClusterStatus {
  nodes @0 :List(Node.NodeInfo);
  clusterId @1 :Text;
  headStartedMicros @2 :Int64;
  heartbeatsReceived @3 :UInt64;
  kvWaiters @4 :UInt32;            # kvWait requests not answered yet
}
