// cblas_sgemm behind gemm_f32; the only file that includes OpenBLAS's cblas.h. OpenBLAS is opened with dlopen on the
// first GEMM, not linked: loading it starts its thread pool, whose idle worker spins (sched_yield) for about 0.1 s of
// CPU after start-up, and its relocations cost ~14 ms, in every command, though only CPU execution uses it.
#include "exec/cpu/blas_gemm.h"

#include <cblas.h>
#include <dlfcn.h>

#include <stdexcept>
#include <string>

namespace shardscope::exec::cpu {

namespace {

// The three entry points we use, resolved once (a function-local static: thread-safe initialisation).
struct OpenBlas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&openblas_set_num_threads) set_num_threads = nullptr;
  decltype(&openblas_get_num_threads) get_num_threads = nullptr;
};

void* open_first(const char* const* paths, std::string& errors) {
  for (const char* const* path = paths; *path; ++path) {
    if (void* library = dlopen(*path, RTLD_NOW | RTLD_LOCAL)) return library;
    const char* error = dlerror();
    errors += std::string("\n  ") + *path + ": " + (error ? error : "unknown dlopen error");
  }
  return nullptr;
}

OpenBlas load_openblas() {
  // The runtime name first (Debian's libopenblas0, through its alternatives link), then the library CMake found.
  static const char* const kPaths[] = {"libopenblas.so.0", SHARDSCOPE_OPENBLAS_LIBRARY, nullptr};
  std::string errors;
  void* library = open_first(kPaths, errors);
  if (!library)
    throw std::runtime_error("the CPU backend needs OpenBLAS for its matrix products, and it could not be opened "
                             "(install Debian's libopenblas0):" + errors);
  OpenBlas blas;
  blas.sgemm = reinterpret_cast<decltype(blas.sgemm)>(dlsym(library, "cblas_sgemm"));
  blas.set_num_threads = reinterpret_cast<decltype(blas.set_num_threads)>(dlsym(library, "openblas_set_num_threads"));
  blas.get_num_threads = reinterpret_cast<decltype(blas.get_num_threads)>(dlsym(library, "openblas_get_num_threads"));
  if (!blas.sgemm || !blas.set_num_threads || !blas.get_num_threads)
    throw std::runtime_error("the OpenBLAS library opened lacks cblas_sgemm or openblas_{set,get}_num_threads");
  return blas;
}

const OpenBlas& openblas() {
  static const OpenBlas blas = load_openblas();
  return blas;
}

}  // namespace

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
  openblas().sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a,
                   lda > 0 ? lda : 1, b, ldb > 0 ? ldb : 1, beta, c, n);
}

void gemm_f32_strided(Transpose transpose_a, Transpose transpose_b, int m, int n, int k, float alpha, const float* a,
                      int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  if (m < 0 || n < 0 || k < 0)
    throw std::invalid_argument("gemm_f32_strided: negative dimension (m=" + std::to_string(m) + ", n=" +
                                std::to_string(n) + ", k=" + std::to_string(k) + ")");
  if (m == 0 || n == 0) return;
  openblas().sgemm(CblasRowMajor, transpose_a == Transpose::Yes ? CblasTrans : CblasNoTrans,
                   transpose_b == Transpose::Yes ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
                   ldc);
}

void set_blas_thread_count(int threads) {
  if (threads < 1) throw std::invalid_argument("set_blas_thread_count: need at least 1 thread");
  openblas().set_num_threads(threads);
}

int blas_thread_count() { return openblas().get_num_threads(); }

}  // namespace shardscope::exec::cpu
