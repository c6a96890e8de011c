// Row-major fp32 GEMM on cuBLAS (column-major), with the same arguments as exec/cpu/blas_gemm.h's gemm_f32, so the
// Linear kernels read the same on both backends. CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include <cublas_v2.h>

namespace shardscope::exec::cuda {

// C (m×n) = alpha · op(A) · op(B) + beta · C, every matrix densely packed row-major; op(A) is m×k, op(B) k×n.
void gemm_row_major(cublasHandle_t handle, bool transpose_a, bool transpose_b, int m, int n, int k, float alpha,
                    const float* a, const float* b, float beta, float* c);

}  // namespace shardscope::exec::cuda
