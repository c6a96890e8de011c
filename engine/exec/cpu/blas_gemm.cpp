// cblas_sgemm behind gemm_f32; the only file that includes OpenBLAS's cblas.h.
#include "exec/cpu/blas_gemm.h"

#include <cblas.h>

#include <stdexcept>
#include <string>

namespace shardscope::exec::cpu {

void gemm_f32(Transpose transpose_a, Transpose transpose_b, int m, int n, int k, float alpha, const float* a,
              const float* b, float beta, float* c) {
  if (m < 0 || n < 0 || k < 0) {
    throw std::invalid_argument("gemm_f32: negative dimension (m=" + std::to_string(m) + ", n=" + std::to_string(n) +
                                ", k=" + std::to_string(k) + ")");
  }
  if (m == 0 || n == 0) return;
  const bool ta = transpose_a == Transpose::Yes;
  const bool tb = transpose_b == Transpose::Yes;
  // Leading dimensions of densely packed row-major storage: the stored row length.
  const int lda = ta ? m : k;
  const int ldb = tb ? k : n;
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a,
              lda > 0 ? lda : 1, b, ldb > 0 ? ldb : 1, beta, c, n);
}

void gemm_f32_strided(Transpose transpose_a, Transpose transpose_b, int m, int n, int k, float alpha, const float* a,
                      int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  if (m < 0 || n < 0 || k < 0)
    throw std::invalid_argument("gemm_f32_strided: negative dimension (m=" + std::to_string(m) + ", n=" +
                                std::to_string(n) + ", k=" + std::to_string(k) + ")");
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, transpose_a == Transpose::Yes ? CblasTrans : CblasNoTrans,
              transpose_b == Transpose::Yes ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void set_blas_thread_count(int threads) {
  if (threads < 1) throw std::invalid_argument("set_blas_thread_count: need at least 1 thread");
  openblas_set_num_threads(threads);
}

int blas_thread_count() { return openblas_get_num_threads(); }

}  // namespace shardscope::exec::cpu
