// OpenBLAS is opened by the first GEMM, not when the program starts (exec/cpu/blas_gemm.cpp): loading it starts its
// thread pool, whose idle worker spins for about 0.1 s of CPU, in every command. This program holds this one test, so
// nothing has run a GEMM before it: OpenBLAS open at its start means something linked it.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "exec/cpu/blas_gemm.h"

namespace shardscope::exec::cpu {
namespace {

bool openblas_is_open() { return dlopen("libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD) != nullptr; }

TEST(BlasLoading, OpenBlasIsOpenedByTheFirstGemm) {
  ASSERT_FALSE(openblas_is_open()) << "OpenBLAS was loaded at start-up: is it linked again?";
  // [1 2; 3 4] · [0 1; 1 0] = [2 1; 4 3]
  const float a[] = {1, 2, 3, 4}, b[] = {0, 1, 1, 0};
  float c[4] = {};
  gemm_f32(Transpose::No, Transpose::No, 2, 2, 2, 1.0F, a, b, 0.0F, c);
  EXPECT_EQ(c[0], 2.0F);
  EXPECT_EQ(c[1], 1.0F);
  EXPECT_EQ(c[2], 4.0F);
  EXPECT_EQ(c[3], 3.0F);
  EXPECT_TRUE(openblas_is_open());
  set_blas_thread_count(1);
  EXPECT_EQ(blas_thread_count(), 1);
}

}  // namespace
}  // namespace shardscope::exec::cpu
