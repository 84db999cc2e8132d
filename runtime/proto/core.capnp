@0xc4b1f0e7a9d35e21;
# The task protocol (frames: runtime/net/frame.h). Connections:
#   driver or worker <-> its node   Unix socket core.sock (0600, in a 0700 directory)
#   node <-> node                   TCP, `hello` with the cluster token first
#   caller -> actor's worker        TCP (direct actor calls), `hello` with the cluster token first
$import "/capnp/c++.capnp".namespace("cumulus::proto");
using Task = import "task.capnp";
using Node = import "node.capnp";

# The first message on a core connection says who is calling: each role its own struct, so a
# role is a type that is checked where it is read, not a string.
struct CoreHello {
  pid @0 :Int32;
  union {
    driver @1 :DriverHello;  # a job's driver, on the node's Unix socket
    worker @2 :WorkerHello;  # a worker the node started, on its Unix socket
    peer @3 :PeerHello;      # another node, over TCP
    caller @4 :CallerHello;  # a process calling an actor, over TCP to the actor's worker
  }
}

struct DriverHello {
  jobId @0 :Data;
}

struct WorkerHello {
  workerId @0 :Data;         # the id the node gave it at spawn
  jobId @1 :Data;
}

struct PeerHello {
  token @0 :Text;            # the cluster token
  nodeId @1 :Data;           # who is calling
}

struct CallerHello {
  token @0 :Text;            # the cluster token
  outside @1 :Bool;          # a process outside every job (`cumulus call`): the stored results
                             # an actor's worker answers it with are its own to free, and are
                             # freed when it leaves
}

# node or actor's worker -> caller: a request it refused, in one line (the connection stays open;
# a refused hello is a helloAck with a code instead).
struct CoreRefusal {
  code @0 :UInt16;           # cumulus::StatusCode
  message @1 :Text;
}

struct CoreHelloAck {
  code @0 :UInt16;
  message @1 :Text;
  nodeId @2 :Data;
  transferAddress @3 :Text;
  storeSocket @4 :Text;
}

struct WorkerBlocked {
  blocked @0 :Bool;                  # false: running again
  returned @1 :List(Data);           # task ids it queued but had not started: schedule elsewhere
}

struct Bundle {
  index @0 :UInt32;                  # its place in the group
  resources @1 :List(Node.ResourceAmount);
}

# Placement groups: the node a driver (or worker) is attached to places the gang over its view
# and reserves each node's bundles with `reserveBundles`; every node answers with `groupReply`.
# All bundles are held, or none: a refusal releases the others and the group waits again.
struct GroupRequest {                # driver -> node: reserve a gang
  groupId @0 :Data;                  # 16 bytes, chosen by the caller
  jobId @1 :Data;
  bundles @2 :List(Bundle);
  strategy @3 :UInt8;                # 0 PACK, 1 SPREAD, 2 STRICT_PACK, 3 STRICT_SPREAD
  round @4 :UInt32;                  # reserveBundles: which try of the group this is (from 1)
  purpose @5 :Text;                  # createGroup: who it is for, shown with its pending demand
}

struct GroupReply {                  # node -> driver (the group), node -> node (its bundles)
  groupId @0 :Data;
  code @1 :UInt16;                   # cumulus::StatusCode; 0: reserved
  message @2 :Text;
  nodes @3 :List(Data);              # to the driver: the node of each bundle
  round @4 :UInt32;                  # to a node: the try it answers
}

struct GroupRelease {                # let a group's bundles go
  groupId @0 :Data;
  round @1 :UInt32;                  # bundles reserved by this try or earlier; 0xFFFFFFFF: all,
                                     # for good (later reservations of the group are refused)
}

struct CoreMessage {
  union {
    hello @0 :CoreHello;
    helloAck @1 :CoreHelloAck;
    submitTask @2 :Task.TaskSpec;     # owner->node, node->node, node->worker, caller->actor
    taskResult @3 :Task.TaskResult;   # the way back
    freeObjects @4 :List(Data);       # owner->node(->node): delete these stored objects
    cancelTask @5 :Data;              # owner->node(->node): task id
    jobFinished @6 :Data;             # job id: its workers and actors go away
    killActor @7 :Data;               # caller->actor: actor id; the worker exits
    workerBlocked @8 :WorkerBlocked;  # worker->node
    createGroup @9 :GroupRequest;     # driver->node
    groupReply @10 :GroupReply;       # node->driver, node->node
    reserveBundles @11 :GroupRequest; # node->node: hold these bundles (strategy unused)
    removeGroup @12 :GroupRelease;    # driver->node(->nodes): release a group's bundles
    nodeDied @13 :Data;               # node->its drivers and workers: the head declared this
                                      # node (16-byte id) dead
    jobInfo @14 :JobInfo;             # driver->node, node->node: where the job's program is, so
                                      # that nodes start its workers without asking the head
    stateQuery @15 :StateQuery;       # a `caller` (cumulus list/describe/top) -> node, over TCP
    stateReply @16 :StateReply;       # node -> that caller
    timelineRequest @17 :TimelineRequest;  # client->node, over TCP after a caller hello
    timelineEvents @18 :TimelineEvents;    # worker->node: a batch of its events;
                                           # node->client: the answer to timelineRequest
    objectsMoved @19 :ObjectsMoved;        # a draining node -> every node -> its drivers and
                                           # workers: these objects are held elsewhere now
    refused @20 :CoreRefusal;              # node or actor's worker -> caller: a request refused
    actorLost @21 :ActorLost;              # owner (driver or worker) -> its node
    taskReturned @22 :TaskReturned;        # node -> the node that forwarded it a task
  }
}

