// Runs one KernelLaunch (plan/kernel.h operand conventions) on a stream: cuBLAS for Linear, cuda_kernels.h for the
// rest. Returns once the work is queued; the caller synchronises. CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "exec/backend.h"

namespace shardscope::exec::cuda {

// Throws std::invalid_argument for a missing operand or one smaller than the shapes need (before launching).
void run_cuda_kernel(const KernelLaunch& launch, cublasHandle_t cublas, cudaStream_t stream);

}  // namespace shardscope::exec::cuda
