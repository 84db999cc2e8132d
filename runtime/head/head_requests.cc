// The head's requests: the hello that authenticates a connection, dispatch by kind, nodes
// registering and heartbeating (the ack carries what changed in the cluster), and the cluster's
// status. The key-value requests are in head_kv.cc.
#include <capnp/message.h>
#include <capnp/serialize.h>

#include <string>

#include "runtime/base/logging.h"
#include "runtime/head/head_loop.h"
#include "runtime/head/node_codec.h"

namespace cumulus {

void HeadServer::Loop::Send(Conn& c, capnp::MessageBuilder& message) {
  loop_->Send(c.id, EncodeFrame(message));
}

// Sends an error reply; with `fatal` the connection closes after it.
void HeadServer::Loop::SendError(Conn& c, uint64_t request_id, const Status& st, bool fatal) {
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<proto::ControlReply>();
  reply.setRequestId(request_id);
  reply.setCode(static_cast<uint16_t>(st.code()));
  reply.setMessage(st.message());
  Send(c, message);
  if (fatal) loop_->CloseAfterFlush(c.id, "closed after an error reply: " + st.message());
}

void HeadServer::Loop::Handle(Conn& c, const kj::Array<capnp::word>& words) {
  uint64_t request_id = 0;
  try {
    capnp::ReaderOptions limits;
    limits.traversalLimitInWords = words.size() + 64;  // work bounded by the bytes received
    limits.nestingLimit = 16;
    capnp::FlatArrayMessageReader reader(words, limits);
    auto req = reader.getRoot<proto::ControlRequest>();
    request_id = req.getRequestId();
    if (!loop_->IsAuthenticated(c.id)) {
      if (req.which() != proto::ControlRequest::HELLO) {
        counters_.auth_failures++;
        SendError(c, request_id,
                  Status::Unauthenticated(
                      "authenticate first: the first request must carry the cluster token"),
                  true);
        return;
      }
      auto hello = req.getHello();
      if (!TokensEqual(hello.getToken(), options_.token)) {
        counters_.auth_failures++;
        Complain("refused a connection from " + c.peer + ": wrong cluster token");
        SendError(c, request_id,
                  Status::Unauthenticated("the cluster token is wrong: pass the head's token with "
                                          "--token-file or CUMULUS_TOKEN"),
                  true);
        return;
      }
      if (hello.getProtocolVersion() != proto::PROTOCOL_VERSION) {
        SendError(c, request_id,
                  Status::InvalidArgument("protocol version " +
                                          std::to_string(hello.getProtocolVersion()) +
                                          " is not supported by this head (it speaks " +
                                          std::to_string(proto::PROTOCOL_VERSION) + ")"),
                  true);
        return;
      }
      loop_->Authenticated(c.id, options_.max_frame_bytes);
      c.role = hello.getRole();
      ReplyOk(c, request_id);
      return;
    }
    switch (req.which()) {
      case proto::ControlRequest::HELLO:
        ReplyOk(c, request_id);
        return;
      case proto::ControlRequest::REGISTER_NODE:
        return HandleRegister(c, request_id, req.getRegisterNode());
      case proto::ControlRequest::HEARTBEAT:
        return HandleHeartbeat(c, request_id, req.getHeartbeat());
      case proto::ControlRequest::CLUSTER_STATUS:
        return HandleStatus(c, request_id);
      case proto::ControlRequest::KV_PUT:
        return HandleKvPut(c, request_id, req.getKvPut());
      case proto::ControlRequest::KV_GET:
      case proto::ControlRequest::KV_DELETE:
        return HandleKvGetDelete(
            c, request_id, req.which() == proto::ControlRequest::KV_DELETE,
            req.which() == proto::ControlRequest::KV_DELETE ? req.getKvDelete() : req.getKvGet());
      case proto::ControlRequest::KV_WAIT:
        return HandleKvWait(c, request_id, req.getKvWait());
      case proto::ControlRequest::KV_LIST:
        return HandleKvList(c, request_id, req.getKvList());
      case proto::ControlRequest::LEAVING:
        return HandleLeaving(c, request_id, req.getLeaving());
      case proto::ControlRequest::DRAIN_NODE:
        return HandleDrain(c, request_id, req.getDrainNode());
      default:
        SendError(c, request_id, Status::InvalidArgument("unknown control request"), false);
        return;
    }
  } catch (const kj::Exception& e) {
    counters_.protocol_errors++;
    Complain("malformed request from " + c.peer + " (" + e.getDescription().cStr() +
             "); closing it");
    SendError(
        c, request_id,
        Status::InvalidArgument(std::string("malformed request: ") + e.getDescription().cStr()),
        true);
  }
}

void HeadServer::Loop::ReplyOk(Conn& c, uint64_t request_id) {
  capnp::MallocMessageBuilder message;
  message.initRoot<proto::ControlReply>().setRequestId(request_id);
  Send(c, message);
}

void HeadServer::Loop::Persist(const NodeId& id) {
  const NodeRecord* node = membership_.Find(id);
  if (!node) return;
  Status st = store_->Put(ControlTable::kNodes, id.Binary(), NodeToBytes(*node));
  if (!st.ok()) CUMULUS_LOG(ERROR) << "head: cannot persist node " << id << ": " << st;
}

void HeadServer::Loop::HandleRegister(Conn& c, uint64_t request_id, proto::NodeInfo::Reader info) {
  auto node = DecodeNode(info);
  if (!node.ok()) return SendError(c, request_id, node.status(), false);
  node->address = c.peer;
  bool known = membership_.Find(node->id) != nullptr;
  Status st = membership_.Register(*node);
  if (!st.ok()) return SendError(c, request_id, st, false);
  if (c.node && *c.node != node->id) membership_.Disconnected(*c.node);
  c.node = node->id;
  node_conn_[node->id] = c.id;
  Persist(node->id);
  CUMULUS_LOG(INFO) << "node " << node->id << " " << (known ? "reconnected" : "joined") << " from "
                    << c.peer << " (" << node->total.ToString() << ")";
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<proto::ControlReply>();
  reply.setRequestId(request_id);
  auto r = reply.initRegistered();
  r.setHeartbeatIntervalMs(static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.heartbeat_interval).count()));
  r.setClusterId(cluster_id_);
  Send(c, message);
}

