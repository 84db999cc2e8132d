#include "runtime/node/detect_resources.h"

#include <gtest/gtest.h>

namespace cumulus {
namespace {

TEST(DetectResourcesTest, GpuModelsAreShortNamesForLabels) {
  EXPECT_EQ(GpuModelShortName("NVIDIA H100 80GB HBM3"), "H100");
  EXPECT_EQ(GpuModelShortName("NVIDIA A100-SXM4-40GB"), "A100");
  EXPECT_EQ(GpuModelShortName("Tesla T4"), "T4");
  EXPECT_EQ(GpuModelShortName("Tesla V100-SXM2-16GB"), "V100");
  EXPECT_EQ(GpuModelShortName("NVIDIA GeForce RTX 4090"), "RTX4090");
  EXPECT_EQ(GpuModelShortName("NVIDIA A10G"), "A10G");
  EXPECT_EQ(GpuModelShortName(""), "");
  EXPECT_EQ(GpuModelShortName("NVIDIA"), "");
  // Whatever it finds is a valid label value.
  std::string label = "gpu_model=" + GpuModelShortName("NVIDIA H200 (PCIe)");
  EXPECT_TRUE(ParseLabels(label).ok()) << label;
}

TEST(DetectResourcesTest, AGpuShowsItsModelAndNoGpuShowsNone) {
  DetectedResources d = DetectResources();
  if (d.resources.Has("GPU") || !d.gpu_model.empty()) {
    EXPECT_FALSE(d.gpu_model.empty()) << "a GPU was found but not its model";
    EXPECT_TRUE(ParseLabels("gpu_model=" + d.gpu_model).ok()) << d.gpu_model;
  } else {
    EXPECT_TRUE(d.gpu_model.empty());
  }
}

}  // namespace
}  // namespace cumulus
