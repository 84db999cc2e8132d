@0xa6dc52396fcecb93;
# What a task is: enough for any node to run it, retry it, or rebuild its results (lineage).
$import "/capnp/c++.capnp".namespace("cumulus::proto");
using Node = import "node.capnp";

struct ObjectLocation {
  nodeId @0 :Data;            # 16 bytes: the node whose store holds the object
  transferAddress @1 :Text;   # host:port of that node's object channel
  size @2 :UInt64;
}

struct TaskArg {
  union {
    inline @0 :Data;      # small serialized value
    objectRef @1 :Data;   # 28-byte object id; the owner resolved it: it is sealed at `location`
  }
  location @2 :ObjectLocation;
}

enum SchedulingStrategy {
  default @0;
  spread @1;
  nodeAffinity @2;
}

struct TaskSpec {
  taskId @0 :Data;                           # 24 bytes
  jobId @1 :Data;                            # 4 bytes
  functionName @2 :Text;                     # registered name of the function or method
  args @3 :List(TaskArg);
  numReturns @4 :UInt32;
  resources @5 :List(Node.ResourceAmount);
  labelSelector @6 :List(Node.Label);
  maxRetries @7 :Int32;                      # -1: forever
  attempt @8 :UInt32;
  actorId @9 :Data;                          # empty for a normal task
  actorCreation @10 :Bool;                   # this task constructs the actor
  maxRestarts @11 :Int32;                    # actor creation only
  strategy @12 :SchedulingStrategy;
  affinityNodeId @13 :Data;                  # with strategy nodeAffinity
  placementGroupId @14 :Data;
  bundleIndex @15 :Int32;
  ownerAddress @16 :Text;                    # who holds the results' references
  name @17 :Text;                            # actor name for GetActor, if any
  hops @18 :UInt32;                          # times a node forwarded it (spillback happens once)
  labelNotEqual @19 :List(Node.Label);       # selector terms key!=value
  affinitySoft @20 :Bool;
  detached @21 :Bool;                        # actor creation: outlives its job
  labelIn @22 :List(LabelValues);            # selector terms key in (v1,v2,...)
  labelNotIn @23 :List(LabelValues);         # selector terms key notin (v1,v2,...)
  purpose @24 :Text;                         # who it is for, shown with its pending demand
                                             # ("trial asha/7"; "" for none)
  restartCause @25 :Text;                    # actor creation after a restart: why its owner
                                             # restarted it (its previous process's end)
  actorClass @26 :Text;                      # actor creation: the class (typeid name), as the
                                             # job's function catalog names its methods' class
}

struct LabelValues {
  key @0 :Text;
  values @1 :List(Text);
}

struct ReturnObject {
  objectId @0 :Data;
  union {
    inline @1 :Data;                 # the serialized value
    stored @2 :ObjectLocation;       # too large to travel inline: it waits in that node's store
  }
}

struct TaskResult {
  taskId @0 :Data;
  code @1 :UInt16;                   # cumulus::StatusCode; 0: the returns are set
  message @2 :Text;
  returns @3 :List(ReturnObject);
  nodeId @4 :Data;                   # where it ran (or failed)
  actorAddress @5 :Text;             # actor creation: host:port for direct calls
  workerPid @6 :Int32;
  lostObject @7 :Data;               # code ObjectLost: the argument that could not be read
  lostObjectNode @8 :Data;           # the node whose copy of it could not be read
}
