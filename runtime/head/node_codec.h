// NodeRecord <-> proto::NodeInfo (runtime/proto/node.capnp).
#pragma once

#include "runtime/head/membership.h"
#include "runtime/proto/node.capnp.h"

namespace cumulus {

void EncodeNode(const NodeRecord& node, proto::NodeInfo::Builder out);
Result<NodeRecord> DecodeNode(proto::NodeInfo::Reader in);
// Amounts a view reports (free resources, totals, demand): one that fails
// ResourceSet::CheckAmount is left out.
ResourceSet DecodeResources(capnp::List<proto::ResourceAmount>::Reader in);
// Amounts a peer asks for (a placement group's bundle): one that fails ResourceSet::CheckAmount
// is an error, not left out (a bundle would then hold less than it was asked for).
Result<ResourceSet> DecodeRequestedResources(capnp::List<proto::ResourceAmount>::Reader in);
void EncodeResources(const ResourceSet& r, capnp::List<proto::ResourceAmount>::Builder out);
void EncodeDemand(const DemandList& demand, capnp::List<proto::Demand>::Builder out);
DemandList DecodeDemand(capnp::List<proto::Demand>::Reader in);
// Serialized NodeInfo, as the control store keeps it.
std::string NodeToBytes(const NodeRecord& node);
Result<NodeRecord> NodeFromBytes(const std::string& bytes);

}  // namespace cumulus
