@0x8cc0775aaa80146c;
# The protocol between a local process (worker, driver) and its node's object store, over a Unix
# seqpacket socket: one message per packet. The shared-memory region's file descriptor travels
# with the reply to `connect` (SCM_RIGHTS); object bytes never travel over the socket.
$import "/capnp/c++.capnp".namespace("cumulus::proto");

struct StoreRequest {
  requestId @0 :UInt64;
  union {
    connect @1 :Text;          # the client's name, for logs
    create @2 :CreateRequest;  # reserve space; the client writes through a writable mapping
    seal @3 :Data;             # object id: make it immutable and visible
    abort @4 :Data;            # object id: drop an unsealed object this client created
    get @5 :Data;              # object id: pin and locate a sealed object (restores if spilled)
    release @6 :Data;          # object id: drop one pin taken by get
    delete @7 :Data;           # object id: free it once nobody holds a pin
    contains @8 :Data;         # object id: is it sealed here (memory or disk)?
    stats @9 :Void;
    getWait @10 :GetWaitRequest;  # get that waits for an object being written to be sealed
  }
}

# Like `get`, but an object that exists and is still being written (unsealed) is waited for, up to
# `waitMillis`: the reply comes when it is sealed (a location, as `get`), when it is aborted or
# deleted or its creator disconnects (NotFound, as `get` of a missing object), or at the deadline
# (Unavailable). Replies to a client's waiting gets may come after replies to its later requests:
# match them by requestId. ResourceExhausted if the client already has too many gets waiting.
struct GetWaitRequest {
  objectId @0 :Data;
  waitMillis @1 :UInt32;
}

struct CreateRequest {
  objectId @0 :Data;
  size @1 :UInt64;
  durable @2 :Bool;
}

struct Location {
  offset @0 :UInt64;  # into the shared-memory region
  size @1 :UInt64;
}

struct StoreStats {
  capacityBytes @0 :UInt64;
  usedBytes @1 :UInt64;
  objectsInMemory @2 :UInt64;
  objectsSpilled @3 :UInt64;
  bytesSpilled @4 :UInt64;
  pinnedObjects @5 :UInt64;
  spillCount @6 :UInt64;
  restoreCount @7 :UInt64;
  clients @8 :UInt32;
}

struct StoreReply {
  requestId @0 :UInt64;
  code @1 :UInt16;     # cumulus::StatusCode
  message @2 :Text;    # set when code != 0
  union {
    none @3 :Void;
    connected @4 :Connected;
    location @5 :Location;   # reply to create and get
    stats @6 :StoreStats;
    contains @7 :Bool;
  }
}

struct Connected {
  regionSize @0 :UInt64;   # bytes of the region whose fd comes with this reply
  storeIncarnation @1 :Data;
}
