@0xa6dc52396fcecb93;
# What a task is: enough for any node to run it, retry it, or rebuild its results (lineage).
$import "/capnp/c++.capnp".namespace("cumulus::proto");
using Node = import "node.capnp";

struct TaskArg {
  union {
    inline @0 :Data;      # small serialized value
    objectRef @1 :Data;   # 28-byte object id; the task waits for it
  }
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
}
