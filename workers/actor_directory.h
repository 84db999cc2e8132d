// ActorDirectory: named actors in the head's store (namespace kActorsNamespace). A name is
// reserved before its actor is built, its address published once the actor runs, and released
// when the actor is killed or its owner ends.
//
// Thread safety: as HeadSession; every call blocks on the head, so none runs on an event-loop
// thread or under the core worker's lock.
#pragma once

#include <string>

#include "cumulus/ids.h"
#include "cumulus/status.h"
#include "runtime/core/records.h"
#include "workers/head_session.h"

namespace cumulus {

class ActorDirectory {
 public:
  explicit ActorDirectory(HeadSession& head) : head_(head) {}

  // Takes `name` for actor `id`; AlreadyExists if another actor holds it.
  Status Reserve(const std::string& name, const ActorId& id, const std::string& class_name);
  // The record of the actor named `name`; NotFound ("no actor is named ...") if none is.
  Result<ActorNameRecord> Lookup(const std::string& name);
  // Waits up to `timeout` for the owner of `name` to publish where it runs.
  Result<std::string> WaitForAddress(const std::string& name, Duration timeout);
  // The actor runs at `address`: GetActor(name) finds it. One try (with a reconnect): it is
  // called while its owner goes on, and logs what it could not do.
  void Publish(const std::string& name, const ActorNameRecord& record);
  // The name is free again, if it still names `id` (waits out a head restart).
  void Release(const std::string& name, const ActorId& id);
  // The same without the check or the wait (the process is shutting down).
  void ReleaseNow(const std::string& name);

 private:
  HeadSession& head_;
};

}  // namespace cumulus
