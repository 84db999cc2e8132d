#include "runtime/object_store/object_store.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cstring>
#include <vector>

#include "runtime/base/temp_dir.h"

namespace cumulus {
namespace {

ObjectId NewId() { return ObjectId::FromPut(TaskId::ForNormalTask(JobId::FromInt(1)), 1); }

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + seed);
  return v;
}

bool Same(const ObjectBuffer& b, const std::vector<uint8_t>& v) {
  return b.size() == v.size() && (v.empty() || std::memcmp(b.data(), v.data(), v.size()) == 0);
}

class ObjectStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<ObjectStore> Open(uint64_t capacity) {
    ObjectStoreOptions o;
    o.directory = dir_.path() + "/store";
    o.memory_capacity = capacity;
    auto s = ObjectStore::Open(o);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  TempDir dir_;
};

TEST_F(ObjectStoreTest, SealedObjectsAreVisibleAndReadInPlace) {
  auto store = Open(1 << 20);
  ObjectId id = NewId();
  auto data = Pattern(1000, 1);
  auto buf = store->Create(id, data.size());
  ASSERT_TRUE(buf.ok()) << buf.status();
  std::memcpy(buf->data, data.data(), data.size());
  EXPECT_FALSE(store->Contains(id));
  EXPECT_EQ(store->Get(id).status().code(), StatusCode::kUnavailable);
  ASSERT_TRUE(store->Seal(id).ok());
  EXPECT_TRUE(store->Contains(id));
  auto got = store->Get(id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(Same(*got, data));
  EXPECT_EQ(got->data(), buf->data) << "Get must return the object in place, not a copy";
  EXPECT_TRUE(store->region().Contains(got->data(), got->size()));
  EXPECT_EQ(store->Seal(id).code(), StatusCode::kInvalidArgument);
}

TEST_F(ObjectStoreTest, BadRequestsGetClearErrors) {
  auto store = Open(1 << 20);
  ObjectId id = NewId();
  auto missing = store->Get(id);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(id.Hex()), std::string::npos);
  EXPECT_EQ(store->Delete(id).code(), StatusCode::kNotFound);
  ASSERT_TRUE(store->Put(id, "abc", 3).ok());
  Status dup = store->Put(id, "abc", 3);
  EXPECT_EQ(dup.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(dup.message().find("already exists"), std::string::npos);
  auto huge = store->Create(NewId(), 2 << 20);
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(huge.status().message().find("larger than the object store's whole memory tier"),
            std::string::npos)
      << huge.status();
  // A size near 2^64 (as a peer's pull reply or a local client may announce) must not wrap to a
  // small allocation that the writer then overruns.
  for (uint64_t absurd : {UINT64_MAX, UINT64_MAX - 10, UINT64_MAX - 63}) {
    auto wrapped = store->Create(NewId(), absurd);
    EXPECT_EQ(wrapped.status().code(), StatusCode::kResourceExhausted) << absurd;
  }
  EXPECT_EQ(store->Stats().used_bytes, 64u) << "a failed create must not leak memory";
}

TEST_F(ObjectStoreTest, AccountsMemoryExactly) {
  auto store = Open(1 << 20);
  uint64_t expect = 0;
  std::vector<ObjectId> ids;
  for (uint64_t size : {0, 1, 63, 64, 65, 1000, 4096}) {
    ObjectId id = NewId();
    ASSERT_TRUE(store->Put(id, Pattern(size, 0).data(), size).ok());
    expect += size == 0 ? 64 : (size + 63) / 64 * 64;
    ids.push_back(id);
    EXPECT_EQ(store->Stats().used_bytes, expect);
  }
  for (auto& id : ids) ASSERT_TRUE(store->Delete(id).ok());
  EXPECT_EQ(store->Stats().used_bytes, 0u);
}

TEST_F(ObjectStoreTest, FullOfPinnedObjectsIsResourceExhaustedNotAHang) {
  auto store = Open(4 * 1024);
  std::vector<ObjectBuffer> pins;
  for (int i = 0; i < 4; ++i) {
    ObjectId id = NewId();
    ASSERT_TRUE(store->Put(id, Pattern(1024, i).data(), 1024).ok());
    pins.push_back(std::move(*store->Get(id)));
  }
  ObjectId more = NewId();
  auto st = store->Put(more, Pattern(1024, 9).data(), 1024);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("pinned"), std::string::npos) << st;
  pins.pop_back();  // release one pin: its object can now be spilled
  EXPECT_TRUE(store->Put(more, Pattern(1024, 9).data(), 1024).ok());
  EXPECT_EQ(store->Stats().spill_count, 1u);
}

