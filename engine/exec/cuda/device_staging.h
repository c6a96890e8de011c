// Mixed precision on the CUDA backend, as on the CPU (exec/cpu/fp32_staging.h): each bf16 / fp16 operand of a
// kernel or collective is widened into fp32 device scratch, the fp32 kernel (cuBLAS SGEMM, the kernels of
// cuda_kernels.h) or NCCL's fp32 collective runs on it, and what it wrote is rounded back to nearest even. The
// scratch is cudaMalloc'd beside the caching allocator, so the measured bytes stay the plan's; the device's own
// count (cudaMemGetInfo, the trace's device line) includes it. CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "exec/backend.h"

namespace shardscope::exec::cuda {

// One growing device buffer for one stream's staged operands (reused from call to call; the stream orders them).
class DeviceScratch {
 public:
  DeviceScratch() = default;
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  ~DeviceScratch();
  // At least `floats` fp32 elements; grows after the stream's earlier work on the old buffer is done.
  float* reserve(std::size_t floats, cudaStream_t stream);

 private:
  float* data_ = nullptr;
  std::size_t capacity_ = 0;
};

class DeviceFp32Staging {
 public:
  // Points the 16-bit members of `operands` at fp32 copies in `scratch` (operands that are the same buffer share
  // one), widened on `stream`. `float_prefix` (exec/backend.h, as the CPU's exec/cpu/fp32_staging.h): how many
  // leading bytes of each 16-bit operand hold 16-bit values, the rest copied as bytes; null: the whole buffer.
  DeviceFp32Staging(std::vector<DeviceBuffer>& operands, DeviceScratch& scratch, cudaStream_t stream,
                    const KernelLaunch* launch = nullptr, FloatPrefix float_prefix = nullptr);
  // Rounds every staged copy back into its 16-bit original, on the stream (the caller synchronises).
  void write_back();

 private:
  struct Staged {
    DeviceBuffer original;
    Bytes float_bytes = 0;  // of the original: 16-bit values, then raw bytes
    float* copy = nullptr;
  };
  std::vector<Staged> staged_;
  cudaStream_t stream_;
};

}  // namespace shardscope::exec::cuda
