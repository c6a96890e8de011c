// Row-major fp32 GEMM on cuBLAS (column-major), with the same arguments as exec/cpu/blas_gemm.h's gemm_f32, so the
// Linear kernels read the same on both backends. CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include <cublas_v2.h>

namespace shardscope::exec::cuda {

// C (m×n) = alpha · op(A) · op(B) + beta · C, every matrix densely packed row-major; op(A) is m×k, op(B) k×n.
void gemm_row_major(cublasHandle_t handle, bool transpose_a, bool transpose_b, int m, int n, int k, float alpha,
                    const float* a, const float* b, float beta, float* c);

// The same over `batch` matrices at fixed strides (elements) with explicit stored row lengths (lda, ldb, ldc):
// views into a larger row-major tensor, e.g. one attention head's columns of the fused Q, K, V rows.
struct StridedMatrix {
  const float* data;
  int ld;
  long long stride;
};
void gemm_row_major_batched(cublasHandle_t handle, bool transpose_a, bool transpose_b, int m, int n, int k, float alpha,
                            StridedMatrix a, StridedMatrix b, float beta, float* c, int ldc, long long stride_c,
                            int batch);

}  // namespace shardscope::exec::cuda
