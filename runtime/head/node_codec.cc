#include "runtime/head/node_codec.h"

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstring>

namespace cumulus {

namespace {
template <typename ListBuilder>
void FillResources(const ResourceSet& r, ListBuilder list) {
  unsigned i = 0;
  for (auto& [name, units] : r.units()) {
    list[i].setName(name);
    list[i].setAmount(static_cast<double>(units) / ResourceSet::kUnit);
    ++i;
  }
}
}  // namespace

void EncodeResources(const ResourceSet& r, capnp::List<proto::ResourceAmount>::Builder out) {
  FillResources(r, out);
}

void EncodeDemand(const DemandList& demand, capnp::List<proto::Demand>::Builder out) {
  for (unsigned i = 0; i < demand.size(); ++i) {
    FillResources(demand[i].shape,
                  out[i].initResources(static_cast<unsigned>(demand[i].shape.units().size())));
    out[i].setCount(demand[i].count);
    out[i].setSelector(demand[i].selector);
    out[i].setPurpose(demand[i].purpose);
    out[i].setReason(demand[i].reason);
    out[i].setPinnedTo(demand[i].pinned_to);
  }
}

DemandList DecodeDemand(capnp::List<proto::Demand>::Reader in) {
  DemandList out;
  for (auto d : in)
    out.emplace_back(DecodeResources(d.getResources()), d.getCount(), d.getSelector().cStr(),
                     d.getPurpose().cStr(), d.getReason().cStr(), d.getPinnedTo().cStr());
  return out;
}

ResourceSet DecodeResources(capnp::List<proto::ResourceAmount>::Reader in) {
  ResourceSet r;
  for (auto a : in) {
    std::string name = a.getName().cStr();
    double amount = a.getAmount();
    if (ResourceSet::CheckAmount(name, amount).ok()) r.Set(name, amount);
  }
  return r;
}

Result<ResourceSet> DecodeRequestedResources(capnp::List<proto::ResourceAmount>::Reader in) {
  ResourceSet r;
  for (auto a : in) {
    std::string name = a.getName().cStr();
    CUMULUS_RETURN_IF_ERROR(ResourceSet::CheckAmount(name, a.getAmount()));
    r.Set(name, a.getAmount());
  }
  return r;
}

void EncodeNode(const NodeRecord& node, proto::NodeInfo::Builder out) {
  out.setNodeId(capnp::Data::Reader(node.id.data(), NodeId::kSize));
  out.setAddress(node.address);
  out.setHostname(node.hostname);
  out.setObjectStoreAddress(node.object_store_address);
  FillResources(node.total,
                out.initResourcesTotal(static_cast<unsigned>(node.total.units().size())));
  FillResources(node.available,
                out.initResourcesAvailable(static_cast<unsigned>(node.available.units().size())));
  auto labels = out.initLabels(static_cast<unsigned>(node.labels.size()));
  unsigned i = 0;
  for (auto& [k, v] : node.labels) {
    labels[i].setKey(k);
    labels[i].setValue(v);
    ++i;
  }
  out.setState(node.state == NodeState::kAlive  ? proto::NodeState::ALIVE
               : node.state == NodeState::kDead ? proto::NodeState::DEAD
                                                : proto::NodeState::RECOVERING);
  auto gpus = out.initGpuIds(static_cast<unsigned>(node.gpu_ids.size()));
  for (unsigned g = 0; g < node.gpu_ids.size(); ++g) gpus.set(g, node.gpu_ids[g]);
  out.setRegisteredMicros(node.registered_micros);
  out.setLastHeartbeatMicros(node.last_heartbeat_micros);
  out.setDeathReason(node.death_reason);
  out.setLeft(node.left);
  out.setDraining(node.draining);
  out.setDrainNote(node.drain_note);
  out.setDeathMicros(node.death_micros);
  out.setPid(node.pid);
  out.setCoreAddress(node.core_address);
  out.setCoreSocket(node.core_socket);
  out.setMetricsAddress(node.metrics_address);
  out.setWork(node.work);
  EncodeDemand(node.pending_demand,
               out.initPendingDemand(static_cast<unsigned>(node.pending_demand.size())));
}

Result<NodeRecord> DecodeNode(proto::NodeInfo::Reader in) {
  NodeRecord node;
  auto id = in.getNodeId();
  if (id.size() != NodeId::kSize) {
    return Status::InvalidArgument("node id must be " + std::to_string(NodeId::kSize) + " bytes");
  }
  node.id =
      NodeId::FromBinary(std::string_view(reinterpret_cast<const char*>(id.begin()), id.size()));
  if (node.id.IsNil()) return Status::InvalidArgument("node id must not be nil");
  node.address = in.getAddress();
  node.hostname = in.getHostname();
  node.object_store_address = in.getObjectStoreAddress();
  node.total = DecodeResources(in.getResourcesTotal());
  node.available = DecodeResources(in.getResourcesAvailable());
  for (auto l : in.getLabels()) node.labels[l.getKey()] = l.getValue();
  node.state = in.getState() == proto::NodeState::ALIVE  ? NodeState::kAlive
               : in.getState() == proto::NodeState::DEAD ? NodeState::kDead
                                                         : NodeState::kRecovering;
  for (uint32_t g : in.getGpuIds()) node.gpu_ids.push_back(g);
  node.registered_micros = in.getRegisteredMicros();
  node.last_heartbeat_micros = in.getLastHeartbeatMicros();
  node.death_reason = in.getDeathReason();
  node.left = in.getLeft();
  node.draining = in.getDraining();
  node.drain_note = in.getDrainNote();
  node.metrics_address = in.getMetricsAddress();
  node.work = in.getWork();
  node.death_micros = in.getDeathMicros();
  node.pid = in.getPid();
  node.core_address = in.getCoreAddress();
  node.core_socket = in.getCoreSocket();
  node.pending_demand = DecodeDemand(in.getPendingDemand());
  return node;
}

std::string NodeToBytes(const NodeRecord& node) {
  capnp::MallocMessageBuilder message;
  EncodeNode(node, message.initRoot<proto::NodeInfo>());
  auto words = capnp::messageToFlatArray(message);
  return std::string(words.asChars().begin(), words.asChars().size());
}

Result<NodeRecord> NodeFromBytes(const std::string& bytes) {
  if (bytes.size() % sizeof(capnp::word) != 0) return Status::Internal("corrupt node record");
  auto words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  try {
    capnp::FlatArrayMessageReader reader(words);
    return DecodeNode(reader.getRoot<proto::NodeInfo>());
  } catch (const kj::Exception& e) {
    return Status::Internal(std::string("corrupt node record: ") + e.getDescription().cStr());
  }
}

}  // namespace cumulus