TEST_F(ObjectStoreTest, SpillsLeastRecentlyUsedAndRestoresTransparently) {
  auto store = Open(4 * 1024);
  std::vector<ObjectId> ids;
  std::vector<std::vector<uint8_t>> data;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(NewId());
    data.push_back(Pattern(1024, i));
    ASSERT_TRUE(store->Put(ids[i], data[i].data(), 1024).ok());
  }
  {
    auto touch = store->Get(ids[0]);
    ASSERT_TRUE(touch.ok());
  }  // 0 is now most recent
  ObjectId extra = NewId();
  ASSERT_TRUE(store->Put(extra, Pattern(1024, 7).data(), 1024).ok());
  ObjectStoreStats s = store->Stats();
  EXPECT_EQ(s.spill_count, 1u);
  EXPECT_EQ(s.objects_on_disk_only, 1u);
  // Object 1 was least recently used: reading 0 must not restore anything.
  {
    auto b0 = store->Get(ids[0]);
    ASSERT_TRUE(b0.ok());
    EXPECT_TRUE(Same(*b0, data[0]));
  }
  EXPECT_EQ(store->Stats().restore_count, 0u);
  auto b1 = store->Get(ids[1]);
  ASSERT_TRUE(b1.ok()) << b1.status();
  EXPECT_TRUE(Same(*b1, data[1]));
  EXPECT_EQ(store->Stats().restore_count, 1u);
  EXPECT_LE(store->Stats().used_bytes, 4u * 1024);
}

TEST_F(ObjectStoreTest, DeleteOfAPinnedObjectWaitsForTheLastPin) {
  auto store = Open(1 << 20);
  ObjectId id = NewId();
  auto data = Pattern(5000, 3);
  ASSERT_TRUE(store->Put(id, data.data(), data.size()).ok());
  auto b = store->Get(id);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(store->Delete(id).ok());
  EXPECT_FALSE(store->Contains(id));
  EXPECT_EQ(store->Get(id).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Same(*b, data)) << "a reader keeps its bytes until it releases them";
  EXPECT_GT(store->Stats().used_bytes, 0u);
  b->Reset();
  EXPECT_EQ(store->Stats().used_bytes, 0u);
}

TEST_F(ObjectStoreTest, ReleasingAClientDropsItsPinsAndUnsealedObjects) {
  auto store = Open(1 << 20);
  ObjectId sealed = NewId(), unsealed = NewId();
  ASSERT_TRUE(store->Put(sealed, "x", 1).ok());
  ASSERT_TRUE(store->Pin(sealed, 7).ok());
  ASSERT_TRUE(store->Pin(sealed, 7).ok());
  ASSERT_TRUE(store->Create(unsealed, 100, false, 7).ok());
  EXPECT_EQ(store->Stats().pinned_objects, 1u);
  EXPECT_EQ(store->Unpin(sealed, 8).code(), StatusCode::kInvalidArgument);
  store->ReleaseClient(7);
  EXPECT_EQ(store->Stats().pinned_objects, 0u);
  EXPECT_EQ(store->Get(unsealed).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store->Contains(sealed));
  EXPECT_EQ(store->Stats().used_bytes, 64u);
}

