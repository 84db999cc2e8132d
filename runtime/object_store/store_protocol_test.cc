#include "runtime/object_store/store_protocol.h"

#include <gtest/gtest.h>

namespace cumulus {
namespace {

TEST(StoreProtocolTest, ObjectIdsMustHaveTheRightLength) {
  ObjectId id = ObjectId::FromPut(TaskId::ForNormalTask(JobId::FromInt(3)), 4);
  auto back = store_protocol::ParseObjectId(store_protocol::IdBytes(id));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, id);
  uint8_t short_id[5] = {1, 2, 3, 4, 5};
  auto bad = store_protocol::ParseObjectId(capnp::Data::Reader(short_id, 5));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cumulus
