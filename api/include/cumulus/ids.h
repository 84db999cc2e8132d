// Strongly typed identifiers. Each kind is its own type, so a NodeId cannot be passed where an
// ObjectId is expected. Ids are fixed-size byte strings, printed as lowercase hex.
//
//   JobId     4 bytes   assigned by the head, counting up
//   NodeId   16 bytes   random
//   WorkerId 16 bytes   random
//   ActorId  16 bytes   12 random bytes + the JobId that created it
//   TaskId   24 bytes    8 random bytes + the ActorId it belongs to (nil-actor + JobId for a task)
//   ObjectId 28 bytes   the TaskId that made it + a 4-byte index: return value k of a task has
//                       index k (1-based); the k-th Put done by a task has index 0x80000000 | k.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "cumulus/status.h"

namespace cumulus {

namespace internal {
void FillRandom(uint8_t* data, size_t n);
std::string ToHex(const uint8_t* data, size_t n);
bool FromHex(std::string_view hex, uint8_t* out, size_t n);
}  // namespace internal

template <typename Tag, size_t N>
class BaseId {
 public:
  static constexpr size_t kSize = N;

  BaseId() { bytes_.fill(0); }  // the nil id

  static Tag Nil() { return Tag(); }
  static Tag FromRandom() {
    Tag id;
    internal::FillRandom(id.bytes_.data(), N);
    return id;
  }
  // REQUIRES: binary.size() == N, else returns nil.
  static Tag FromBinary(std::string_view binary) {
    Tag id;
    if (binary.size() == N) std::memcpy(id.bytes_.data(), binary.data(), N);
    return id;
  }
  static Result<Tag> FromHex(std::string_view hex) {
    Tag id;
    if (!internal::FromHex(hex, id.bytes_.data(), N)) {
      return Status::InvalidArgument("'" + std::string(hex) + "' is not a valid " + Tag::kName +
                                     " (expected " + std::to_string(2 * N) + " hex digits)");
    }
    return id;
  }

  bool IsNil() const {
    for (uint8_t b : bytes_) {
      if (b != 0) return false;
    }
    return true;
  }
  const uint8_t* data() const { return bytes_.data(); }
  std::string Binary() const {
    return std::string(reinterpret_cast<const char*>(bytes_.data()), N);
  }
  std::string Hex() const { return internal::ToHex(bytes_.data(), N); }

  bool operator==(const BaseId& o) const { return bytes_ == o.bytes_; }
  bool operator!=(const BaseId& o) const { return bytes_ != o.bytes_; }
  bool operator<(const BaseId& o) const { return bytes_ < o.bytes_; }

  size_t Hash() const {
    // Ids are mostly random bytes: FNV-1a over them is plenty.
    uint64_t h = 1469598103934665603ull;
    for (uint8_t b : bytes_) h = (h ^ b) * 1099511628211ull;
    return static_cast<size_t>(h);
  }

 protected:
  std::array<uint8_t, N> bytes_;
};

class JobId : public BaseId<JobId, 4> {
 public:
  static constexpr const char* kName = "job id";
  static JobId FromInt(uint32_t value);
  uint32_t ToInt() const;
};

class NodeId : public BaseId<NodeId, 16> {
 public:
  static constexpr const char* kName = "node id";
};

class WorkerId : public BaseId<WorkerId, 16> {
 public:
  static constexpr const char* kName = "worker id";
};

class ActorId : public BaseId<ActorId, 16> {
 public:
  static constexpr const char* kName = "actor id";
  static constexpr size_t kUniqueBytes = 12;
  static ActorId Of(const JobId& job);  // a new random actor id of `job`
  JobId Job() const;
};

class PlacementGroupId : public BaseId<PlacementGroupId, 16> {
 public:
  static constexpr const char* kName = "placement group id";
};

class TaskId : public BaseId<TaskId, 24> {
 public:
  static constexpr const char* kName = "task id";
  static constexpr size_t kUniqueBytes = 8;
  static TaskId ForNormalTask(const JobId& job);     // random
  static TaskId ForActorTask(const ActorId& actor);  // random
  static TaskId ForDriver(const JobId& job);         // deterministic: the job's root task
  ActorId Actor() const;                             // nil-unique part for a normal task
  JobId Job() const;
};

class ObjectId : public BaseId<ObjectId, 28> {
 public:
  static constexpr const char* kName = "object id";
  static constexpr uint32_t kPutBit = 0x80000000u;

  // REQUIRES: 1 <= index < kPutBit.
  static ObjectId FromTaskReturn(const TaskId& task, uint32_t return_index);
  // REQUIRES: 1 <= put_index < kPutBit.
  static ObjectId FromPut(const TaskId& task, uint32_t put_index);

  TaskId Task() const;
  uint32_t Index() const;  // with the put bit cleared
  bool IsPut() const;
};

template <typename Tag, size_t N>
std::ostream& operator<<(std::ostream& os, const BaseId<Tag, N>& id) {
  return os << id.Hex();
}

}  // namespace cumulus

#define CUMULUS_DEFINE_ID_HASH(T)                                       \
  template <>                                                           \
  struct std::hash<cumulus::T> {                                        \
    size_t operator()(const cumulus::T& id) const { return id.Hash(); } \
  };
CUMULUS_DEFINE_ID_HASH(JobId)
CUMULUS_DEFINE_ID_HASH(NodeId)
CUMULUS_DEFINE_ID_HASH(WorkerId)
CUMULUS_DEFINE_ID_HASH(ActorId)
CUMULUS_DEFINE_ID_HASH(PlacementGroupId)
CUMULUS_DEFINE_ID_HASH(TaskId)
CUMULUS_DEFINE_ID_HASH(ObjectId)
#undef CUMULUS_DEFINE_ID_HASH