# A node cannot start a task another node forwarded to it (its resources were taken after the
# view the sender placed it on was made): the task goes back, and the sender, which still holds
# it, places it again. The receiver has forgotten it; it never starts it.
struct TaskReturned {
  taskId @0 :Data;                    # 16 bytes
  reason @1 :Text;                    # why it could not start there, in words
  free @2 :List(Node.ResourceAmount); # what the returning node has free as it returns it
}

# An owner lost a life of its actor (its connection closed, or the head declared its node dead).
# The owner's node sets it aside and keeps it only if the head declares the actor's node dead
# (runtime/node/actor_ends.h): no node is left to recall that end then, for `cumulus list actors`
# and `describe actor`; a live node recalls it itself.
struct ActorLost {
  actorId @0 :Data;                   # 16 bytes; of the sender's job
  className @1 :Text;
  nodeId @2 :Data;                    # 16 bytes: the node it ran on
  life @3 :UInt32;                    # the life that ended (0: its first process)
  maxRestarts @4 :Int32;              # -1: forever
  restartCause @5 :Text;              # life > 0: why this life was started
  cause @6 :Text;                     # why it ended, as the owner saw it
  detached @7 :Bool;
}

# A draining node handed its copies of `objects` to node `to` (runtime/node/object_handoff.h):
# their owners read and free them there from now on.
struct ObjectsMoved {
  from @0 :Data;                      # 16-byte node id that held them
  to @1 :Data;                        # 16-byte node id that holds them now
  transferAddress @2 :Text;           # host:port of `to`'s object channel
  objects @3 :List(Data);             # 28-byte object ids
}

# `cumulus list|describe|top` ask each alive node for rows of what it holds: the node filters
# its live tables first, then keeps the `limit` rows with the smallest ids after `after`, so a
# filter finds rows however many the node holds. Rows are key/value text, as the CLI shows them.
struct StateField {
  key @0 :Text;
  value @1 :Text;
}

struct StateQuery {
  kind @0 :Text;                      # "tasks", "objects", "workers" or "node"
  filters @1 :List(StateField);       # all must match; ids match by prefix
  after @2 :Text;                     # only rows whose id sorts after this ("" from the first)
  limit @3 :UInt32;                   # at most this many rows (the node caps it too)
  detail @4 :Bool;                    # with the fields `cumulus describe` shows
}

struct StateRow {
  fields @0 :List(StateField);
}

struct StateReply {
  code @0 :UInt16;                    # cumulus::StatusCode; 0: rows follow
  message @1 :Text;
  rows @2 :List(StateRow);            # sorted by id
  more @3 :Bool;                      # rows beyond `limit` matched too
  matched @4 :UInt64;                 # rows that matched the filters, in all
  nodeId @5 :Data;
}

# The task timeline (runtime/core/timeline.h): what ran where, and when, in wall-clock
# microseconds since the epoch of the machine that recorded it.
struct TimelineEvent {
  taskId @0 :Data;
  attempt @1 :UInt32;
  kind @2 :UInt8;        # 0: run by a worker (t0..t4 set), 1: scheduled by the node (t0, t1)
  flags @3 :UInt8;       # bit 0: an actor method call, bit 1: an actor's constructor
  code @4 :UInt16;       # cumulus::StatusCode of the run; 0: it succeeded
  workerPid @5 :Int32;   # the worker that ran it (or was handed it)
  function @6 :Text;     # the registered name, truncated to 47 bytes
  # run: received by the worker, started (argument fetch begins), arguments read, function
  # returned, result stored (the end). scheduled: arrived at the node, handed to the worker.
  t0 @7 :Int64;
  t1 @8 :Int64;
  t2 @9 :Int64;
  t3 @10 :Int64;
  t4 @11 :Int64;
}

struct TimelineRequest {
  jobId @0 :Data;        # 4 bytes: only this job's events; empty: every job's
}

struct TimelineEvents {
  nodeId @0 :Data;       # the node answering (empty in a worker's batch)
  events @1 :List(TimelineEvent);
  dropped @2 :UInt64;    # events the node's ring let go (the oldest first) since it started
  capacity @3 :UInt64;   # the ring's bound, in events; 0: the timeline is off on that node
  hostname @4 :Text;
  # A worker's batch, packed (runtime/core/timeline.h, PackTimeline): `packed` holds n events of
  # kTimelinePackedBytes each, every one a TimelineRecord as the worker's build lays it out in
  # memory (little-endian; worker and node run the same build). `packedVersion` names that
  # layout (kTimelinePackedVersion); a node drops, and logs, a batch of a version it does not read
  # or whose length is not a multiple of the record. A batch without `packed` is read from
  # `events` (the list form: what the node answers a client, and what older workers sent).
  packed @5 :Data;
  packedVersion @6 :UInt16;
}

struct JobInfo {
  jobId @0 :Data;
  record @1 :Data;                    # a serialized JobRecord (runtime/core/messages.h)
}
