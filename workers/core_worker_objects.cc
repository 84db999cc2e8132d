// CoreWorkerImpl: the object API of the core worker: Get (a lost stored copy is rebuilt from
// lineage and read again), Put, Wait, references and cancels; and what a task blocked in Get or
// Wait hands back to its node (BlockedGuard).
#include <algorithm>
#include <mutex>

#include "runtime/base/numeric.h"
#include "workers/core_worker_impl.h"
#include "workers/object_reader.h"

namespace cumulus {

// While the current task waits in Get or Wait, tasks queued behind it on this worker could be
// the ones it waits for: hand them back to the node, and say so.
class CoreWorkerImpl::BlockedGuard {
 public:
  BlockedGuard(CoreWorkerImpl* w, std::unique_lock<std::mutex>& lock) : w_(w) {
    if (!w_->is_worker_ || w_->execution_.running().IsNil()) return;
    active_ = true;
    w_->NotifyBlocked(true);
  }
  ~BlockedGuard() {
    if (active_) w_->NotifyBlocked(false);
  }

 private:
  CoreWorkerImpl* w_;
  bool active_ = false;
};

template <typename Pred>
bool CoreWorkerImpl::WaitUntil(std::unique_lock<std::mutex>& lock, TimePoint deadline, Pred pred) {
  while (!pred()) {
    if (stopped_) return pred();
    if (deadline == TimePoint::max()) {
      cv_.wait(lock);
    } else if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
      return pred();
    }
  }
  return true;
}

Result<internal::Payload> CoreWorkerImpl::Get(const ObjectId& id, int64_t timeout_ms) {
  // < 0: no limit; one too far to represent is none either (TimePoint::max()), not a wrap.
  TimePoint deadline =
      timeout_ms < 0 ? TimePoint::max()
                     : SaturatingAdd(options_.clock->Now(), std::chrono::milliseconds(timeout_ms));
  std::unique_lock<std::mutex> lock(mu_);
  // A stored copy that cannot be read is rebuilt (lineage) and read again, a bounded number of
  // times (Rebuild fails the object once it may not be rebuilt any more).
  for (int round = 0;; ++round) {
    NodeId tried;
    auto got = GetOnce(id, timeout_ms, deadline, lock, &tried);
    if (got.ok() || round > ReferenceTable::kMaxRebuilds || !IsLoss(got.status())) return got;
    const ObjectEntry* e = refs_.Find(id);
    if (!e || e->state != ObjectEntry::kReady || !e->stored) return got;
    // Its node drained and handed it on (told meanwhile, or recorded at the head): read it there.
    if (e->node != tried || FollowMove(id, tried, lock)) continue;
    tasks_.Rebuild(id, tried, got.status().message());
  }
}

bool CoreWorkerImpl::FollowMove(const ObjectId& id, const NodeId& tried,
                                std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  auto moved = head_->TryCall(
      [&](ControlClient& head) { return head.KvGet(kObjectMovesNamespace, ObjectMoveKey(id)); });
  lock.lock();
  if (!moved.ok()) return false;
  auto to = ParseObjectMove(*moved);
  if (!to.ok() || to->node == tried) return false;
  return refs_.Moved(id, tried, to->node, to->transfer);
}

// A read of a stored object failed because its copy is gone (or its node cannot be reached).
bool CoreWorkerImpl::IsLoss(const Status& st) { return st.code() == StatusCode::kObjectLost; }

