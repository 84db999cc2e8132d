#include "runtime/core/messages.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/base/numeric.h"
#include "runtime/head/node_codec.h"
#include "runtime/net/first_segment.h"

namespace cumulus {

std::string FrameOfWords(kj::ArrayPtr<const capnp::word> words) {
  auto bytes = words.asChars();
  std::string out(kFrameHeaderBytes + bytes.size(), '\0');
  uint32_t magic = kFrameMagic;
  uint32_t len = static_cast<uint32_t>(bytes.size());
  std::memcpy(out.data(), &magic, 4);
  std::memcpy(out.data() + 4, &len, 4);
  std::memcpy(out.data() + kFrameHeaderBytes, bytes.begin(), bytes.size());
  return out;
}

std::string HelloRefusalFrame(const std::string& message) {
  capnp::MallocMessageBuilder builder(FrameFirstSegmentWords(message.size()));
  auto ack = builder.initRoot<proto::CoreMessage>().initHelloAck();
  ack.setCode(static_cast<uint16_t>(StatusCode::kUnauthenticated));
  ack.setMessage(message);
  return EncodeFrame(builder);
}

std::string RefusalFrame(const Status& st) {
  capnp::MallocMessageBuilder builder(FrameFirstSegmentWords(st.message().size()));
  auto r = builder.initRoot<proto::CoreMessage>().initRefused();
  r.setCode(static_cast<uint16_t>(st.code()));
  r.setMessage(st.message());
  return EncodeFrame(builder);
}

std::vector<std::string> StoredReturnEntries(proto::TaskResult::Reader result) {
  std::vector<std::string> out;
  for (auto ret : result.getReturns()) {
    if (!ret.isStored()) continue;
    auto object = ret.getObjectId();
    auto node = ret.getStored().getNodeId();
    if (object.size() != ObjectId::kSize || node.size() != NodeId::kSize) continue;
    std::string entry(reinterpret_cast<const char*>(object.begin()), object.size());
    entry.append(reinterpret_cast<const char*>(node.begin()), node.size());
    out.push_back(std::move(entry));
  }
  return out;
}

capnp::ReaderOptions CoreReaderOptions(size_t words) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = words + 64;
  return options;
}

TaskRequirements RequirementsOf(proto::TaskSpec::Reader spec) {
  TaskRequirements r;
  r.placement.demand = DecodeResources(spec.getResources());
  for (auto l : spec.getLabelSelector()) r.placement.labels.equals[l.getKey()] = l.getValue();
  for (auto l : spec.getLabelNotEqual()) r.placement.labels.not_equals[l.getKey()] = l.getValue();
  for (auto l : spec.getLabelIn()) {
    for (auto v : l.getValues()) r.placement.labels.in[l.getKey()].insert(v);
  }
  for (auto l : spec.getLabelNotIn()) {
    for (auto v : l.getValues()) r.placement.labels.not_in[l.getKey()].insert(v);
  }
  switch (spec.getStrategy()) {
    case proto::SchedulingStrategy::SPREAD:
      r.placement.strategy = PlacementStrategy::kSpread;
      break;
    case proto::SchedulingStrategy::NODE_AFFINITY:
      r.placement.strategy = PlacementStrategy::kNodeAffinity;
      r.placement.affinity_node = IdFrom<NodeId>(spec.getAffinityNodeId());
      r.placement.affinity_soft = spec.getAffinitySoft();
      break;
    default:
      break;
  }
  for (auto a : spec.getArgs()) {
    if (a.isObjectRef() && a.hasLocation()) {
      NodeId node = IdFrom<NodeId>(a.getLocation().getNodeId());
      if (!node.IsNil()) r.placement.argument_bytes[node] += a.getLocation().getSize();
    }
  }
  if (spec.getPlacementGroupId().size() > 0) {
    auto pg = spec.getPlacementGroupId();
    r.placement_group.assign(reinterpret_cast<const char*>(pg.begin()), pg.size());
    r.bundle_index = spec.getBundleIndex();
  }
  r.purpose = spec.getPurpose().cStr();
  return r;
}

Status CheckPurpose(const std::string& purpose) {
  if (purpose.size() > kMaxPurposeBytes) {
    return Status::InvalidArgument("a purpose of " + std::to_string(purpose.size()) +
                                   " bytes is too long (at most " +
                                   std::to_string(kMaxPurposeBytes) + ")");
  }
  for (char c : purpose) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return Status::InvalidArgument("a purpose must not hold control characters");
  }
  return Status::OK();
}

Status CheckTaskSpecNumbers(proto::TaskSpec::Reader spec) {
  for (auto a : spec.getResources()) {
    CUMULUS_RETURN_IF_ERROR(ResourceSet::CheckAmount(a.getName().cStr(), a.getAmount()));
  }
  CUMULUS_RETURN_IF_ERROR(CheckPurpose(spec.getPurpose().cStr()));
  CUMULUS_RETURN_IF_ERROR(CheckInteger("maxRetries", spec.getMaxRetries(), {-1, INT32_MAX}));
  return CheckInteger("maxRestarts", spec.getMaxRestarts(), {-1, INT32_MAX});
}

Result<int> ListenUnix(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status::InvalidArgument("socket path too long: " + path);
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::Unavailable(std::string("socket: ") + std::strerror(errno));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  unlink(path.c_str());
  mode_t old = umask(0177);  // the socket file is created 0600
  int rc = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  umask(old);
  if (rc != 0 || listen(fd, 512) != 0) {
    int e = errno;
    close(fd);
    return Status::Unavailable("cannot listen on " + path + ": " + std::strerror(e));
  }
  return fd;
}

Result<int> ConnectUnix(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status::InvalidArgument("socket path too long: " + path);
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable(std::string("socket: ") + std::strerror(errno));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int e = errno;
    close(fd);
    return Status::Unavailable("cannot connect to the node at " + path + ": " + std::strerror(e));
  }
  return fd;
}

bool IsTerminalJobState(const std::string& state) {
  return state == "SUCCEEDED" || state == "FAILED" || state == "STOPPED";
}

std::string ObjectMoveKey(const ObjectId& id) { return id.Task().Job().Hex() + "/" + id.Hex(); }

std::string ObjectMoveValue(const ObjectMove& move) {
  return move.node.Hex() + " " + move.transfer;
}

Result<ObjectMove> ParseObjectMove(const std::string& value) {
  size_t space = value.find(' ');
  auto node = NodeId::FromHex(value.substr(0, space));
  if (space == std::string::npos || !node.ok() || space + 1 == value.size()) {
    return Status::InvalidArgument("malformed object move record '" + value + "'");
  }
  return ObjectMove{*node, value.substr(space + 1)};
}

}  // namespace cumulus
