#include "runtime/object_store/spill_store.h"

#include <gtest/gtest.h>

#include <vector>

#include "runtime/base/temp_dir.h"

namespace cumulus {
namespace {

ObjectId NewId() { return ObjectId::FromPut(TaskId::ForNormalTask(JobId::FromInt(1)), 1); }

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + seed);
  return v;
}

class SpillStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    SpillStoreOptions o;
    o.path = dir_.path() + "/db";
    auto s = SpillStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }
  Status ReadInto(const ObjectId& id, std::vector<uint8_t>* out) {
    return store_->Read(id, [&](uint64_t size) -> Result<uint8_t*> {
      out->resize(size);
      return out->data();
    });
  }
  TempDir dir_;
  std::unique_ptr<SpillStore> store_;
};

TEST_F(SpillStoreTest, RoundTripsSmallAndBlobSizedValues) {
  for (size_t size : {0, 1, 100, 4096, 1 << 20}) {
    ObjectId id = NewId();
    auto data = Pattern(size, 7);
    ASSERT_TRUE(store_->Write(id, data.data(), size, size % 2, "inc", 1).ok());
    std::vector<uint8_t> back;
    ASSERT_TRUE(ReadInto(id, &back).ok());
    EXPECT_EQ(back, data) << "size " << size;
  }
}

TEST_F(SpillStoreTest, CorruptBytesAreObjectLostNamingTheChecksum) {
  ObjectId id = NewId();
  auto data = Pattern(10000, 3);
  ASSERT_TRUE(store_->Write(id, data.data(), data.size(), false, "inc", 1).ok());
  std::string tampered(reinterpret_cast<const char*>(data.data()), data.size());
  tampered[5000] ^= 0x40;
  ASSERT_TRUE(store_->OverwriteBytesForTesting(id, tampered).ok());
  std::vector<uint8_t> scratch;
  Status st = ReadInto(id, &scratch);
  EXPECT_EQ(st.code(), StatusCode::kObjectLost);
  EXPECT_NE(st.message().find(id.Hex()), std::string::npos) << st;
  EXPECT_NE(st.message().find("checksum mismatch"), std::string::npos) << st;

  std::string truncated = tampered.substr(0, 10);
  ASSERT_TRUE(store_->OverwriteBytesForTesting(id, truncated).ok());
  std::vector<uint8_t> back;
  EXPECT_EQ(ReadInto(id, &back).code(), StatusCode::kObjectLost);
}

TEST_F(SpillStoreTest, UnknownIsNotFoundAndDeleteRemoves) {
  ObjectId id = NewId();
  std::vector<uint8_t> back;
  EXPECT_EQ(ReadInto(id, &back).code(), StatusCode::kNotFound);
  auto data = Pattern(64, 1);
  ASSERT_TRUE(store_->Write(id, data.data(), data.size(), true, "inc", 1).ok());
  int seen = 0;
  ASSERT_TRUE(store_
                  ->ForEach([&](const StoredObjectInfo& info) {
                    ++seen;
                    EXPECT_EQ(info.id, id);
                    EXPECT_TRUE(info.durable);
                    EXPECT_EQ(info.size, 64u);
                    EXPECT_EQ(info.incarnation, "inc");
                  })
                  .ok());
  EXPECT_EQ(seen, 1);
  ASSERT_TRUE(store_->Delete(id).ok());
  EXPECT_EQ(ReadInto(id, &back).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace cumulus
