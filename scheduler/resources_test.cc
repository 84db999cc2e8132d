#include "scheduler/resources.h"

#include <gtest/gtest.h>

#include <climits>
#include <limits>

namespace cumulus {
namespace {

TEST(ResourceSetTest, ParsesUnitsAndSizes) {
  auto r = ResourceSet::Parse("CPU=8,GPU=2,memory=32G,custom=4,TPU=0.5");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->Get("CPU"), 8);
  EXPECT_EQ(r->Get("GPU"), 2);
  EXPECT_EQ(r->Get("memory"), 32.0 * (1ull << 30));
  EXPECT_EQ(r->Get("custom"), 4);
  EXPECT_EQ(r->Get("TPU"), 0.5);
  EXPECT_EQ(r->Get("absent"), 0);
  EXPECT_TRUE(ResourceSet::Parse("").ok());
}

TEST(ResourceSetTest, RejectsMalformedSpecsWithTheCulprit) {
  for (const char* bad : {"CPU", "CPU=-1", "CPU=abc", "=3", "CPU=1,CPU=2", "C PU=1", "GPU=1e400",
                          "memory=12Q", "CPU=1,"}) {
    auto r = ResourceSet::Parse(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(ResourceSet::Parse("CPU=x").status().message().find("'x'"), std::string::npos);
}

TEST(ResourceSetTest, FractionsAddUpExactly) {
  ResourceSet node;
  node.Set("GPU", 1);
  ResourceSet quarter;
  quarter.Set("GPU", 0.25);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(node.Contains(quarter));
    node.Subtract(quarter);
  }
  EXPECT_FALSE(node.Contains(quarter));
  EXPECT_FALSE(node.Has("GPU"));
  node.Add(quarter);
  EXPECT_EQ(node.Get("GPU"), 0.25);
}

TEST(ResourceSetTest, OverrideAndToString) {
  ResourceSet detected = *ResourceSet::Parse("CPU=2,memory=1024");
  detected.Override(*ResourceSet::Parse("GPU=2,CPU=8"));
  EXPECT_EQ(detected.ToString(), "CPU=8,GPU=2,memory=1024");
  detected.Override(*ResourceSet::Parse("CPU=0"));  // a head that runs no tasks
  EXPECT_EQ(detected.ToString(), "GPU=2,memory=1024");
  EXPECT_FALSE(ResourceSet::Parse("CPU=0,CPU=4").ok());
}

TEST(ResourceSetTest, TotalsSaturateInsteadOfOverflowing) {
  ResourceSet big = *ResourceSet::Parse("memory=512G");
  ResourceSet total;
  for (int i = 0; i < 5000; ++i) total.Add(big);
  EXPECT_EQ(total.GetUnits("memory"), INT64_MAX);
}

TEST(LabelsTest, ParsesAndRejects) {
  auto l = ParseLabels("site=onprem,gpu_type=A100");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->at("site"), "onprem");
  EXPECT_EQ(LabelsToString(*l), "gpu_type=A100,site=onprem");
  EXPECT_FALSE(ParseLabels("site").ok());
  EXPECT_FALSE(ParseLabels("site=a b").ok());
  EXPECT_FALSE(ParseLabels("site=a,site=b").ok());
}

TEST(ResourceSetTest, EveryAmountIsCheckedTheSameWay) {
  EXPECT_TRUE(ResourceSet::CheckAmount("GPU", 0).ok());
  EXPECT_TRUE(ResourceSet::CheckAmount("GPU", 0.0001).ok());
  EXPECT_TRUE(ResourceSet::CheckAmount("memory", ResourceSet::kMaxAmount).ok());
  for (double bad :
       {-1.0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::quiet_NaN(), 1e15, 1e30, 0.00001}) {
    Status st = ResourceSet::CheckAmount("GPU", bad);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("resource GPU"), std::string::npos) << st;
  }
  // The command line says the same as the API.
  auto parsed = ResourceSet::Parse("GPU=1000000000000000");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(),
            "resource GPU must be a number from 0 to 9e+14, got '1000000000000000'");
  EXPECT_EQ(ResourceSet::CheckAmount("GPU", 1e15).message(),
            "resource GPU must be a number from 0 to 9e+14, got 1e+15");
  EXPECT_FALSE(ResourceSet::Parse("GPU=0.00001").ok());
  // Text that is not a number at all names the text as given.
  EXPECT_EQ(ResourceSet::Parse("CPU=lots").status().message(),
            "resource CPU must be a number from 0 to 9e+14, got 'lots'");
  EXPECT_EQ(ResourceSet::Parse("memory=12Q").status().message(),
            "resource memory must be a number of bytes (or K/M/G/T) from 0 to 9e+14, got '12Q'");
  EXPECT_EQ(ResourceSet::Parse("memory=1.5K")->Get("memory"), 1536);
  EXPECT_EQ(ResourceSet::Parse("memory=2GB")->Get("memory"), 2.0 * (1 << 30));
  for (const char* bad : {"CPU=nan", "CPU=inf", "CPU=0x10", "CPU= 1", "CPU=+1", "memory=G"}) {
    EXPECT_FALSE(ResourceSet::Parse(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace cumulus