TEST_F(ObjectStoreTest, OnlyTheCreatorSealsOrAborts) {
  auto store = Open(1 << 20);
  ObjectId id = NewId();
  ASSERT_TRUE(store->Create(id, 10, false, 3).ok());
  EXPECT_EQ(store->Seal(id, 4).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Abort(id, 4).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(store->Contains(id));
  EXPECT_TRUE(store->Seal(id, 3).ok());
  EXPECT_TRUE(store->Contains(id));
}

TEST_F(ObjectStoreTest, DurableObjectsSurviveReopenAndSpillCopiesDoNot) {
  ObjectId durable = NewId(), transient = NewId(), spilled = NewId();
  auto d = Pattern(100000, 5);
  {
    auto store = Open(1 << 20);
    ASSERT_TRUE(store->Put(durable, d.data(), d.size(), /*durable=*/true).ok());
    ASSERT_TRUE(store->Put(transient, "t", 1).ok());
    ASSERT_TRUE(store->Put(spilled, "s", 1).ok());
    ASSERT_TRUE(store->Spill(spilled).ok());
  }
  auto store = Open(1 << 20);
  ObjectStoreStats s = store->Stats();
  EXPECT_EQ(s.recovered_durable, 1u);
  EXPECT_EQ(s.dropped_at_start, 1u);
  auto b = store->Get(durable);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(Same(*b, d));
  EXPECT_EQ(store->Get(transient).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->Get(spilled).status().code(), StatusCode::kNotFound);
}

TEST_F(ObjectStoreTest, CorruptSpilledCopyIsObjectLostNotGarbage) {
  auto store = Open(1 << 20);
  ObjectId id = NewId();
  auto data = Pattern(8192, 2);
  ASSERT_TRUE(store->Put(id, data.data(), data.size()).ok());
  ASSERT_TRUE(store->Spill(id).ok());
  std::string bad(data.begin(), data.end());
  bad[100] ^= 1;
  ASSERT_TRUE(store->spill_store().OverwriteBytesForTesting(id, bad).ok());
  auto got = store->Get(id);
  ASSERT_EQ(got.status().code(), StatusCode::kObjectLost) << got.status();
  EXPECT_NE(got.status().message().find(id.Hex()), std::string::npos);
  EXPECT_NE(got.status().message().find("checksum mismatch"), std::string::npos);
  EXPECT_EQ(store->Stats().used_bytes, 0u) << "a failed restore must give its memory back";
  // The store keeps working.
  ObjectId other = NewId();
  EXPECT_TRUE(store->Put(other, "ok", 2).ok());
}

// The free-disk reserve (ObjectStoreOptions::min_free_disk_bytes, 256 MiB by default), without
// a small disk to fill: a reserve larger than what the test's directory has free refuses every
// write to the disk tier, as a full disk would. Needs no mount and no root, unlike the tmpfs
// test below.
TEST_F(ObjectStoreTest, SpillingIntoTheDiskReserveIsRefusedClearlyAndNothingIsLost) {
  struct statvfs fs {};
  ASSERT_EQ(statvfs(dir_.path().c_str(), &fs), 0) << std::strerror(errno);
  uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  std::unique_ptr<ObjectStore> store;
  ObjectStoreOptions o;
  o.directory = dir_.path() + "/store";
  o.memory_capacity = 4 << 20;
  // Far above what is free, so that space freed by others meanwhile does not matter.
  o.min_free_disk_bytes = free_bytes + (1ull << 40);
  {
    auto s = ObjectStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status();
    store = std::move(*s);
  }
  // Fill the memory tier; the object that needs a spill is refused, saying why.
  std::vector<std::pair<ObjectId, std::vector<uint8_t>>> kept;
  Status failure;
  ObjectId refused;
  for (int i = 0; i < 16 && failure.ok(); ++i) {
    ObjectId id = NewId();
    auto data = Pattern(1 << 20, static_cast<uint8_t>(i));
    failure = store->Put(id, data.data(), data.size());
    if (failure.ok())
      kept.emplace_back(id, std::move(data));
    else
      refused = id;
  }
  ASSERT_FALSE(failure.ok()) << "16 MiB went into a 4 MiB store with every disk write refused";
  EXPECT_EQ(failure.code(), StatusCode::kResourceExhausted) << failure;
  for (const std::string& says : {std::string("cannot make room for object ") + refused.Hex(),
                                  std::string("not enough disk space"), o.directory,
                                  std::to_string(o.min_free_disk_bytes) + " kept in reserve"}) {
    EXPECT_NE(failure.message().find(says), std::string::npos)
        << "expected '" << says << "' in: " << failure;
  }
  EXPECT_FALSE(store->Contains(refused));
  ASSERT_GE(kept.size(), 2u);
  ObjectStoreStats stats = store->Stats();
  EXPECT_EQ(stats.objects_on_disk_only, 0u);
  EXPECT_EQ(stats.spill_count, 0u) << "nothing may have been written past the reserve";
  // An explicit spill and a durable object's seal are refused the same way.
  Status spill = store->Spill(kept[0].first);
  EXPECT_EQ(spill.code(), StatusCode::kResourceExhausted) << spill;
  EXPECT_NE(spill.message().find("kept in reserve"), std::string::npos) << spill;
  ASSERT_TRUE(store->Delete(kept.back().first).ok());
  kept.pop_back();
  ObjectId durable = NewId();
  Status sealed = store->Put(durable, "keep me", 7, /*durable=*/true);
  EXPECT_EQ(sealed.code(), StatusCode::kResourceExhausted) << sealed;
  EXPECT_NE(sealed.message().find("kept in reserve"), std::string::npos) << sealed;
  EXPECT_FALSE(store->Contains(durable));
  // Nothing is lost: every object the store took is still there, intact, and the store goes on
  // taking what fits in memory.
  for (auto& [id, data] : kept) {
    auto b = store->Get(id);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_TRUE(Same(*b, data));
  }
  auto data = Pattern(1 << 20, 99);
  EXPECT_TRUE(store->Put(NewId(), data.data(), data.size()).ok());
}

// A real full disk: a small tmpfs mounted under the test's directory. Needs CAP_SYS_ADMIN.
TEST_F(ObjectStoreTest, FullDiskIsAClearErrorAndTheStoreStaysUsable) {
  std::string mnt = dir_.path() + "/small-disk";
  std::filesystem::create_directories(mnt);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=24m") != 0) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (" << std::strerror(errno)
                 << "); this test needs root or CAP_SYS_ADMIN";
  }
  struct Unmount {
    std::string path;
    ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
  } unmount{mnt};
  std::unique_ptr<ObjectStore> store;
  {
    ObjectStoreOptions o;
    o.directory = mnt + "/store";
    o.memory_capacity = 4 << 20;
    o.min_free_disk_bytes = 1 << 20;
    auto s = ObjectStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status();
    store = std::move(*s);
  }
  std::vector<std::pair<ObjectId, std::vector<uint8_t>>> kept;
  Status failure;
  ObjectId refused;
  for (int i = 0; i < 200 && failure.ok(); ++i) {
    ObjectId id = NewId();
    auto data = Pattern(1 << 20, static_cast<uint8_t>(i));
    failure = store->Put(id, data.data(), data.size());
    if (failure.ok())
      kept.emplace_back(id, std::move(data));
    else
      refused = id;
  }
  ASSERT_FALSE(failure.ok()) << "200 MiB never filled a 24 MiB disk";
  EXPECT_EQ(failure.code(), StatusCode::kResourceExhausted) << failure;
  EXPECT_NE(failure.message().find("not enough disk space"), std::string::npos) << failure;
  EXPECT_NE(failure.message().find(mnt), std::string::npos)
      << "the error names the disk: " << failure;
  EXPECT_FALSE(store->Contains(refused));
  ASSERT_GT(kept.size(), 8u);
  // Free two objects that only live in memory (the most recent ones), then read everything back:
  // restoring spilled objects now evicts copies that are already on disk. Nothing is lost.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(store->Delete(kept.back().first).ok());
    kept.pop_back();
  }
  for (auto& [id, data] : kept) {
    auto b = store->Get(id);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_TRUE(Same(*b, data));
  }
  EXPECT_GT(store->Stats().restore_count, 0u);
  EXPECT_TRUE(store->Put(NewId(), "fits", 4).ok());
}

}  // namespace
}  // namespace cumulus
