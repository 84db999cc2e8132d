#include "runtime/object_store/object_store.h"

#include <cstring>
#include <filesystem>
#include <vector>

#include "runtime/base/logging.h"

namespace cumulus {

namespace {
constexpr uint64_t kAlignment = 64;

std::string Bytes(uint64_t n) {
  char buf[64];
  if (n >= (1ull << 30))
    std::snprintf(buf, sizeof(buf), "%.2f GiB", n / double(1ull << 30));
  else if (n >= (1ull << 20))
    std::snprintf(buf, sizeof(buf), "%.2f MiB", n / double(1ull << 20));
  else if (n >= 1024)
    std::snprintf(buf, sizeof(buf), "%.2f KiB", n / 1024.0);
  else
    std::snprintf(buf, sizeof(buf), "%llu bytes", static_cast<unsigned long long>(n));
  return buf;
}
}  // namespace

Status ObjectStore::CheckMemoryCapacity(uint64_t bytes, const std::string& what) {
  uint64_t physical = PhysicalMemoryBytes();
  if (bytes < kMinMemoryBytes) {
    return Status::InvalidArgument(what + " must be at least " + Bytes(kMinMemoryBytes) + " (got " +
                                   std::to_string(bytes) +
                                   " bytes; leave it out for 30% of this machine's memory)");
  }
  if (physical > 0 && bytes > physical) {
    return Status::InvalidArgument(what + " (" + Bytes(bytes) + ") is more than this machine's " +
                                   Bytes(physical) + " of memory");
  }
  return Status();
}

Result<std::unique_ptr<ObjectStore>> ObjectStore::Open(const ObjectStoreOptions& in) {
  ObjectStoreOptions options = in;
  if (options.directory.empty()) {
    return Status::InvalidArgument("the object store needs a directory for its disk tier");
  }
  if (options.memory_capacity == 0) options.memory_capacity = PhysicalMemoryBytes() / 10 * 3;
  options.memory_capacity = options.memory_capacity / kAlignment * kAlignment;
  if (options.memory_capacity == 0) {
    return Status::InvalidArgument("object store memory capacity must be at least 64 bytes");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.directory, ec);
  if (ec) {
    return Status::Unavailable("cannot create object store directory " + options.directory + ": " +
                               ec.message());
  }
  CUMULUS_ASSIGN_OR_RETURN(auto region, SharedRegion::Create(options.memory_capacity,
                                                             "cumulus-objects", options.prefault));
  SpillStoreOptions spill_options;
  spill_options.path = options.directory + "/objects.db";
  spill_options.min_blob_size = options.min_blob_size;
  spill_options.min_free_disk_bytes = options.min_free_disk_bytes;
  CUMULUS_ASSIGN_OR_RETURN(auto spill, SpillStore::Open(spill_options));
  std::unique_ptr<ObjectStore> store(new ObjectStore(options, std::move(region), std::move(spill)));
  CUMULUS_RETURN_IF_ERROR(store->RecoverFromDisk());
  return store;
}

ObjectStore::ObjectStore(ObjectStoreOptions options, std::unique_ptr<SharedRegion> region,
                         std::unique_ptr<SpillStore> spill)
    : options_(std::move(options)),
      region_(std::move(region)),
      spill_(std::move(spill)),
      incarnation_(NodeId::FromRandom().Binary()),
      allocator_(options_.memory_capacity, kAlignment) {
  counters_.capacity_bytes = options_.memory_capacity;
}

ObjectStore::~ObjectStore() = default;

Status ObjectStore::RecoverFromDisk() {
  std::vector<ObjectId> stale;
  std::lock_guard<std::mutex> lock(mu_);
  CUMULUS_RETURN_IF_ERROR(spill_->ForEach([&](const StoredObjectInfo& info) {
    if (!info.durable) {
      stale.push_back(info.id);
      return;
    }
    Entry e;
    e.size = info.size;
    e.sealed = true;
    e.durable = true;
    e.on_disk = true;
    objects_.emplace(info.id, e);
    counters_.recovered_durable++;
  }));
  for (const ObjectId& id : stale) {
    Status st = spill_->Delete(id);
    if (!st.ok()) CUMULUS_LOG(WARN) << "could not delete stale spill copy: " << st;
  }
  counters_.dropped_at_start = stale.size();
  if (counters_.recovered_durable || !stale.empty()) {
    CUMULUS_LOG(INFO) << "object store at " << options_.directory << ": recovered "
                      << counters_.recovered_durable << " durable objects; deleted " << stale.size()
                      << " non-durable spill copies left by an earlier run";
  }
  return Status();
}

Result<MutableBuffer> ObjectStore::Create(const ObjectId& id, uint64_t size, bool durable,
                                          ClientId client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(id);
  if (it != objects_.end()) {
    const Entry& e = it->second;
    return Status::AlreadyExists(
        "object " + id.Hex() +
        (!e.sealed ? " already exists and is being written"
         : e.delete_pending
             ? " was deleted but a reader still holds it; create it again once released"
             : " already exists"));
  }
  // size first: RoundUp of a size near 2^64 wraps to a small one (a peer's pull announces it).
  if (size > allocator_.capacity() || allocator_.RoundUp(size) > allocator_.capacity()) {
    return Status::ResourceExhausted(
        "object " + id.Hex() + " is " + Bytes(size) +
        ", larger than the object store's whole memory tier (" + Bytes(allocator_.capacity()) +
        "); objects must fit in memory: give the store more memory or split the object");
  }
  CUMULUS_ASSIGN_OR_RETURN(uint64_t offset, AllocateLocked(id, size));
  Entry e;
  e.size = size;
  e.durable = durable;
  e.in_memory = true;
  e.offset = offset;
  e.creator = client;
  objects_.emplace(id, e);
  client_creating_[client].insert(id);
  return MutableBuffer{region_->data() + offset, size, offset};
}

Result<uint64_t> ObjectStore::AllocateLocked(const ObjectId& for_id, uint64_t size) {
  while (true) {
    if (auto offset = allocator_.Allocate(size)) return *offset;
    if (lru_.empty()) {
      return Status::ResourceExhausted(
          "object store memory is full: " + Bytes(allocator_.used()) + " of " +
          Bytes(allocator_.capacity()) +
          " are pinned or being written, so nothing can be spilled to make room for object " +
          for_id.Hex() + " (" + Bytes(size) +
          "); release objects you hold or give the store more memory");
    }
    ObjectId victim = lru_.front();
    Status st = SpillLocked(victim, objects_.at(victim));
    if (!st.ok()) {
      // The disk refused the write (full?): objects that already have a disk copy can still
      // leave memory for free.
      for (const ObjectId& id : lru_) {
        Entry& e = objects_.at(id);
        if (e.on_disk) {
          st = SpillLocked(id, e);
          break;
        }
      }
    }
    if (!st.ok()) {
      return Status(st.code(), "cannot make room for object " + for_id.Hex() + " (" + Bytes(size) +
                                   "): " + st.message());
    }
  }
}

Status ObjectStore::SpillLocked(const ObjectId& id, Entry& e) {
  if (!e.on_disk) {
    CUMULUS_RETURN_IF_ERROR(spill_->Write(id, region_->data() + e.offset, e.size, /*durable=*/false,
                                          incarnation_, options_.clock->WallMicros()));
    e.on_disk = true;
  }
  if (e.in_lru) {
    lru_.erase(e.lru);
    e.in_lru = false;
  }
  FreeBlockLocked(e.offset, e.size);
  e.in_memory = false;
  counters_.spill_count++;
  return Status();
}

void ObjectStore::FreeBlockLocked(uint64_t offset, uint64_t size) {
  allocator_.Free(offset, size);
  last_free_ = options_.clock->Now();
  freed_since_release_ = true;
}

uint64_t ObjectStore::ReleaseFreeMemory(Duration idle) {
  std::lock_guard<std::mutex> lock(mu_);
  if (options_.prefault || !freed_since_release_ || options_.clock->Now() - last_free_ < idle) {
    return region_->ResidentBytes();
  }
  Status failed;
  allocator_.ForEachFree([&](uint64_t offset, uint64_t size) {
    Status st = region_->Release(offset, size);
    if (!st.ok()) failed = st;
  });
  if (!failed.ok()) CUMULUS_LOG(WARN) << "object store: " << failed.message();
  freed_since_release_ = false;
  return region_->ResidentBytes();
}

void ObjectStore::TouchLocked(const ObjectId& id, Entry& e) {
  if (e.in_lru) lru_.erase(e.lru);
  e.lru = lru_.insert(lru_.end(), id);
  e.in_lru = true;
}

void ObjectStore::ForgetCreatingLocked(const ObjectId& id, ClientId creator) {
  auto c = client_creating_.find(creator);
  if (c == client_creating_.end()) return;
  c->second.erase(id);
  if (c->second.empty()) client_creating_.erase(c);
}

void ObjectStore::FreeLocked(std::unordered_map<ObjectId, Entry>::iterator it) {
  Entry& e = it->second;
  if (!e.sealed) ForgetCreatingLocked(it->first, e.creator);
  if (e.in_lru) lru_.erase(e.lru);
  if (e.in_memory) FreeBlockLocked(e.offset, e.size);
  if (e.on_disk) {
    Status st = spill_->Delete(it->first);
    if (!st.ok()) {
      CUMULUS_LOG(WARN) << "object " << it->first << " freed, but its disk copy remains: " << st;
    }
  }
  ObjectId id = it->first;
  objects_.erase(it);
  if (change_listener_) change_listener_(id);
}

Status ObjectStore::Seal(const ObjectId& id, ClientId client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(id);
  if (it == objects_.end())
    return Status::NotFound("cannot seal object " + id.Hex() + ": it does not exist");
  Entry& e = it->second;
  if (e.sealed) return Status::InvalidArgument("object " + id.Hex() + " is already sealed");
  if (e.creator != client) {
    return Status::InvalidArgument("object " + id.Hex() +
                                   " was created by another client; only its creator can seal it");
  }
  if (e.durable) {
    CUMULUS_RETURN_IF_ERROR(spill_->Write(id, region_->data() + e.offset, e.size, /*durable=*/true,
                                          incarnation_, options_.clock->WallMicros()));
    e.on_disk = true;
  }
  e.sealed = true;
  ForgetCreatingLocked(id, e.creator);
  if (e.pins == 0) TouchLocked(id, e);
  if (change_listener_) change_listener_(id);
  return Status();
}

Status ObjectStore::Abort(const ObjectId& id, ClientId client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(id);
  if (it == objects_.end())
    return Status::NotFound("cannot abort object " + id.Hex() + ": it does not exist");
  if (it->second.sealed) {
    return Status::InvalidArgument("object " + id.Hex() +
                                   " is sealed: delete it instead of aborting");
  }
  if (it->second.creator != client) {
    return Status::InvalidArgument("object " + id.Hex() +
                                   " was created by another client; only its creator can abort it");
  }
  FreeLocked(it);
  return Status();
}

Status ObjectStore::Put(const ObjectId& id, const void* data, uint64_t size, bool durable) {
  return PutBytes(*this, id, data, size, durable);
}

Result<ObjectBuffer> ObjectStore::Get(const ObjectId& id) {
  CUMULUS_ASSIGN_OR_RETURN(MutableBuffer view, Pin(id, kLocalClient));
  return ObjectBuffer(view.data, view.size, [this, id] {
    Status ignored = Unpin(id, kLocalClient);
    (void)ignored;
  });
}

void ObjectStore::PinLocked(const ObjectId& id, Entry& e, ClientId client) {
  if (e.in_lru) {
    lru_.erase(e.lru);
    e.in_lru = false;
  }
  e.pins++;
  client_pins_[client][id]++;
}

Result<MutableBuffer> ObjectStore::Pin(const ObjectId& id, ClientId client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(id);
  if (it == objects_.end() || it->second.delete_pending) {
    return Status::NotFound("object " + id.Hex() + " does not exist in this node's object store");
  }
  Entry& e = it->second;
  if (!e.sealed)
    return Status::Unavailable("object " + id.Hex() + " is still being written (not sealed)");
  if (!e.in_memory) {
    bool allocated = false;
    uint64_t offset = 0;
    Status st = spill_->Read(id, [&](uint64_t size) -> Result<uint8_t*> {
      if (size != e.size) {
        return Status::ObjectLost("object " + id.Hex() + ": disk copy is " + Bytes(size) +
                                  ", expected " + Bytes(e.size));
      }
      // Pin nothing yet: AllocateLocked may spill other objects, never this one (not in memory).
      CUMULUS_ASSIGN_OR_RETURN(offset, AllocateLocked(id, size));
      allocated = true;
      return region_->data() + offset;
    });
    if (!st.ok()) {
      if (allocated) FreeBlockLocked(offset, e.size);
      if (st.code() == StatusCode::kNotFound) {
        st = Status::ObjectLost("object " + id.Hex() + " was spilled to " + spill_->path() +
                                " but its disk copy is gone");
      }
      return st;
    }
    e.in_memory = true;
    e.offset = offset;
    counters_.restore_count++;
  }
  PinLocked(id, e, client);
  return MutableBuffer{region_->data() + e.offset, e.size, e.offset};
}

Status ObjectStore::Unpin(const ObjectId& id, ClientId client) {
  std::lock_guard<std::mutex> lock(mu_);
  return UnpinLocked(id, client);
}

Status ObjectStore::UnpinLocked(const ObjectId& id, ClientId client) {
  auto cp = client_pins_.find(client);
  auto pin = cp == client_pins_.end() ? decltype(cp->second.end()){} : cp->second.find(id);
  if (cp == client_pins_.end() || pin == cp->second.end()) {
    return Status::InvalidArgument("no pin is held on object " + id.Hex() + " by this client");
  }
  if (--pin->second == 0) cp->second.erase(pin);
  if (cp->second.empty()) client_pins_.erase(cp);
  auto it = objects_.find(id);
  if (it == objects_.end()) return Status::Internal("pinned object " + id.Hex() + " vanished");
  Entry& e = it->second;
  if (--e.pins == 0) {
    if (e.delete_pending)
      FreeLocked(it);
    else
      TouchLocked(id, e);
  }
  return Status();
}

void ObjectStore::ReleaseClient(ClientId client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto cp = client_pins_.find(client);
  if (cp != client_pins_.end()) {
    std::vector<std::pair<ObjectId, int>> pins(cp->second.begin(), cp->second.end());
    for (auto& [id, count] : pins) {
      for (int i = 0; i < count; ++i) {
        Status ignored = UnpinLocked(id, client);
        (void)ignored;
      }
    }
  }
  auto creating = client_creating_.find(client);
  if (creating != client_creating_.end()) {
    std::vector<ObjectId> unsealed(creating->second.begin(), creating->second.end());
    for (const ObjectId& id : unsealed) {
      auto it = objects_.find(id);
      if (it != objects_.end() && !it->second.sealed) FreeLocked(it);
    }
    client_creating_.erase(client);
  }
}

Status ObjectStore::Delete(const ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(id);
  if (it == objects_.end() || it->second.delete_pending) {
    return Status::NotFound("cannot delete object " + id.Hex() + ": it does not exist");
  }
  if (!it->second.sealed) {
    return Status::InvalidArgument("object " + id.Hex() +
                                   " is still being written: abort it instead");
  }
  if (it->second.pins > 0) {
    it->second.delete_pending = true;  // freed when the last pin goes
    return Status();
  }
  FreeLocked(it);
  return Status();
}

std::vector<ObjectStore::Listed> ObjectStore::List(size_t limit, size_t* total) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Listed> out;
  *total = 0;
  for (auto& [id, e] : objects_) {
    if (!e.sealed || e.delete_pending) continue;
    ++*total;
    if (out.size() < limit) out.push_back({id, e.size, e.in_memory, e.on_disk, e.pins});
  }
  return out;
}

