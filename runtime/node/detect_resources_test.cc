#include "runtime/node/detect_resources.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <string>

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

bool Mapped(const std::string& lib) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(lib) != std::string::npos) return true;
  }
  return false;
}

// Whether the process started with it: read before main, once the loader has mapped what the
// program links.
const bool kCudartMappedAtStart = Mapped("libcudart");

// CUDA's runtime is not linked: the first look for GPUs loads it (runtime/base/cuda_libs.h), or
// says why it could not.
TEST(DetectResourcesTest, CudasRuntimeIsLoadedByTheFirstLookForGpus) {
  EXPECT_FALSE(kCudartMappedAtStart) << "libcudart is mapped before anything looked for GPUs";
  DetectedResources d = DetectResources();
  std::cout << "gpu note: " << d.gpu_note << "\n";
  if (d.gpu_note == "built without CUDA") GTEST_SKIP() << "this build has no CUDA";
  if (d.gpu_note.find("cannot be loaded") != std::string::npos) {
    EXPECT_NE(d.gpu_note.find("libcudart.so."), std::string::npos) << d.gpu_note;
    EXPECT_FALSE(Mapped("libcudart"));
  } else {
    EXPECT_TRUE(Mapped("libcudart")) << d.gpu_note;
  }
}

}  // namespace
}  // namespace cumulus