void HeadServer::Loop::HandleHeartbeat(Conn& c, uint64_t request_id, proto::Heartbeat::Reader hb) {
  auto raw = hb.getNodeId();
  bool known = false;
  if (raw.size() == NodeId::kSize) {
    NodeId id = NodeId::FromBinary(
        std::string_view(reinterpret_cast<const char*>(raw.begin()), raw.size()));
    std::string note = hb.getDrainNote();
    if (note.size() > 200) note.resize(200);
    known = membership_.Heartbeat(id, DecodeResources(hb.getResourcesAvailable()),
                                  DecodeDemand(hb.getPendingDemand()), note, hb.getWork());
    if (known && !c.node) {
      c.node = id;
      node_conn_[id] = c.id;
    }
  }
  counters_.heartbeats++;
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<proto::ControlReply>();
  reply.setRequestId(request_id);
  auto ack = reply.initHeartbeatAck();
  ack.setKnown(known);
  if (known && hb.getWantView()) {
    // Only what changed since the version the node holds: the head's work per heartbeat
    // grows with the changes, not with the cluster.
    bool full = hb.getViewEpoch() != started_micros_ || hb.getViewVersion() == 0 ||
                hb.getViewVersion() > membership_.version();
    auto view = ack.initView();
    view.setEpoch(started_micros_);
    view.setVersion(membership_.version());
    view.setFull(full);
    if (full) {
      auto nodes = view.initNodes(static_cast<unsigned>(membership_.nodes().size()));
      unsigned i = 0;
      for (auto& [id, node] : membership_.nodes()) EncodeNode(node, nodes[i++]);
    } else {
      auto changed = membership_.ChangedSince(hb.getViewVersion());
      auto nodes = view.initNodes(static_cast<unsigned>(changed.size()));
      for (unsigned i = 0; i < changed.size(); ++i) EncodeNode(*changed[i], nodes[i]);
    }
  }
  Send(c, message);
}

void HeadServer::Loop::HandleLeaving(Conn& c, uint64_t request_id, proto::Leaving::Reader l) {
  auto raw = l.getNodeId();
  if (raw.size() != NodeId::kSize) {
    return SendError(c, request_id, Status::InvalidArgument("node id must be 16 bytes"), false);
  }
  NodeId id =
      NodeId::FromBinary(std::string_view(reinterpret_cast<const char*>(raw.begin()), raw.size()));
  std::string why = l.getReason();
  if (why.size() > 200) why.resize(200);
  if (why.empty()) why = "it left the cluster";
  if (membership_.Left(id, why)) {
    Persist(id);
    CUMULUS_LOG(INFO) << "node " << id << " left the cluster (stopped: " << why << ")";
  }
  ReplyOk(c, request_id);
}

void HeadServer::Loop::HandleDrain(Conn& c, uint64_t request_id, proto::DrainNode::Reader d) {
  auto raw = d.getNodeId();
  if (raw.size() != NodeId::kSize) {
    return SendError(c, request_id, Status::InvalidArgument("node id must be 16 bytes"), false);
  }
  NodeId id =
      NodeId::FromBinary(std::string_view(reinterpret_cast<const char*>(raw.begin()), raw.size()));
  const NodeRecord* before = membership_.Find(id);
  bool was_draining = before && before->draining;
  Status st = membership_.Drain(id);
  if (!st.ok()) return SendError(c, request_id, st, false);
  if (!was_draining) {
    Persist(id);  // survives a head restart: the record is read back with its mark
    std::string why = d.getReason();
    if (why.size() > 200) why.resize(200);
    CUMULUS_LOG(INFO) << "node " << id << " is draining (asked by " << c.role
                      << (why.empty() ? "" : ": " + why) << ")";
  }
  ReplyOk(c, request_id);
}

void HeadServer::Loop::HandleStatus(Conn& c, uint64_t request_id) {
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<proto::ControlReply>();
  reply.setRequestId(request_id);
  auto s = reply.initStatus();
  s.setClusterId(cluster_id_);
  s.setHeadStartedMicros(started_micros_);
  s.setHeartbeatsReceived(counters_.heartbeats.load());
  s.setKvWaiters(static_cast<uint32_t>(waiters_.size()));
  s.setViewVersion(membership_.version());
  auto nodes = s.initNodes(static_cast<unsigned>(membership_.nodes().size()));
  unsigned i = 0;
  for (auto& [id, node] : membership_.nodes()) EncodeNode(node, nodes[i++]);
  Send(c, message);
}

}  // namespace cumulus
