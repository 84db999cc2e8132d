@0xab97b2dbe8713d3e;
# Object metadata, stored beside each object's bytes in the node's RocksDB tier.
$import "/capnp/c++.capnp".namespace("cumulus::proto");

struct ObjectMeta {
  objectId @0 :Data;          # 28 bytes (cumulus::ObjectId)
  dataSize @1 :UInt64;        # bytes of the value
  checksum @2 :UInt64;        # XXH3-64 of the value, verified on every restore
  durable @3 :Bool;           # written when sealed; survives a kill -9 of the store's process
  createdMicros @4 :Int64;    # wall clock, microseconds since the Unix epoch
  storeIncarnation @5 :Data;  # which run of the store wrote it (non-durable leftovers are dropped)
}
