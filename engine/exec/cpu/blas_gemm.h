// Single-precision GEMM on row-major matrices through OpenBLAS's cblas_sgemm, so no other file includes cblas.h.
// Knows nothing of layers or plans.
#pragma once
#include "exec/exec_layer.h"

namespace shardscope::exec::cpu {

enum class Transpose { No, Yes };

// C[m×n] = alpha · op(A)[m×k] · op(B)[k×n] + beta · C, all row-major and densely packed (A is m×k, or k×m when
// transposed; B is k×n, or n×k when transposed). C must not overlap A or B. beta = 0 ignores C's old contents.
void gemm_f32(Transpose transpose_a, Transpose transpose_b, int m, int n, int k, float alpha, const float* a,
              const float* b, float beta, float* c);

// The same on strided row-major matrices (views into wider rows, e.g. one head's columns of a fused Q, K, V):
// lda, ldb, ldc are the stored row lengths of A, B and C as stored (before any transpose).
void gemm_f32_strided(Transpose transpose_a, Transpose transpose_b, int m, int n, int k, float alpha, const float* a,
                      int lda, const float* b, int ldb, float beta, float* c, int ldc);

// OpenBLAS's own thread pool size. With several rank threads calling GEMMs at once, 1 avoids oversubscription.
void set_blas_thread_count(int threads);
int blas_thread_count();

}  // namespace shardscope::exec::cpu
