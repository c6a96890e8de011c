// gemm_row_major: a row-major matrix read as column-major is its transpose, so row-major C = op(A)·op(B) is
// column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: cuBLAS gets B first, then A, with n and m swapped. Each stored matrix keeps its
// own transpose flag, and its leading dimension is its stored row length (as in blas_gemm.cpp).
#include "exec/cuda/cublas_gemm.h"

#include <stdexcept>
#include <string>

#include "exec/cuda/cuda_check.h"

namespace shardscope::exec::cuda {

void gemm_row_major(cublasHandle_t handle, bool transpose_a, bool transpose_b, int m, int n, int k, float alpha,
                    const float* a, const float* b, float beta, float* c) {
  if (m < 0 || n < 0 || k < 0)
    throw std::invalid_argument("gemm_row_major: negative dimension (m=" + std::to_string(m) + ", n=" +
                                std::to_string(n) + ", k=" + std::to_string(k) + ")");
  if (m == 0 || n == 0) return;
  const int lda = transpose_a ? m : k;  // stored row length of A (m×k, or k×m when transposed)
  const int ldb = transpose_b ? k : n;  // ... of B (k×n, or n×k when transposed)
  check_cublas(cublasSgemm(handle, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, n,
                           m, k, &alpha, b, ldb > 0 ? ldb : 1, a, lda > 0 ? lda : 1, &beta, c, n),
               "cublasSgemm");
}

void gemm_row_major_batched(cublasHandle_t handle, bool transpose_a, bool transpose_b, int m, int n, int k, float alpha,
                            StridedMatrix a, StridedMatrix b, float beta, float* c, int ldc, long long stride_c,
                            int batch) {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0)
    throw std::invalid_argument("gemm_row_major_batched: dimensions must be positive (m=" + std::to_string(m) + ", n=" +
                                std::to_string(n) + ", k=" + std::to_string(k) + ", batch=" + std::to_string(batch) + ")");
  check_cublas(cublasSgemmStridedBatched(handle, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                         transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b.data, b.ld, b.stride,
                                         a.data, a.ld, a.stride, &beta, c, ldc, stride_c, batch),
               "cublasSgemmStridedBatched");
}

}  // namespace shardscope::exec::cuda
