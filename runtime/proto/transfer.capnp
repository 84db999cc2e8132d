@0xe9877ae28cd647be;
# The bulk object channel between nodes (runtime/transfer/object_transfer.h), over TCP with the
# control plane's framing. The first request is `hello` with the cluster token. A `pull` is
# answered by a reply frame carrying the object's size, followed by exactly that many raw bytes.
$import "/capnp/c++.capnp".namespace("cumulus::proto");

struct TransferRequest {
  union {
    hello @0 :Text;      # the cluster token
    pull @1 :Data;       # object id (28 bytes)
    fetch @2 :Fetch;     # pull this object from another node into this node's store
  }
}

# A draining node hands its objects to this one: this node pulls `object` from the node whose
# object channel is `from` (the ordinary pull), then answers with a reply (size: the bytes now
# held; AlreadyExists is not an error: this node had a copy).
struct Fetch {
  object @0 :Data;       # object id (28 bytes)
  from @1 :Text;         # host:port of the node that has it
}

struct TransferReply {
  code @0 :UInt16;       # cumulus::StatusCode
  message @1 :Text;
  size @2 :UInt64;       # pull: bytes that follow this frame
}
