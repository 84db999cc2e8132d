#include "workers/actor_directory.h"

#include "runtime/base/logging.h"
#include "runtime/core/messages.h"

namespace cumulus {

Status ActorDirectory::Reserve(const std::string& name, const ActorId& id,
                               const std::string& class_name) {
  ActorNameRecord rec{id.Hex(), class_name, ""};
  auto existed = head_.Call([&](ControlClient& head) {
    return head.KvPut(kActorsNamespace, name, EncodeRecord(rec), /*overwrite=*/false);
  });
  if (!existed.ok()) return existed.status();
  if (!*existed) return Status();
  // Ours already if an earlier try went through just before the head went away.
  auto holder = Lookup(name);
  if (holder.ok() && holder->actor_id == rec.actor_id) return Status();
  return Status::AlreadyExists("an actor named '" + name + "' already exists");
}

Result<ActorNameRecord> ActorDirectory::Lookup(const std::string& name) {
  auto raw = head_.Call([&](ControlClient& head) { return head.KvGet(kActorsNamespace, name); });
  if (!raw.ok()) {
    if (raw.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("no actor is named '" + name + "'");
    }
    return raw.status();
  }
  return DecodeRecord<ActorNameRecord>(*raw);
}

Result<std::string> ActorDirectory::WaitForAddress(const std::string& name, Duration timeout) {
  return head_.Call([&](ControlClient& head) {
    return head.KvWait(kActorsNamespace, name + "/address", timeout);
  });
}

void ActorDirectory::Publish(const std::string& name, const ActorNameRecord& record) {
  Status st = head_.TryCall([&](ControlClient& head) {
    return head.KvPut(kActorsNamespace, name + "/address", record.address).status();
  });
  if (st.ok()) {
    st = head_.TryCall([&](ControlClient& head) {
      return head.KvPut(kActorsNamespace, name, EncodeRecord(record)).status();
    });
  }
  if (!st.ok()) {
    CUMULUS_LOG(WARN) << "cumulus: could not publish the address of actor '" << name << "' ("
                      << st.message() << "); GetActor(\"" << name << "\") will not find it";
  }
}

void ActorDirectory::Release(const std::string& name, const ActorId& id) {
  auto held = Lookup(name);
  if (!held.ok() || held->actor_id != id.Hex()) return;
  (void)head_.Call([&](ControlClient& head) { return head.KvDelete(kActorsNamespace, name); });
  (void)head_.Call(
      [&](ControlClient& head) { return head.KvDelete(kActorsNamespace, name + "/address"); });
}

void ActorDirectory::ReleaseNow(const std::string& name) {
  auto del = [&](const std::string& key) {
    return head_.TryCall([&](ControlClient& head) { return head.KvDelete(kActorsNamespace, key); },
                         /*connect=*/false);
  };
  if (del(name).ok()) (void)del(name + "/address");
}

}  // namespace cumulus
