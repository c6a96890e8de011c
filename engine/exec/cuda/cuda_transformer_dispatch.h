// The GPT-2 kernels (plan/kernel.h: EmbeddingForward … GptBlockBackward) on the CUDA backend: operands unpacked and
// checked as on the CPU (exec/cpu/transformer_dispatch.h), GEMMs on cuBLAS, the rest transformer_kernels.h. A
// block keeps exactly model/gpt_block_layout.h's tensors in the plan's two saved buffers, as the CPU kernel does,
// so the measured memory is the plan's on both backends. CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "exec/backend.h"

namespace shardscope::exec::cuda {

// Launches on `stream` (the caller synchronises); throws std::invalid_argument on a missing or short operand.
void run_cuda_transformer_kernel(const KernelLaunch& launch, cublasHandle_t cublas, cudaStream_t stream);

}  // namespace shardscope::exec::cuda
