@0x9201f6cd49234f97;
# Records kept by the head's control store about nodes.
$import "/capnp/c++.capnp".namespace("cumulus::proto");

struct ResourceAmount {
  name @0 :Text;     # "CPU", "GPU", "memory" (bytes), or a custom resource
  amount @1 :Float64;
}

struct Label {
  key @0 :Text;
  value @1 :Text;
}

enum NodeState {
  alive @0;
  dead @1;
  recovering @2;   # read back by a restarted head, not yet heard from
}

struct NodeInfo {
  nodeId @0 :Data;                  # 16 bytes
  address @1 :Text;                 # the node's IP as the head sees it (host:port once it listens)
  objectStoreAddress @2 :Text;      # the node's object store socket (host:port for remote pulls later)
  resourcesTotal @3 :List(ResourceAmount);
  resourcesAvailable @4 :List(ResourceAmount);
  labels @5 :List(Label);
  state @6 :NodeState;
  registeredMicros @7 :Int64;
  lastHeartbeatMicros @8 :Int64;
  gpuIds @9 :List(UInt32);          # physical GPU ids this node owns
  hostname @10 :Text;
  deathReason @11 :Text;            # why the head declared it dead
  deathMicros @12 :Int64;
  pid @13 :Int32;                   # of the node daemon process
  coreAddress @14 :Text;            # host:port where other nodes send tasks
  pendingDemand @15 :List(Demand);  # work queued on this node that cannot run yet
  coreSocket @16 :Text;             # Unix socket for drivers on the node's machine
  left @17 :Bool;                   # DEAD because it said it was leaving (shown as STOPPED)
  draining @18 :Bool;               # takes no new work; leaves once it runs and holds nothing
  drainNote @19 :Text;              # what a draining node still waits for (from its heartbeat)
  metricsAddress @20 :Text;         # host:port of its Prometheus endpoint ("" if it serves none)
  work @21 :UInt32;                 # what holds it, from its heartbeat (Heartbeat.work); 0: nothing
}

struct Demand {
  resources @0 :List(ResourceAmount);   # one task's or actor's shape
  count @1 :UInt32;                     # how many wait with that shape
  selector @2 :Text;                    # their label selector ("" for none)
  purpose @3 :Text;                     # who they are for: "trial asha/7" ("" for none)
  reason @4 :Text;                      # why they wait, from the node's placement
                                        # ("waiting for CPU=4: 1 node(s) could run it, ...")
  pinnedTo @5 :Text;                    # hard affinity: the node (hex) they must run on ("" for none)
}
