// Helpers for the task protocol (runtime/proto/core.capnp): building frames, reading ids, and the
// job record that tells a node how to fetch and start a job's program.
#pragma once

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <string>
#include <string_view>
#include <vector>

#include "cumulus/ids.h"
#include "cumulus/serialization.h"
#include "cumulus/status.h"
#include "runtime/net/frame.h"
#include "runtime/proto/core.capnp.h"
#include "scheduler/placement.h"
#include "scheduler/resources.h"

namespace cumulus {

// Results this size or smaller travel inside the result message; larger ones stay in the store
// of the node that made them and are pulled over the object channel.
constexpr uint64_t kMaxInlineResultBytes = 100 * 1024;
// Frames on core connections may be this large (a task's inline arguments).
constexpr uint32_t kMaxCoreFrameBytes = 512u << 20;

template <typename Id>
Id IdFrom(capnp::Data::Reader data) {
  if (data.size() != Id::kSize) return Id();
  return Id::FromBinary(std::string_view(reinterpret_cast<const char*>(data.begin()), data.size()));
}
template <typename Id>
capnp::Data::Reader DataOf(const Id& id) {
  return capnp::Data::Reader(id.data(), Id::kSize);
}

// Frame header + the flat words of an already encoded message (to pass a frame on unchanged).
std::string FrameOfWords(kj::ArrayPtr<const capnp::word> words);

// The placement request a task spec asks for.
struct TaskRequirements {
  PlacementRequest placement;
  std::string placement_group;  // binary id
  int bundle_index = -1;
};
TaskRequirements RequirementsOf(proto::TaskSpec::Reader spec);

// What a node needs to start workers of a job: where its program is and how it was invoked.
struct JobRecord {
  std::string binary_object;  // hex object id of the program's bytes
  uint64_t binary_size = 0;
  std::string binary_hash;       // hex XXH3-64 of the bytes
  std::string transfer_address;  // the driver node's object channel
  std::vector<std::string> argv;
  std::string driver_node;  // hex
  CUMULUS_SERIALIZE(binary_object, binary_size, binary_hash, transfer_address, argv, driver_node)
};
constexpr const char* kJobsNamespace = "jobs";
// Where a placement group's bundles are held (head KV, namespace kGroupsNamespace, key hex id):
// written by the node that reserved the group, read by nodes that route tasks into it.
struct GroupRecord {
  std::string job;                 // hex
  std::vector<std::string> nodes;  // hex node id of each bundle
  CUMULUS_SERIALIZE(job, nodes)
};
constexpr const char* kGroupsNamespace = "placement_groups";
constexpr const char* kActorsNamespace = "actors";

// Listens on a Unix stream socket at `path` (mode 0600). Connects to one.
Result<int> ListenUnix(const std::string& path);
Result<int> ConnectUnix(const std::string& path);

}  // namespace cumulus
