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
}

struct NodeInfo {
  nodeId @0 :Data;                  # 16 bytes
  address @1 :Text;                 # host:port of the node daemon
  objectStoreAddress @2 :Text;      # host:port of the node's bulk object channel
  resourcesTotal @3 :List(ResourceAmount);
  resourcesAvailable @4 :List(ResourceAmount);
  labels @5 :List(Label);
  state @6 :NodeState;
  registeredMicros @7 :Int64;
  lastHeartbeatMicros @8 :Int64;
  gpuIds @9 :List(UInt32);          # physical GPU ids this node owns
}
