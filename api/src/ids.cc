#include "cumulus/ids.h"

#include <random>

namespace cumulus {
namespace internal {

void FillRandom(uint8_t* data, size_t n) {
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }());
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    std::memcpy(data + i, &v, std::min<size_t>(8, n - i));
  }
}

std::string ToHex(const uint8_t* data, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return out;
}

static int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool FromHex(std::string_view hex, uint8_t* out, size_t n) {
  if (hex.size() != 2 * n) return false;
  for (size_t i = 0; i < n; ++i) {
    int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

}  // namespace internal

namespace {
void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t GetU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
}  // namespace

JobId JobId::FromInt(uint32_t value) {
  JobId id;
  PutU32(id.bytes_.data(), value);
  return id;
}
uint32_t JobId::ToInt() const { return GetU32(bytes_.data()); }

ActorId ActorId::Of(const JobId& job) {
  ActorId id;
  internal::FillRandom(id.bytes_.data(), kUniqueBytes);
  std::memcpy(id.bytes_.data() + kUniqueBytes, job.data(), JobId::kSize);
  return id;
}
JobId ActorId::Job() const { return JobId::FromBinary(Binary().substr(kUniqueBytes)); }

TaskId TaskId::ForActorTask(const ActorId& actor) {
  TaskId id;
  internal::FillRandom(id.bytes_.data(), kUniqueBytes);
  std::memcpy(id.bytes_.data() + kUniqueBytes, actor.data(), ActorId::kSize);
  return id;
}
TaskId TaskId::ForNormalTask(const JobId& job) {
  ActorId nil_actor;  // nil unique part, job in the tail
  std::string bin = nil_actor.Binary();
  bin.replace(ActorId::kUniqueBytes, JobId::kSize, job.Binary());
  return ForActorTask(ActorId::FromBinary(bin));
}
TaskId TaskId::ForDriver(const JobId& job) {
  TaskId id;
  std::memcpy(id.bytes_.data() + kUniqueBytes + ActorId::kUniqueBytes, job.data(), JobId::kSize);
  return id;
}
ActorId TaskId::Actor() const { return ActorId::FromBinary(Binary().substr(kUniqueBytes)); }
JobId TaskId::Job() const { return Actor().Job(); }

ObjectId ObjectId::FromTaskReturn(const TaskId& task, uint32_t return_index) {
  ObjectId id;
  std::memcpy(id.bytes_.data(), task.data(), TaskId::kSize);
  PutU32(id.bytes_.data() + TaskId::kSize, return_index & ~kPutBit);
  return id;
}
ObjectId ObjectId::FromPut(const TaskId& task, uint32_t put_index) {
  ObjectId id;
  std::memcpy(id.bytes_.data(), task.data(), TaskId::kSize);
  PutU32(id.bytes_.data() + TaskId::kSize, put_index | kPutBit);
  return id;
}
TaskId ObjectId::Task() const { return TaskId::FromBinary(Binary().substr(0, TaskId::kSize)); }
uint32_t ObjectId::Index() const { return GetU32(bytes_.data() + TaskId::kSize) & ~kPutBit; }
bool ObjectId::IsPut() const { return (GetU32(bytes_.data() + TaskId::kSize) & kPutBit) != 0; }

}  // namespace cumulus
