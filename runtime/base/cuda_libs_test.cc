#include "runtime/base/cuda_libs.h"

#include <gtest/gtest.h>

#include <cstring>

namespace cumulus {
namespace {

// Every function of the tables resolves in the libraries this build found (a GPU is not needed
// to load them, nor to call their error strings).
#if CUMULUS_HAVE_CUDA
TEST(CudaLibsTest, TheCudaRuntimeLoadsWithEveryFunctionCumulusCalls) {
  std::string why;
  const CudaRuntimeApi* cuda = CudaRuntime(&why);
  ASSERT_NE(cuda, nullptr) << why;
  EXPECT_STREQ(cuda->cudaGetErrorString(cudaSuccess), "no error");
  EXPECT_EQ(CudaRuntime(), cuda) << "loaded once";
}
#endif

#if CUMULUS_HAVE_NCCL
TEST(CudaLibsTest, NcclLoadsWithEveryFunctionCumulusCalls) {
  std::string why;
  const NcclApi* nccl = Nccl(&why);
  ASSERT_NE(nccl, nullptr) << why;
  EXPECT_STREQ(nccl->ncclGetErrorString(ncclSuccess), "no error");
}
#endif

#if !CUMULUS_HAVE_CUDA
TEST(CudaLibsTest, BuiltWithoutCuda) { GTEST_SKIP() << "this build has no CUDA"; }
#endif

}  // namespace
}  // namespace cumulus
