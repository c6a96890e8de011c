// How the CPU backend runs 16-bit operands ("convert in the kernel", as issue 21 allows where the BLAS has no
// 16-bit GEMM; Debian's OpenBLAS has sbgemm only on AVX512-BF16 CPUs): each bf16 / fp16 operand is widened into an
// fp32 scratch buffer, the fp32 kernel or collective runs on those, and every staged operand is rounded back to
// nearest even. Inputs come back unchanged (fp32 holds every 16-bit value exactly); outputs are rounded once, as a
// PyTorch op computing in fp32 and storing a bf16 / fp16 result. The scratch is the kernel's own working memory,
// outside the tracked device memory, like a GPU kernel's registers.
#pragma once
#include "exec/exec_layer.h"
#include <cstddef>
#include <vector>

#include "exec/backend.h"

namespace shardscope::exec::cpu {

class Fp32Staging {
 public:
  // Stages the 16-bit members of `operands` in place: they then point at fp32 scratch. Operands that are the same
  // buffer share one scratch (an in-place ReLU stays in place). `float_prefix` (exec/backend.h): how many leading
  // bytes of each 16-bit operand hold 16-bit values, the rest copied as bytes; null: the whole buffer.
  Fp32Staging(std::vector<DeviceBuffer>& operands, const KernelLaunch* launch = nullptr, FloatPrefix float_prefix = nullptr);
  Fp32Staging(const Fp32Staging&) = delete;
  Fp32Staging& operator=(const Fp32Staging&) = delete;

  bool empty() const { return staged_.empty(); }
  // Rounds every staged buffer back into its 16-bit original (call once the kernel is done; not on failure).
  void write_back();

 private:
  struct Staged {
    DeviceBuffer original;
    Bytes float_bytes = 0;  // of the original: 16-bit values, then raw bytes
    std::vector<float> scratch;
  };
  std::vector<Staged> staged_;
};

}  // namespace shardscope::exec::cpu
