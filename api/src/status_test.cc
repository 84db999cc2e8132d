#include "cumulus/status.h"

#include <gtest/gtest.h>

namespace cumulus {
namespace {

TEST(StatusTest, OkHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = Status::NotFound("object ab12 does not exist");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NotFound: object ab12 does not exist");
  EXPECT_EQ(s.WithContext("Get").ToString(), "NotFound: Get: object ab12 does not exist");
  EXPECT_TRUE(Status().WithContext("x").ok());
}

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument(std::to_string(x) + " is odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  CUMULUS_ASSIGN_OR_RETURN(int h, Half(x));
  return Half(h);
}

TEST(ResultTest, ValueOrStatus) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "3 is odd");
  EXPECT_EQ(r.value_or(-1), -1);
}

Status FailsAtStep(int n) {
  for (int i = 0; i < 3; ++i) {
    CUMULUS_RETURN_IF_ERROR(i == n ? Status::Unavailable("step " + std::to_string(i)) : Status());
  }
  return Status();
}

TEST(StatusTest, ReturnIfErrorStopsAtFirstFailure) {
  EXPECT_TRUE(FailsAtStep(5).ok());
  EXPECT_EQ(FailsAtStep(1).message(), "step 1");
}

}  // namespace
}  // namespace cumulus