void ObjectStore::ForEachSealed(const std::function<void(const Listed&)>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, e] : objects_) {
    if (e.sealed && !e.delete_pending) fn({id, e.size, e.in_memory, e.on_disk, e.pins});
  }
}

size_t ObjectStore::DeleteIf(const std::function<bool(const ObjectId&)>& match) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ObjectId> doomed;
  for (auto& [id, e] : objects_) {
    if (e.sealed && !e.durable && !e.delete_pending && match(id)) doomed.push_back(id);
  }
  for (const ObjectId& id : doomed) {
    auto it = objects_.find(id);
    if (it->second.pins > 0) {
      it->second.delete_pending = true;
    } else {
      FreeLocked(it);
    }
  }
  return doomed.size();
}

Status ObjectStore::Spill(const ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(id);
  if (it == objects_.end())
    return Status::NotFound("cannot spill object " + id.Hex() + ": it does not exist");
  Entry& e = it->second;
  if (!e.sealed) return Status::InvalidArgument("cannot spill object " + id.Hex() + ": not sealed");
  if (!e.in_memory) return Status();
  if (e.pins > 0)
    return Status::InvalidArgument("cannot spill object " + id.Hex() + ": it is pinned");
  return SpillLocked(id, e);
}

bool ObjectStore::Contains(const ObjectId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(id);
  return it != objects_.end() && it->second.sealed && !it->second.delete_pending;
}

void ObjectStore::SetChangeListener(std::function<void(const ObjectId&)> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  change_listener_ = std::move(listener);
}

ObjectStoreStats ObjectStore::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  ObjectStoreStats s = counters_;
  s.used_bytes = allocator_.used();
  for (auto& [id, e] : objects_) {
    if (e.in_memory)
      s.objects_in_memory++;
    else if (e.on_disk) {
      s.objects_on_disk_only++;
      s.bytes_on_disk_only += e.size;
    }
    if (e.pins > 0) s.pinned_objects++;
  }
  return s;
}

}  // namespace cumulus