// One try of Get. REQUIRES: `lock` holds mu_ (it is held again on return).
Result<internal::Payload> CoreWorkerImpl::GetOnce(const ObjectId& id, int64_t timeout_ms,
                                                  TimePoint deadline,
                                                  std::unique_lock<std::mutex>& lock,
                                                  NodeId* tried) {
  ObjectEntry* found = refs_.Find(id);
  if (!found) {
    return Status::NotFound("object " + id.Hex() + " is not owned by this process (or was freed)");
  }
  if (found->state == ObjectEntry::kPending) {
    BlockedGuard blocked(this, lock);
    bool done = WaitUntil(lock, deadline, [&] {
      const ObjectEntry* e = refs_.Find(id);
      return !e || e->state != ObjectEntry::kPending;
    });
    if (!done) {
      return Status::TimedOut("Get of object " + id.Hex() + " (result of " +
                              tasks_.DescribeProducer(id) + ") timed out after " +
                              std::to_string(timeout_ms) + " ms");
    }
    found = refs_.Find(id);
    if (!found) return Status::NotFound("object " + id.Hex() + " was freed");
  }
  ObjectEntry& e = *found;
  if (e.state == ObjectEntry::kFailed) return e.error;
  if (e.inline_value) {
    auto keep = e.inline_value;
    return internal::Payload{std::string_view(*keep), keep};
  }
  // In a store: this node's, or another node's (pull it here first).
  NodeId where = e.node;
  *tried = where;
  std::string from = e.transfer;
  bool pulled = where != node_id_;
  if (pulled) e.local_copy = true;
  lock.unlock();
  auto buffer = ReadObject(*store_, options_.token, node_id_, id, pulled, from);
  lock.lock();
  if (!buffer.ok()) return buffer.status();
  auto holder = std::make_shared<ObjectBuffer>(std::move(*buffer));
  std::string_view view(reinterpret_cast<const char*>(holder->data()), holder->size());
  return internal::Payload{view, holder};
}

Result<ObjectId> CoreWorkerImpl::Put(std::string bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  ObjectId id = ObjectId::FromPut(CurrentTaskLocked(), ++put_index_);
  ObjectEntry& e = refs_.Add(id);
  if (bytes.size() <= kMaxInlineResultBytes) {
    e.state = ObjectEntry::kReady;
    e.inline_value = std::make_shared<std::string>(std::move(bytes));
    return id;
  }
  lock.unlock();
  Status st = store_->Put(id, bytes.data(), bytes.size());
  lock.lock();
  ObjectEntry* stored = refs_.Find(id);
  if (!st.ok()) {
    if (stored) {  // never seen by anyone: gone again
      stored->refs = 0;
      stored->state = ObjectEntry::kFailed;
      refs_.FreeIfUnused(id);
    }
    return st;
  }
  if (stored) SetStoredHere(*stored, bytes.size());
  return id;
}

Result<ObjectId> CoreWorkerImpl::PutWith(uint64_t size, const std::function<void(uint8_t*)>& fill) {
  std::unique_lock<std::mutex> lock(mu_);
  ObjectId id = ObjectId::FromPut(CurrentTaskLocked(), ++put_index_);
  lock.unlock();
  CUMULUS_ASSIGN_OR_RETURN(MutableBuffer buffer, store_->Create(id, size));
  fill(buffer.data);
  CUMULUS_RETURN_IF_ERROR(store_->Seal(id));
  lock.lock();
  SetStoredHere(refs_.Add(id), size);
  return id;
}

std::vector<bool> CoreWorkerImpl::Wait(const std::vector<ObjectId>& ids, size_t num_ready,
                                       int64_t timeout_ms) {
  // < 0: no limit; one too far to represent is none either (TimePoint::max()), not a wrap.
  TimePoint deadline =
      timeout_ms < 0 ? TimePoint::max()
                     : SaturatingAdd(options_.clock->Now(), std::chrono::milliseconds(timeout_ms));
  std::vector<bool> ready(ids.size(), false);
  num_ready = std::min(num_ready, ids.size());
  std::unique_lock<std::mutex> lock(mu_);
  auto count = [&] {
    size_t n = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      const ObjectEntry* e = refs_.Find(ids[i]);
      ready[i] = !e || e->state != ObjectEntry::kPending;
      n += ready[i] ? 1 : 0;
    }
    return n;
  };
  if (count() < num_ready) {
    BlockedGuard blocked(this, lock);
    WaitUntil(lock, deadline, [&] { return count() >= num_ready; });
  }
  count();
  return ready;
}

void CoreWorkerImpl::AddRef(const ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  refs_.AddRef(id);
}

void CoreWorkerImpl::RemoveRef(const ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  refs_.RemoveRef(id);
  tasks_.FlushFrees();
}

Status CoreWorkerImpl::Cancel(const ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  return tasks_.Cancel(id);
}

Status CoreWorkerImpl::PutRaw(const ObjectId& id, const std::string& bytes) {
  CUMULUS_RETURN_IF_ERROR(store_->Put(id, bytes.data(), bytes.size()));
  std::lock_guard<std::mutex> lock(mu_);
  SetStoredHere(refs_.Add(id), bytes.size());
  return Status();
}

}  // namespace cumulus
